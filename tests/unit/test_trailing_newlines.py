"""A pattern ending in ``$`` also matches before a final newline under ``re.match``; every
validator that guards an identifier must refuse ``value + "\\n"`` as it refuses any other
character outside the rule (each case here was accepted before they used fullmatch)."""

from __future__ import annotations

from typing import cast

import pytest
from memory_server.admin.errors import AdminError
from memory_server.admin.http import AdminApi
from memory_server.admin.operators import _check_identity, _check_slug
from memory_server.edge.routing import Edge
from memory_server.protocol.endpoint import McpRoute


def test_a_workspace_slug_with_a_trailing_newline_is_refused() -> None:
    _check_slug("acme")
    with pytest.raises(AdminError, match="slug"):
        _check_slug("acme\n")


def test_a_subject_with_a_trailing_newline_is_refused() -> None:
    _check_identity("alice-sub", "alice")
    with pytest.raises(AdminError, match="subject"):
        _check_identity("alice-sub\n", "alice")


def test_a_path_with_a_trailing_newline_is_not_a_workspace_endpoint() -> None:
    # The edge answers 404 before anything behind it (McpRoute, AdminApi) is reached.
    edge = Edge(mcp=cast(McpRoute, None), admin=cast(AdminApi, None))
    for path in ("/w/acme/mcp\n", "/w/acme/admin/members\n", "/w/acme/admin\n"):
        answer = edge.route({"rawPath": path, "requestContext": {"http": {"method": "POST"}}})
        assert answer["statusCode"] == 404, path
