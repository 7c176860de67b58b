"""Resources (docs/contract.md §7): templates, and reads with exactly memory_read's rules.

Path and record resources are current state (``ttlMs: 0``); revision resources are
immutable (a long TTL). Tenant data is always ``cacheScope: private``. A record
outside the caller's view and one that never existed give the same error.
"""

from __future__ import annotations

from typing import Any

import mcp_types as t

from memory_server.domain.addresses import RevisionAddress, parse_address
from memory_server.domain.arguments import ReadArgs
from memory_server.domain.errors import RpcError, ToolError
from memory_server.domain.limits import CATALOG_TTL_MS, READ_MAX_BYTES, REVISION_TTL_MS
from memory_server.operations import memory_read, read_revision
from memory_server.operations.store import Store
from memory_server.protocol.dispatcher import Request, cacheable
from memory_server.protocol.tools import CallContext

TEMPLATES = [
    ("memory-personal", "memory://me/{kind}/{+path}", "A record in your personal namespace"),
    ("memory-workspace", "memory://workspace/{kind}/{+path}", "A record shared with the workspace"),
    ("memory-record", "memory://record/{id}", "A record by its immutable id (current state)"),
    ("memory-revision", "memory://record/{id}/revisions/{revision}", "One immutable revision"),
]


def list_templates(request: Request, context: CallContext) -> dict[str, Any]:
    templates = [
        t.ResourceTemplate(
            name=name, uri_template=template, description=description, mime_type="text/markdown"
        ).model_dump(by_alias=True, exclude_none=True)
        for name, template, description in TEMPLATES
    ]
    # Identical for every caller: public.
    return cacheable(
        request, {"resourceTemplates": templates}, ttl_ms=CATALOG_TTL_MS, scope="public"
    )


def list_resources(request: Request, context: CallContext) -> dict[str, Any]:
    # Empty by design: enumeration goes through memory_list and its budget.
    return cacheable(request, {"resources": []}, ttl_ms=0, scope="private")


def read_resource(store: Store, request: Request, context: CallContext) -> dict[str, Any]:
    params = request.parse(t.ReadResourceRequestParams, "resources/read needs a uri")
    uri = params.uri
    try:
        address = parse_address(uri)
        if isinstance(address, RevisionAddress):
            record = read_revision(store, context.caller, address, context.deadline)
            ttl = REVISION_TTL_MS
        else:
            record = memory_read(
                store,
                context.caller,
                ReadArgs(uri=uri, offset=0, max_bytes=READ_MAX_BYTES, history=False, as_of=None),
                context.deadline,
            )
            ttl = 0
    except ToolError as error:
        if error.code in ("not_found", "invalid_argument"):
            raise RpcError(t.INVALID_PARAMS, "Resource not found", {"uri": uri}) from None
        raise RpcError(t.INTERNAL_ERROR, error.message, {"code": error.code}) from None
    contents = {
        "uri": uri,
        "mimeType": "text/markdown",
        "text": record["content"],
        "_meta": {"trust": "recorded-data", "id": record["id"], "revision": record["revision"]},
    }
    return cacheable(request, {"contents": [contents]}, ttl_ms=ttl, scope="private")
