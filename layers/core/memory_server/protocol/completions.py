"""``completion/complete`` (docs/contract.md §7): prefix completion within the view.

- ``ref/resource`` with a path template (``memory://me/{kind}/{+path}``,
  ``memory://workspace/{kind}/{+path}``): ``kind`` completes to the three kinds,
  ``path`` to the paths of visible records (of ``context.arguments.kind`` when given).
- ``ref/prompt``: the argument ``name`` (which no skill may declare) completes to
  the names of visible prompts, whatever prompt the ref names; a declared argument
  takes free text, so it completes to nothing.

Anything else completes to nothing: an unknown prompt or template is not told apart
from one without suggestions. At most 20 values, fitted to the response budget,
under the call's deadline.
"""

from __future__ import annotations

from typing import Any

import mcp_types as t

from memory_server.domain.addresses import KINDS, Kind, Namespace
from memory_server.domain.content import PROMPT_NAME_ARGUMENT
from memory_server.domain.errors import RpcError, ToolError
from memory_server.domain.limits import COMPLETION_MAX_VALUES
from memory_server.operations.path_completion import (
    Completion,
    complete_paths,
    complete_prompt_names,
)
from memory_server.operations.store import Store
from memory_server.protocol import budget
from memory_server.protocol.dispatcher import Request
from memory_server.protocol.prompts import BRIEFING, rpc_error
from memory_server.protocol.resources import TEMPLATES
from memory_server.protocol.tools import CallContext

PATH_TEMPLATES: dict[str, Namespace] = {
    template: "me" if template.startswith("memory://me/") else "workspace"
    for _, template, _ in TEMPLATES
    if template.endswith("{+path}")
}
NOTHING = Completion([], False)


def complete(store: Store, request: Request, context: CallContext) -> dict[str, Any]:
    params = request.parse(
        t.CompleteRequestParams, "completion/complete needs a ref and an argument name and value"
    )
    ref, argument = params.ref, params.argument
    resolved = (params.context.arguments if params.context else None) or {}
    try:
        if isinstance(ref, t.ResourceTemplateReference):
            found = _template(store, context, ref.uri, argument, resolved)
        else:
            found = _prompt(store, context, ref.name, argument)
    except ToolError as error:
        raise rpc_error(error, RpcError(t.INVALID_PARAMS, error.message)) from None

    def result(sent: int) -> dict[str, Any]:
        more = found.more or sent < len(found.values)
        return {"completion": {"values": found.values[:sent], "hasMore": more}}

    return result(
        budget.fit_leading(len(found.values), lambda n: len(request.encode_result(result(n))))
    )


def _template(
    store: Store,
    context: CallContext,
    uri: str,
    argument: t.CompletionArgument,
    resolved: dict[str, str],
) -> Completion:
    namespace = PATH_TEMPLATES.get(uri)
    if namespace is None:
        return NOTHING
    if argument.name == "kind":
        return Completion([kind for kind in KINDS if kind.startswith(argument.value)], False)
    if argument.name != "path":
        return NOTHING
    kind: Kind | None = None
    if "kind" in resolved:
        chosen = resolved["kind"]
        if chosen not in KINDS:
            return NOTHING
        kind = chosen
    return complete_paths(store, context.caller, namespace, kind, argument.value, context.deadline)


def _prompt(
    store: Store, context: CallContext, name: str, argument: t.CompletionArgument
) -> Completion:
    # A declared argument takes free text; ``name`` is reserved for the prompt names.
    if argument.name != PROMPT_NAME_ARGUMENT:
        return NOTHING
    found = complete_prompt_names(store, context.caller, argument.value, context.deadline)
    if not BRIEFING.startswith(argument.value) or "read" not in context.caller.grants:
        return found
    # The briefing leads, as it leads prompts/list; a skill of its name is shadowed.
    names = [BRIEFING, *(name for name in found.values if name != BRIEFING)]
    return Completion(
        names[:COMPLETION_MAX_VALUES], found.more or len(names) > COMPLETION_MAX_VALUES
    )
