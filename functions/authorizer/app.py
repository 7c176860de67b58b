"""Lambda REQUEST authorizer of the HTTP API (payload 2.0, simple responses).

Thin: ``memory_server.signin.authorizer`` decides; this builds it once per container
(the key set is fetched during init, off the request path) and logs refusals. Outside
the VPC: it reaches the pool's ``jwks_uri`` directly (it makes no AWS call).
"""

from __future__ import annotations

import logging
from typing import Any

from memory_server.signin.authorizer import build_authorizer

logging.getLogger().setLevel(logging.INFO)

authorizer = build_authorizer()
authorizer.keys.prefetch()  # at init; a failure here is retried on the first request


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return authorizer.authorize(event, context)
