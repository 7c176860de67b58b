"""The JSON-RPC dispatcher on its own: framing, generations, errors, serializer."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from memory_server.domain.errors import RpcError
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
    status, out_headers, out = DISPATCHER.dispatch({**JSON, **(headers or {})}, raw, context)
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
    assert set(body["result"]["capabilities"]) == {"tools"}  # what the table serves


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
    status, _, out = DISPATCHER.dispatch({"content-type": "text/plain"}, b"{}", None)
    assert status == 400 and json.loads(out)["error"]["code"] == -32600


def test_unknown_method_and_handler_errors_keep_the_request_id() -> None:
    status, _, body = post({"jsonrpc": "2.0", "id": 9, "method": "nope/nope"})
    assert (status, body["id"], body["error"]["code"]) == (200, 9, -32601)
    status, _, body = post(
        {"jsonrpc": "2.0", "id": 10, "method": "resources/read", "params": {"uri": "u"}}
    )
    assert body["id"] == 10
    assert body["error"] == {"code": -32602, "message": "bad params", "data": {"why": "test"}}


def modern(method: str, params: dict[str, Any] | None = None, rpc_id: int = 1) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": rpc_id,
        "method": method,
        "params": {**(params or {}), "_meta": META},
    }


def test_modern_headers_must_agree_with_the_body_with_http_400() -> None:
    _, _, body = post(modern("tools/list"), modern_headers("tools/list"))
    assert "result" in body
    cases = [
        ({"mcp-protocol-version": MODERN}, "missing Mcp-Method"),
        (modern_headers("TOOLS/LIST"), "values are case-sensitive"),
        (modern_headers("prompts/list"), "another method"),
    ]
    for headers, why in cases:
        status, _, body = post(modern("tools/list", rpc_id=5), headers)
        assert (status, body["error"]["code"], body["id"]) == (400, -32020, 5), why
    call = modern("tools/call", {"name": "memory_read", "arguments": {}})
    for name in (None, "memory_list", "MEMORY_READ"):
        status, _, body = post(call, modern_headers("tools/call", name))
        assert (status, body["error"]["code"]) == (400, -32020), name
    meta_wrong = {**call, "params": {**call["params"], "_meta": {**META, PV: "v999.0.0"}}}
    status, _, body = post(meta_wrong, modern_headers("tools/call", "memory_read"))
    assert (status, body["error"]["code"]) == (400, -32020)


PV = "io.modelcontextprotocol/protocolVersion"
CAPS = "io.modelcontextprotocol/clientCapabilities"


@pytest.mark.parametrize(
    "meta",
    [None, {CAPS: {}}, {PV: MODERN}, {PV: MODERN, CAPS: "none"}, {PV: 2026, CAPS: {}}],
)
def test_modern_request_without_a_complete_meta_is_400(meta: Any) -> None:
    params = {} if meta is None else {"_meta": meta}
    message = {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": params}
    status, _, body = post(message, modern_headers("tools/list"))
    assert (status, body["error"]["code"], body["id"]) == (400, -32602, 3)


def test_unsupported_version_lists_the_supported_ones_with_400() -> None:
    message = {
        "jsonrpc": "2.0",
        "id": 4,
        "method": "server/discover",
        "params": {"_meta": {**META, PV: "v999.0.0"}},
    }
    headers = {"mcp-protocol-version": "v999.0.0", "mcp-method": "server/discover"}
    status, _, body = post(message, headers)
    assert status == 400
    assert body["error"]["code"] == -32022
    assert body["error"]["data"] == {"supported": [MODERN], "requested": "v999.0.0"}


def test_header_values_are_read_without_surrounding_whitespace() -> None:
    call = modern("tools/list")
    headers = {"mcp-protocol-version": f" {MODERN}\t", "mcp-method": "  tools/list  "}
    status, _, body = post(call, headers)
    assert status == 200 and body["result"]["modern"] is True
    refused = modern("resources/read", {"uri": "memory://x"})
    status, _, body = post(refused, modern_headers("resources/read", "  memory://x "))
    assert body["error"] == {"code": -32602, "message": "bad params", "data": {"why": "test"}}
    assert status == 400  # the handler's own -32602: the headers were accepted


def test_unknown_methods_are_404_on_the_modern_wire_only() -> None:
    for method in ("initialize", "ping", "logging/setLevel", "unknown/method"):
        status, _, body = post(modern(method, rpc_id=8), modern_headers(method))
        assert (status, body["error"]["code"], body["id"]) == (404, -32601, 8), method
    status, _, body = post({"jsonrpc": "2.0", "id": 9, "method": "unknown/method"})
    assert (status, body["error"]["code"]) == (200, -32601)


def test_the_handshake_generation_answers_protocol_errors_with_200() -> None:
    """No header, or a handshake version: the _meta and header rules do not apply."""
    for headers in ({}, {"mcp-protocol-version": "2025-06-18", "mcp-method": "TOOLS/LIST"}):
        status, _, body = post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers)
        assert status == 200 and body["result"]["modern"] is False
        status, _, body = post(
            {"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {}}, headers
        )
        assert (status, body["error"]["code"]) == (200, -32602)


def test_capabilities_are_what_the_method_table_serves() -> None:
    def caps(*methods: str) -> set[str]:
        table = Dispatcher(dict.fromkeys(methods, echo), instructions="")
        return set(table.capabilities())

    assert caps("tools/list") == {"tools"}
    assert caps("tools/list", "prompts/list", "completion/complete") == {
        "tools",
        "prompts",
        "completions",
    }


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
