"""One HTTP request in, one HTTP response out, for both protocol generations.

- ``2026-07-28`` (sessionless): chosen by the ``MCP-Protocol-Version`` header, before
  anything else is checked; every request carries ``_meta`` with protocol version and
  client capabilities, the ``Mcp-Method`` / ``Mcp-Name`` headers must agree with the
  body, and every rejection carries the transport's HTTP status (:data:`HTTP_STATUS`).
- The handshake generation (``initialize``; ``2025-11-25``, ``2025-06-18``,
  ``2025-03-26``), served statelessly: any request works without a session.

Responses are JSON (never SSE). The serializer (:func:`dumps`, :func:`encode`) is
the only one, so the byte budgets are measured on exactly what is sent. The HTTP
method, authentication and the listening context are the edge's; this module sees
one authenticated ``POST`` body.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import mcp_types as t
from mcp_types.version import LATEST_HANDSHAKE_VERSION
from pydantic import BaseModel, ValidationError

from memory_server.domain.errors import RpcError, rpc_error_body
from memory_server.domain.limits import CATALOG_TTL_MS

MODERN_VERSION = "2026-07-28"
HANDSHAKE_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")
# Handshake-era requests without a version header are served as the oldest revision.
DEFAULT_HANDSHAKE_VERSION = "2025-03-26"
NAME_PARAM = {"tools/call": "name", "resources/read": "uri", "prompts/get": "name"}
HTTP_STATUS = {
    t.PARSE_ERROR: 400,
    t.INVALID_REQUEST: 400,
    t.INVALID_PARAMS: 400,
    t.HEADER_MISMATCH: 400,
    t.MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    t.UNSUPPORTED_PROTOCOL_VERSION: 400,
    t.METHOD_NOT_FOUND: 404,
}
_B64_SENTINEL = re.compile(r"^=\?base64\?(?P<payload>.*)\?=$")
JSON_HEADERS = {"content-type": "application/json"}
Params = TypeVar("Params", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class Request:
    """A validated request: what a method handler sees."""

    id: str | int
    method: str
    params: dict[str, Any]
    version: str
    modern: bool
    headers: Mapping[str, str]

    def parse(self, model: type[Params], message: str) -> Params:
        """The params as ``model``, or -32602 with ``message`` (what the method needs)."""
        try:
            return model.model_validate(self.params)
        except ValidationError:
            raise RpcError(t.INVALID_PARAMS, message) from None

    def encode_result(self, result: dict[str, Any]) -> bytes:
        """The exact bytes of a successful response carrying ``result``."""
        if self.modern:
            result = {
                **result,
                "resultType": "complete",
                "_meta": {**result.get("_meta", {}), t.SERVER_INFO_META_KEY: SERVER_INFO},
            }
        return encode({"jsonrpc": "2.0", "id": self.id, "result": result})


Handler = Callable[[Request, Any], dict[str, Any]]  # (request, per-call context)
Response = tuple[int, dict[str, str], bytes]

SERVER_INFO = {"name": "memory-server", "version": "0.1.0"}


def dumps(value: Any) -> str:
    """Compact JSON, non-ASCII as is (no \\u escapes to pay for): every generation."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def encode(message: dict[str, Any]) -> bytes:
    text = dumps(message)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate echoed from the request (an id, a method or tool name, a
        # URI) has no UTF-8 form: send that message ASCII-escaped, still valid JSON.
        return json.dumps(message, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def decode_header_value(value: str | None) -> str | None:
    """``Mcp-Name`` may carry ``=?base64?…?=`` for values unsafe in a header."""
    if value is None:
        return None
    match = _B64_SENTINEL.fullmatch(value)
    if match is None:
        return value
    try:
        raw = base64.b64decode(match.group("payload"), validate=True)
        if base64.b64encode(raw).decode("ascii") != match.group("payload"):
            return None
        return raw.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


def _error(request_id: Any, error: RpcError, modern: bool) -> Response:
    """A JSON-RPC error: on the ``2026-07-28`` wire with the transport's HTTP status."""
    status = HTTP_STATUS.get(error.rpc_code, 200) if modern else 200
    message = {"jsonrpc": "2.0", "id": request_id, "error": rpc_error_body(error)}
    return status, dict(JSON_HEADERS), encode(message)


def _framing_error(error: RpcError) -> Response:
    """The message could not be read: 400 whatever the generation (none is known yet)."""
    message = {"jsonrpc": "2.0", "id": None, "error": rpc_error_body(error)}
    return 400, dict(JSON_HEADERS), encode(message)


def header(headers: Mapping[str, str], name: str) -> str | None:
    """A request header's value without the optional whitespace around it (RFC 9110
    §5.5: a field value excludes leading and trailing spaces and tabs)."""
    value = headers.get(name)
    return None if value is None else value.strip(" \t")


def generation(headers: Mapping[str, str]) -> tuple[str, bool]:
    """The protocol version and whether it is the ``2026-07-28`` generation, from the
    ``MCP-Protocol-Version`` header alone: known before anything else is checked, so
    every rejection that follows is answered the way its generation requires."""
    version = header(headers, "mcp-protocol-version")
    if version is None or version in t.version.HANDSHAKE_PROTOCOL_VERSIONS:
        return version or DEFAULT_HANDSHAKE_VERSION, False
    return version, True


def check_modern(headers: Mapping[str, str], params: dict[str, Any], method: str) -> None:
    """A ``2026-07-28`` request names a version this server serves, and its ``_meta``
    and routing headers agree with its body; else the transport's error (HTTP 400)."""
    version = header(headers, "mcp-protocol-version")
    if version != MODERN_VERSION:
        # First, so a client of another revision learns what it can fall back to.
        raise RpcError(
            t.UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
            {"supported": [MODERN_VERSION], "requested": version},
        )
    meta = params.get("_meta")
    if (
        not isinstance(meta, dict)
        or not isinstance(meta.get(t.PROTOCOL_VERSION_META_KEY), str)
        or not isinstance(meta.get(t.CLIENT_CAPABILITIES_META_KEY), dict)
    ):
        raise RpcError(
            t.INVALID_PARAMS,
            "params._meta must carry the protocol version and client capabilities",
        )
    if meta[t.PROTOCOL_VERSION_META_KEY] != version:
        raise RpcError(t.HEADER_MISMATCH, "MCP-Protocol-Version header does not match _meta")
    if header(headers, "mcp-method") != method:
        raise RpcError(t.HEADER_MISMATCH, "Mcp-Method header does not match the request method")
    name_key = NAME_PARAM.get(method)
    if name_key is not None and decode_header_value(header(headers, "mcp-name")) != params.get(
        name_key
    ):
        raise RpcError(t.HEADER_MISMATCH, f"Mcp-Name header does not match params.{name_key}")


class Dispatcher:
    """Routes JSON-RPC methods to handlers; owns framing, versions and errors."""

    def __init__(self, handlers: Mapping[str, Handler], *, instructions: str) -> None:
        self.handlers = dict(handlers)
        self.instructions = instructions

    def dispatch(self, headers: Mapping[str, str], body: bytes, context: Any = None) -> Response:
        content_type = headers.get("content-type", "")
        if not content_type.lower().startswith("application/json"):
            return _framing_error(
                RpcError(t.INVALID_REQUEST, "Content-Type must be application/json")
            )
        try:
            message = json.loads(body)
        except (ValueError, RecursionError):
            return _framing_error(RpcError(t.PARSE_ERROR, "Parse error"))
        if (
            isinstance(message, dict)
            and "id" not in message
            and isinstance(message.get("method"), str)
        ):
            return 202, {}, b""  # a notification: nothing to answer
        try:
            envelope = t.JSONRPCRequest.model_validate(message)
        except ValidationError:
            return _framing_error(
                RpcError(t.INVALID_REQUEST, "Body must be a single JSON-RPC request object")
            )
        params = envelope.params or {}
        version, modern = generation(headers)
        try:
            if modern:
                check_modern(headers, params, envelope.method)
            request = Request(envelope.id, envelope.method, params, version, modern, headers)
            result = self._dispatch(request, context)
            return 200, dict(JSON_HEADERS), request.encode_result(result)
        except RpcError as error:
            return _error(envelope.id, error, modern)

    def _dispatch(self, request: Request, context: Any) -> dict[str, Any]:
        method = request.method
        if method == "initialize" and not request.modern:
            return self._initialize(request)
        if method == "server/discover" and request.modern:
            return self._discover()
        if method == "ping" and not request.modern:
            return {}
        handler = self.handlers.get(method)
        if handler is None:
            raise RpcError(t.METHOD_NOT_FOUND, "Method not found", method)
        return handler(request, context)

    def capabilities(self) -> dict[str, Any]:
        """What the method table serves, and nothing it does not (no list-changed
        notifications, no subscriptions: there is no stream to send them on)."""
        offered = {
            "tools": ("tools/list", {"listChanged": False}),
            "resources": ("resources/list", {"listChanged": False, "subscribe": False}),
            "prompts": ("prompts/list", {"listChanged": False}),
            "completions": ("completion/complete", {}),
        }
        return {
            name: capability
            for name, (method, capability) in offered.items()
            if method in self.handlers
        }

    def _initialize(self, request: Request) -> dict[str, Any]:
        params = request.parse(t.InitializeRequestParams, "Invalid initialize parameters")
        requested = params.protocol_version
        version = requested if requested in HANDSHAKE_VERSIONS else LATEST_HANDSHAKE_VERSION
        return {
            "protocolVersion": version,
            "capabilities": self.capabilities(),
            "serverInfo": SERVER_INFO,
            "instructions": self.instructions,
        }

    def _discover(self) -> dict[str, Any]:
        return {
            "supportedVersions": [MODERN_VERSION],
            "capabilities": self.capabilities(),
            "instructions": self.instructions,
            "ttlMs": CATALOG_TTL_MS,
            "cacheScope": "public",
        }


def cacheable(
    request: Request, result: dict[str, Any], *, ttl_ms: int, scope: str
) -> dict[str, Any]:
    """Add cache hints on the 2026-07-28 wire; the handshake generation has none."""
    if request.modern:
        return {**result, "ttlMs": ttl_ms, "cacheScope": scope}
    return result
