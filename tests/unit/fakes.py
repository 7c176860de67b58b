"""Helpers shared by the unit tests: a caller with no database behind it, and the
message of an ``invalid_argument`` refusal."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from memory_server.domain.caller import Caller
from memory_server.domain.contexts import parse_context
from memory_server.domain.errors import ToolError


def alice_caller(*grants: str) -> Caller:
    """Alice, a person with a personal namespace in workspace ``acme`` (fresh ids),
    holding ``grants``, in the workspace context."""
    return Caller(
        workspace_id=uuid.uuid4(),
        workspace="acme",
        principal_id=uuid.uuid4(),
        principal_kind="person",
        handle="alice",
        grants=frozenset(grants),  # type: ignore[arg-type]
        context=parse_context(None),
        personal_namespace=True,
    )


def refusal_message(call: Callable[..., Any], *args: Any) -> str:
    """The message of the ``invalid_argument`` error ``call(*args)`` must raise."""
    with pytest.raises(ToolError) as caught:
        call(*args)
    assert caught.value.code == "invalid_argument"
    return caught.value.message
