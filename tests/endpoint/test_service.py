"""The endpoint in process: routing, auth context, both protocol generations."""

from __future__ import annotations

import json
from typing import Any

from memory_server.domain.grants import ALL_GRANTS, GRANT_SCOPES

from tests.builders import ALL_TOOLS
from tests.endpoint.conftest import event, metadata_event, tool_params

ALL = [GRANT_SCOPES[g] for g in ALL_GRANTS]
MODERN = "2026-07-28"


def modern_call(service, ws, who, method: str, params: dict[str, Any], scopes=ALL, context=None):  # type: ignore[no-untyped-def]
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    headers = {"mcp-protocol-version": MODERN, "mcp-method": method}
    name = params.get("name") or params.get("uri")
    if name:
        headers["mcp-name"] = name
    if context:
        headers["memory-context"] = context
    body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": {**params, "_meta": meta}}
    response = service.invoke(
        event(ws.slug, sub=who.subject, scopes=scopes, body=body, headers=headers)
    )
    return response["statusCode"], json.loads(response["body"]) if response["body"] else None


def legacy_call(
    service, ws, who, method: str, params: dict[str, Any], scopes=ALL, version="2025-06-18"
):  # type: ignore[no-untyped-def]
    body = {"jsonrpc": "2.0", "id": "a", "method": method, "params": params}
    headers = {"mcp-protocol-version": version} if version else {}
    response = service.invoke(
        event(ws.slug, sub=who.subject, scopes=scopes, body=body, headers=headers)
    )
    return response["statusCode"], json.loads(response["body"]) if response["body"] else None


def test_both_generations_write_and_read(service, world) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    alice = ws.person("alice")
    status, written = modern_call(
        service,
        ws,
        alice,
        "tools/call",
        tool_params(
            "memory_write", uri="memory://me/notes/x.md", content="héllo", expected_revision=0
        ),
    )
    assert status == 200, written
    result = written["result"]
    assert result["isError"] is False and result["structuredContent"]["revision"] == 1
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    assert result["resultType"] == "complete"

    status, read = legacy_call(
        service,
        ws,
        alice,
        "tools/call",
        {"name": "memory_read", "arguments": {"uri": "memory://me/notes/x.md"}},
    )
    assert status == 200 and read["result"]["structuredContent"]["content"] == "héllo"
    assert read["result"]["structuredContent"]["trust"] == "recorded-data"
    assert "resultType" not in read["result"]

    status, init = legacy_call(
        service,
        ws,
        alice,
        "initialize",
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
        version=None,
    )
    assert status == 200 and init["result"]["protocolVersion"] == "2025-06-18"
    status, discover = modern_call(service, ws, alice, "server/discover", {})
    assert status == 200 and discover["result"]["supportedVersions"] == [MODERN]


def test_tools_list_follows_grants(service, world) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    alice, bot = ws.person("alice"), ws.service("ci-bot", ("read",))
    _, full = modern_call(service, ws, alice, "tools/list", {})
    assert {t["name"] for t in full["result"]["tools"]} == ALL_TOOLS
    assert full["result"]["cacheScope"] == "private"
    for tool in full["result"]["tools"]:
        assert tool["inputSchema"]["additionalProperties"] is False
        assert "outputSchema" in tool
    hints = {t["name"]: t["annotations"] for t in full["result"]["tools"]}
    assert (
        hints["memory_read"]["readOnlyHint"] is True
        and hints["memory_delete"]["destructiveHint"] is True
    )
    _, reader = modern_call(service, ws, bot, "tools/list", {})
    assert {t["name"] for t in reader["result"]["tools"]} == {
        "memory_list",
        "memory_read",
        "memory_search",
        "memory_brief",
        "memory_scopes",
    }
    _, readonly = modern_call(service, ws, alice, "tools/list", {}, scopes=["memory/read"])
    assert {t["name"] for t in readonly["result"]["tools"]} == {
        "memory_list",
        "memory_read",
        "memory_search",
        "memory_brief",
        "memory_scopes",
    }
    status, denied = modern_call(
        service,
        ws,
        alice,
        "tools/call",
        tool_params("memory_write", uri="memory://me/notes/y.md", content="x", expected_revision=0),
        scopes=["memory/read"],
    )
    assert status == 200 and denied["result"]["isError"] is True
    assert denied["result"]["structuredContent"]["error"]["code"] == "permission_denied"


