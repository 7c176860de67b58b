"""Prompts (docs/contract.md §7): the skills a caller can see, as MCP prompts.

``prompts/list`` is cursor-paged and fitted to the response budget on the exact
bytes sent, ``cacheScope: private`` (it is the caller's view). ``prompts/get``
returns a skill's ``SKILL.md``: its description, and its body as a user message
labelled recorded data. A prompt outside the caller's view and one that never
existed give the same error.
"""

from __future__ import annotations

from typing import Any

import mcp_types as t

from memory_server.domain.content import check_text
from memory_server.domain.errors import RpcError, ToolError
from memory_server.domain.limits import (
    PROMPT_ARGUMENT_MAX_BYTES,
    PROMPTS_PAGE_ITEMS,
    PROMPTS_TTL_MS,
)
from memory_server.domain.results import TRUST
from memory_server.operations.skills import skill_page, skill_prompt
from memory_server.operations.store import Store
from memory_server.protocol import budget
from memory_server.protocol.dispatcher import Request, cacheable
from memory_server.protocol.tools import CallContext


def rpc_error(error: ToolError, not_found: RpcError) -> RpcError:
    """A domain error on a protocol method: the caller's mistakes are -32602, a
    timeout or an unavailable backend is -32603 with its code (never an empty answer)."""
    if error.code == "not_found":
        return not_found
    if error.code in ("invalid_argument", "too_large"):
        return RpcError(t.INVALID_PARAMS, error.message)
    return RpcError(t.INTERNAL_ERROR, error.message, {"code": error.code})


def list_prompts(store: Store, request: Request, context: CallContext) -> dict[str, Any]:
    params = request.parse(t.PaginatedRequestParams, "prompts/list takes an optional string cursor")
    try:
        page = skill_page(
            store, context.caller, params.cursor, PROMPTS_PAGE_ITEMS, context.deadline
        )
    except ToolError as error:
        raise rpc_error(error, RpcError(t.INVALID_PARAMS, "Invalid cursor")) from None

    def result(sent: int) -> dict[str, Any]:
        listed: dict[str, Any] = {"prompts": page.items[:sent], "_meta": {"trust": TRUST}}
        cursor = page.next_cursor(sent)
        if cursor is not None:
            listed["nextCursor"] = cursor
        # The caller's view of skills: private, and short-lived.
        return cacheable(request, listed, ttl_ms=PROMPTS_TTL_MS, scope="private")

    sent = budget.fit_leading(len(page.items), lambda n: len(request.encode_result(result(n))))
    return result(sent)


def get_prompt(store: Store, request: Request, context: CallContext) -> dict[str, Any]:
    params = request.parse(
        t.GetPromptRequestParams, "prompts/get needs a prompt name and string arguments"
    )
    missing = RpcError(t.INVALID_PARAMS, "Prompt not found", {"name": params.name})
    try:
        skill = skill_prompt(store, context.caller, params.name, context.deadline)
    except ToolError as error:
        raise rpc_error(error, missing) from None
    given = params.arguments or {}
    for name, value in given.items():
        if name not in skill.arguments:
            raise RpcError(t.INVALID_PARAMS, "Unknown prompt argument", {"argument": name})
        try:
            check_text(value, what=f"argument {name}", max_bytes=PROMPT_ARGUMENT_MAX_BYTES)
        except ToolError as error:
            raise RpcError(t.INVALID_PARAMS, error.message, {"argument": name}) from None
    messages: list[dict[str, Any]] = [
        {
            "role": "user",
            "content": {"type": "text", "text": skill.body, "_meta": {"trust": TRUST}},
        }
    ]
    if given:
        lines = [f"{name}: {given[name]}" for name in skill.arguments if name in given]
        text = "Arguments:\n" + "\n".join(lines)
        messages.append({"role": "user", "content": {"type": "text", "text": text}})
    return {
        "description": skill.description,
        "messages": messages,
        "_meta": {"trust": TRUST, "uri": skill.uri, "id": skill.id, "revision": skill.revision},
    }
