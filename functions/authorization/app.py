"""The authorization function: the product's ``/authorize`` in front of the user pool's.

Thin: ``memory_server.signin.authorization`` checks the request (a registered client and
redirect URI, PKCE with S256), shows the consent page for a redirect that leaves the
person's machine, and hands the request on to the pool's authorize endpoint; it answers
``POST /token`` and ``POST /revoke`` too (``memory_server.signin.token``). Outside the
VPC; it may read app clients of the pool and its one secret (the consent key, read at
init), nothing else.
"""

from __future__ import annotations

import logging
from typing import Any

from memory_server.edge import aws_config
from memory_server.signin.authorization import build_authorization

logging.getLogger().setLevel(logging.INFO)

authorization = build_authorization(secret=aws_config.consent_secret())


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return authorization.route(event, context)