def test_http_edges(service, world) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    alice = ws.person("alice")
    no_token = service.invoke(event(ws.slug, sub=None, scopes=[], body={}))
    assert no_token["statusCode"] == 401
    assert (
        'resource_metadata="https://api.example.com/.well-known/oauth-protected-resource/w/'
        in no_token["headers"]["www-authenticate"]
    )
    other = service.invoke(event("no-such-ws", sub=None, scopes=[], body={}))
    assert other["body"] == no_token["body"] and other["statusCode"] == 401
    no_scope = service.invoke(event(ws.slug, sub=alice.subject, scopes=["openid"], body={}))
    assert (
        no_scope["statusCode"] == 403
        and "insufficient_scope" in no_scope["headers"]["www-authenticate"]
    )
    assert (
        service.invoke(event(ws.slug, sub=alice.subject, scopes=ALL, method="GET"))["statusCode"]
        == 405
    )
    for slug in ("no-such-ws", world.workspace().slug):
        missing = service.invoke(
            event(
                slug,
                sub=alice.subject,
                scopes=ALL,
                body={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            )
        )
        assert (missing["statusCode"], missing["body"]) == (404, "")
    off = world.workspace(enabled=False)
    off.add(alice)
    disabled = service.invoke(
        event(
            off.slug,
            sub=alice.subject,
            scopes=ALL,
            body={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        )
    )
    assert (disabled["statusCode"], disabled["body"]) == (404, "")
    metadata = service.invoke(metadata_event(ws.slug))
    doc = json.loads(metadata["body"])
    assert (
        doc["resource"] == f"https://api.example.com/w/{ws.slug}/mcp"
        and "memory/read" in doc["scopes_supported"]
    )
    ws.register("channel:leads", ws.person("carl"))
    _, body = modern_call(service, ws, alice, "tools/list", {}, context="channel:leads")
    assert body == {"error": "context_unavailable"}
    bad = service.invoke(event(ws.slug, sub=alice.subject, scopes=ALL, body="{not json"))
    assert bad["statusCode"] == 400 and json.loads(bad["body"])["error"]["code"] == -32700
    batch = service.invoke(
        event(
            ws.slug,
            sub=alice.subject,
            scopes=ALL,
            body=[{"jsonrpc": "2.0", "id": 1, "method": "ping"}],
        )
    )
    assert batch["statusCode"] == 400 and json.loads(batch["body"])["error"]["code"] == -32600
    status, unknown = modern_call(
        service, ws, alice, "tools/call", {"name": "nope", "arguments": {}}
    )
    assert status == 400 and unknown["error"]["code"] == -32602
    status, unknown_method = modern_call(service, ws, alice, "widgets/list", {})
    assert status == 404 and unknown_method["error"]["code"] == -32601
    status, extra = legacy_call(
        service,
        ws,
        alice,
        "tools/call",
        {"name": "memory_list", "arguments": {"limit": 5, "owner": "bob"}},
    )
    assert (
        status == 200
        and extra["result"]["structuredContent"]["error"]["code"] == "invalid_argument"
    )


def test_resources(service, world) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    alice, bob = ws.person("alice"), ws.person("bob")
    _, made = modern_call(
        service,
        ws,
        alice,
        "tools/call",
        tool_params(
            "memory_write",
            uri="memory://me/notes/r.md",
            content="resource body",
            expected_revision=0,
        ),
    )
    rid = made["result"]["structuredContent"]["id"]
    _, templates = modern_call(service, ws, alice, "resources/templates/list", {})
    assert {t["uriTemplate"] for t in templates["result"]["resourceTemplates"]} == {
        "memory://me/{kind}/{+path}",
        "memory://workspace/{kind}/{+path}",
        "memory://record/{id}",
        "memory://record/{id}/revisions/{revision}",
    }
    _, listed = modern_call(service, ws, alice, "resources/list", {})
    assert listed["result"]["resources"] == []
    _, current = modern_call(
        service, ws, alice, "resources/read", {"uri": f"memory://record/{rid}"}
    )
    assert current["result"]["contents"][0]["text"] == "resource body"
    assert (current["result"]["ttlMs"], current["result"]["cacheScope"]) == (0, "private")
    _, revision = modern_call(
        service, ws, alice, "resources/read", {"uri": f"memory://record/{rid}/revisions/1"}
    )
    assert revision["result"]["ttlMs"] > 0 and revision["result"]["cacheScope"] == "private"
    answers = []
    for who, uri in (
        (bob, f"memory://record/{rid}"),
        (alice, "memory://record/00000000-0000-4000-8000-000000000000"),
    ):
        status, body = modern_call(service, ws, who, "resources/read", {"uri": uri})
        answers.append((status, body["error"]["code"], body["error"]["message"]))
    assert answers[0] == answers[1]


def test_bad_calls_are_errors_and_write_nothing(service, world, owner) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    alice = ws.person("alice")

    def revisions() -> int:
        row = owner.execute(
            "SELECT count(*) FROM memory.revisions WHERE workspace_id = %s", (ws.id,)
        ).fetchone()
        return int(row[0])

    cases = [
        {
            "uri": "memory://me/notes/a.md",
            "content": "x" * 70_000,
            "expected_revision": 0,
        },  # oversized
        {
            "uri": "memory://me/notes/a.md",
            "content": "é" * 40_000,
            "expected_revision": 0,
        },  # too many bytes
        {"uri": "memory://me/notes/a.md", "content": 5, "expected_revision": 0},  # wrong type
        {
            "uri": "memory://me/notes/a.md",
            "content": "x",
            "expected_revision": 0,
            "owner": "bob",
        },  # extra
        {"uri": "memory://me/notes/../a.md", "content": "x", "expected_revision": 0},  # traversal
        {"uri": "memory://me/notes/a.md", "content": "x"},  # missing expected_revision
        {"uri": "memory://me/notes/a.md", "content": "a\x00b", "expected_revision": 0},  # NUL
    ]
    for arguments in cases:
        status, body = legacy_call(
            service, ws, alice, "tools/call", {"name": "memory_write", "arguments": arguments}
        )
        assert status == 200, body
        result = body["result"]
        assert result["isError"] is True
        assert result["structuredContent"]["error"]["code"] in ("invalid_argument", "too_large")
        assert "Traceback" not in json.dumps(body)
    status, body = legacy_call(
        service, ws, alice, "tools/call", {"name": "memory_write", "arguments": "not an object"}
    )
    assert status == 200 and body["error"]["code"] == -32602
    assert revisions() == 0


def test_foreign_origins_are_refused_on_every_authenticated_route(service, world) -> None:  # type: ignore[no-untyped-def]
    """DNS-rebinding protection at the edge: the MCP and admin routes share one check."""
    ws = world.workspace()
    alice = ws.person("alice")
    tools_list = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}

    def mcp(origin: str | None, sub: str | None = alice.subject) -> dict[str, Any]:
        headers = {} if origin is None else {"origin": origin}
        return service.invoke(event(ws.slug, sub=sub, scopes=ALL, body=tools_list, headers=headers))

    for origin in (None, "https://api.example.com"):  # no browser; the deployment itself
        assert mcp(origin)["statusCode"] == 200, origin
    for origin in ("http://evil.example.com", "https://api.example.com.evil.example", "null"):
        refused = mcp(origin)
        assert refused["statusCode"] == 403, origin
        assert json.loads(refused["body"]) == {"error": "origin_not_allowed"}
    assert mcp("http://evil.example.com", sub=None)["statusCode"] == 401  # the token first

    admin = event(
        ws.slug,
        sub=alice.subject,
        scopes=ALL,
        method="GET",
        path=f"/w/{ws.slug}/admin/members",
        headers={"origin": "http://evil.example.com"},
    )
    refused = service.invoke(admin)
    assert (refused["statusCode"], json.loads(refused["body"])) == (
        403,
        {"error": "origin_not_allowed"},
    )
    admin["headers"]["origin"] = "https://api.example.com"
    assert service.invoke(admin)["statusCode"] == 200
    # The RFC 9728 metadata is public and tenant-free: served to any origin.
    metadata = metadata_event(ws.slug, headers={"origin": "http://evil.example.com"})
    assert service.invoke(metadata)["statusCode"] == 200
