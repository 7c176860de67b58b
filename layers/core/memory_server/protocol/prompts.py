"""Prompts (docs/contract.md §7): the session-start briefing (``memory-briefing``,
the briefing of ``memory_brief``) and the skills a caller can see, as MCP prompts.

``prompts/list`` is cursor-paged and fitted to the response budget on the exact
bytes sent, ``cacheScope: private`` (it is the caller's view). ``prompts/get``
returns a skill's ``SKILL.md``: its description, and its body as a user message
labelled recorded data. A prompt outside the caller's view and one that never
existed give the same error.
"""

from __future__ import annotations

from typing import Any

import mcp_types as t

from memory_server.domain.arguments import BriefArgs, parse_args
from memory_server.domain.content import check_text
from memory_server.domain.errors import RpcError, ToolError
from memory_server.domain.limits import (
    BRIEF_DEFAULT_BYTES,
    PROMPT_ARGUMENT_MAX_BYTES,
    PROMPTS_PAGE_ITEMS,
    PROMPTS_TTL_MS,
)
from memory_server.domain.results import TRUST
from memory_server.operations.memory_brief import memory_brief
from memory_server.operations.skills import skill_page, skill_prompt
from memory_server.operations.store import Store
from memory_server.protocol import budget
from memory_server.protocol.dispatcher import Request, cacheable, dumps
from memory_server.protocol.tools import CallContext

# Not a skill: a skill folder of this name is shadowed by it (docs/contract.md §7).
BRIEFING = "memory-briefing"
_BRIEFING_PROMPT = {
    "name": BRIEFING,
    "description": "Load at session start: pinned memories with their content, recent "
    "changes and the skills in view (the same as the tool memory_brief).",
    "arguments": [
        {
            "name": "since",
            "description": "Recent changes since this time (RFC 3339)",
            "required": False,
        }
    ],
}


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
    # The briefing leads the first page (for a caller who may read).
    lead = [_BRIEFING_PROMPT] if params.cursor is None and "read" in context.caller.grants else []
    prompts = lead + page.items

    def result(sent: int) -> dict[str, Any]:
        listed: dict[str, Any] = {"prompts": prompts[:sent], "_meta": {"trust": TRUST}}
        cursor = page.next_cursor(max(sent - len(lead), 0)) if sent else None
        if cursor is not None:
            listed["nextCursor"] = cursor
        # The caller's view of skills: private, and short-lived.
        return cacheable(request, listed, ttl_ms=PROMPTS_TTL_MS, scope="private")

    sent = budget.fit_leading(len(prompts), lambda n: len(request.encode_result(result(n))))
    return result(sent)


def _briefing(
    store: Store, request: Request, context: CallContext, given: dict[str, str]
) -> dict[str, Any]:
    """The prompt memory-briefing: the briefing as one user message, labelled recorded
    data, the whole response within BRIEF_DEFAULT_BYTES."""
    for name in given:
        if name != "since":
            raise RpcError(t.INVALID_PARAMS, "Unknown prompt argument", {"argument": name})
    try:
        args = parse_args(BriefArgs, {"max_bytes": BRIEF_DEFAULT_BYTES, **given})
        brief = memory_brief(store, context.caller, args, context.deadline)
    except ToolError as error:
        raise rpc_error(error, RpcError(t.INVALID_PARAMS, "Invalid prompt argument")) from None

    def prompt(briefing: dict[str, Any]) -> dict[str, Any]:
        text = dumps(briefing)
        return {
            "description": _BRIEFING_PROMPT["description"],
            "messages": [
                {
                    "role": "user",
                    "content": {"type": "text", "text": text, "_meta": {"trust": TRUST}},
                }
            ],
            "_meta": {"trust": TRUST},
        }

    return prompt(
        budget.brief_within(brief, lambda briefing: len(request.encode_result(prompt(briefing))))
    )


def get_prompt(store: Store, request: Request, context: CallContext) -> dict[str, Any]:
    params = request.parse(
        t.GetPromptRequestParams, "prompts/get needs a prompt name and string arguments"
    )
    given = params.arguments or {}
    if params.name == BRIEFING:
        return _briefing(store, request, context, given)
    missing = RpcError(t.INVALID_PARAMS, "Prompt not found", {"name": params.name})
    try:
        skill = skill_prompt(store, context.caller, params.name, context.deadline)
    except ToolError as error:
        raise rpc_error(error, missing) from None
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
