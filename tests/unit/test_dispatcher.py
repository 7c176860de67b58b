"""The JSON-RPC dispatcher on its own: framing, generations, errors, serializer."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from memory_server.errors import RpcError
from memory_server.protocol.dispatcher import Dispatcher, Request, cacheable, encode

MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}
JSON = {"content-type": "application/json"}


def echo(request: Request, context: Any) -> dict[str, Any]:
    return {"method": request.method, "modern": request.modern, "context": context}


def refuse(request: Request, context: Any) -> dict[str, Any]:
    raise RpcError(-32602, "bad params", {"why": "test"})


DISPATCHER = Dispatcher({"tools/list": echo, "resources/read": refuse}, instructions="hi")


def post(body: Any, headers: dict[str, str] | None = None, context: Any = None) -> Any:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    status, out_headers, out = DISPATCHER.handle({**JSON, **(headers or {})}, raw, context)
    return status, out_headers, json.loads(out) if out else None


def modern_headers(method: str, name: str | None = None) -> dict[str, str]:
    headers = {"mcp-protocol-version": MODERN, "mcp-method": method}
    if name is not None:
        headers["mcp-name"] = name
    return headers


def test_handshake_request_reaches_its_handler_with_the_context() -> None:
    status, _, body = post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, context="ctx")
    assert status == 200
    assert body == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"method": "tools/list", "modern": False, "context": "ctx"},
    }


def test_modern_request_carries_result_type_and_server_info() -> None:
    message = {"jsonrpc": "2.0", "id": "x", "method": "tools/list", "params": {"_meta": META}}
    status, _, body = post(message, modern_headers("tools/list"))
    assert status == 200
    assert body["result"]["modern"] is True
    assert body["result"]["resultType"] == "complete"
    assert "io.modelcontextprotocol/serverInfo" in body["result"]["_meta"]


def test_initialize_negotiates_a_handshake_version() -> None:
    params = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    _, _, body = post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
    assert body["result"]["protocolVersion"] == "2025-06-18"
    assert body["result"]["instructions"] == "hi"
    assert set(body["result"]["capabilities"]) == {"tools", "resources"}


def test_notifications_get_202_and_no_body() -> None:
    status, _, body = post({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert (status, body) == (202, None)


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b"{not json", -32700),
        (b"[]", -32600),
        (json.dumps({"jsonrpc": "2.0", "id": 1}).encode(), -32600),
    ],
)
def test_malformed_bodies_are_protocol_errors(raw: bytes, code: int) -> None:
    status, _, body = post(raw)
    assert status == 400 and body["error"]["code"] == code and body["id"] is None


def test_wrong_content_type_is_refused() -> None:
    status, _, out = DISPATCHER.handle({"content-type": "text/plain"}, b"{}", None)
    assert status == 400 and json.loads(out)["error"]["code"] == -32600


def test_unknown_method_and_handler_errors_keep_the_request_id() -> None:
    status, _, body = post({"jsonrpc": "2.0", "id": 9, "method": "nope/nope"})
    assert (status, body["id"], body["error"]["code"]) == (200, 9, -32601)
    status, _, body = post(
        {"jsonrpc": "2.0", "id": 10, "method": "resources/read", "params": {"uri": "u"}}
    )
    assert body["id"] == 10
    assert body["error"] == {"code": -32602, "message": "bad params", "data": {"why": "test"}}


def test_modern_headers_must_agree_with_the_body() -> None:
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": META}}
    _, _, body = post(message, modern_headers("TOOLS/LIST"))
    assert body["error"]["code"] == -32020  # header mismatch: values are case-sensitive
    no_meta = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    _, _, body = post(no_meta, modern_headers("tools/list"))
    assert body["error"]["code"] == -32602


def test_cache_hints_only_on_the_modern_wire() -> None:
    modern = Request(1, "m", {}, MODERN, True, {})
    legacy = Request(1, "m", {}, "2025-06-18", False, {})
    assert cacheable(modern, {"a": 1}, ttl_ms=5, scope="private") == {
        "a": 1,
        "ttlMs": 5,
        "cacheScope": "private",
    }
    assert cacheable(legacy, {"a": 1}, ttl_ms=5, scope="private") == {"a": 1}


@given(st.text())
def test_encode_is_always_valid_json_that_round_trips(text: str) -> None:
    """Non-ASCII is sent as is; a lone surrogate (no UTF-8 form) falls back to escapes."""
    message = {"jsonrpc": "2.0", "id": text, "result": {"t": text}}
    raw = encode(message)
    assert json.loads(raw) == message
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        assert raw.isascii()
    else:
        assert len(raw) == len(
            json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()
        )
