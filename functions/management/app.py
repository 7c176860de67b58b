"""The management function: the user pool's app clients, and nothing else writes them.

Thin: ``memory_server.signin.management`` answers RFC 8414 metadata and RFC 7591
registration (HTTP API), the admin API's agent-key calls (direct invocation from the
MCP function) and the sweep of unused registered clients (schedule, every 15
minutes). Outside the VPC, so it reaches Cognito without an interface endpoint.
"""

from __future__ import annotations

import logging
from typing import Any

from memory_server.signin.management import build_management

logging.getLogger().setLevel(logging.INFO)

management = build_management()


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return management.route(event, context)
