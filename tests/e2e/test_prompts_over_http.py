"""End to end: skills as prompts and completions through the official MCP SDK client,
in both protocol generations, as the demo principals of docs/contract.md §8; and
the DNS-rebinding checks of the local stack over real HTTP."""

from __future__ import annotations

import uuid
from typing import Any

import httpx2
import mcp_types as t
import pytest
from mcp.shared.exceptions import MCPError

from tests.e2e.conftest import call, connect, create, run
from tests.tls import TLS

MODES = {"2026-07-28": "auto", "2025-11-25": "legacy"}
DM = "dm:alice-release-bot"


async def write_skill(
    client: Any, namespace: str, folder: str, description: str, extra: str = ""
) -> None:
    """Writes the skill ``folder`` (front matter, then steps) into ``namespace``."""
    await create(
        client,
        f"memory://{namespace}/skills/{folder}/SKILL.md",
        f"---\nname: {folder}\ndescription: {description}\n{extra}---\nFollow these steps.\n",
    )


async def every_prompt(client: Any) -> dict[str, Any]:
    prompts: dict[str, Any] = {}
    cursor = None
    while True:
        page = await client.list_prompts(cursor=cursor)
        prompts.update({prompt.name: prompt for prompt in page.prompts})
        cursor = page.next_cursor
        if cursor is None:
            return prompts


async def refusal(client: Any, name: str) -> tuple[int, str, Any]:
    with pytest.raises(MCPError) as caught:
        await client.get_prompt(name)
    error = caught.value.error
    return error.code, error.message, error.data


@pytest.mark.parametrize("generation", list(MODES))
def test_skills_are_prompts_within_the_view(stack, generation: str) -> None:  # type: ignore[no-untyped-def]
    tag = uuid.uuid4().hex[:6]
    in_dm, personal, shared = f"dm-only-{tag}", f"alice-own-{tag}", f"team-{tag}"
    mode = MODES[generation]

    async def scenario() -> None:
        async with connect(stack, "alice", mode=mode, context=DM) as dm:
            assert dm.protocol_version == generation
            await write_skill(dm, "workspace", in_dm, "Only for the release DM")
            assert in_dm in await every_prompt(dm)
        async with connect(stack, "alice", mode=mode) as alice:
            await write_skill(alice, "me", personal, "Alice's own way", "arguments: ticket\n")
            await write_skill(alice, "workspace", shared, "How the team ships")
            mine = await every_prompt(alice)
            assert {"release-notes", shared, f"me/{personal}"} <= set(mine)
            assert in_dm not in mine
            assert [a.name for a in mine[f"me/{personal}"].arguments] == ["ticket"]
            got = await alice.get_prompt(f"me/{personal}", {"ticket": "OPS-7"})
            assert got.description == "Alice's own way"
            assert got.messages[0].role == "user"
            assert got.messages[0].content.text == "Follow these steps.\n"
            assert got.messages[1].content.text == "Arguments:\nticket: OPS-7"
        # A DM's skill is not listed in a channel, nor served there.
        for context in ("channel:general", "channel:eng"):
            async with connect(stack, "alice", mode=mode, context=context) as channel:
                listed = await every_prompt(channel)
                assert in_dm not in listed and shared in listed
                outside = await refusal(channel, in_dm)
                never = await refusal(channel, f"never-{tag}")
                assert outside[:2] == never[:2] == (-32602, "Prompt not found")
                assert (outside[2], never[2]) == ({"name": in_dm}, {"name": f"never-{tag}"})
        # Bob does not see alice's personal skill; asking for it is asking for his own.
        async with connect(stack, "bob", mode=mode) as bob:
            listed = await every_prompt(bob)
            assert shared in listed and not any(name.startswith("me/") for name in listed)
            assert f"me/{personal}" not in listed
            theirs = await refusal(bob, f"me/{personal}")
            never = await refusal(bob, f"me/never-{tag}")
            assert theirs[:2] == never[:2] == (-32602, "Prompt not found")

    run(scenario())


@pytest.mark.parametrize("generation", list(MODES))
def test_completion_never_offers_a_path_outside_the_view(stack, generation: str) -> None:  # type: ignore[no-untyped-def]
    tag = uuid.uuid4().hex[:6]
    mode = MODES[generation]
    shared = t.ResourceTemplateReference(uri="memory://workspace/{kind}/{+path}")
    personal = t.ResourceTemplateReference(uri="memory://me/{kind}/{+path}")

    async def values(client: Any, ref: Any, value: str, kind: str | None = None) -> list[str]:
        context = {"kind": kind} if kind else None
        found = await client.complete(ref, {"name": "path", "value": value}, context)
        assert len(found.completion.values) <= 20
        return list(found.completion.values)

    async def scenario() -> None:
        async with connect(stack, "alice", mode=mode, context=DM) as dm:
            await call(
                dm,
                "memory_write",
                uri=f"memory://workspace/notes/c-{tag}/dm.md",
                content="said in the DM",
                expected_revision=0,
            )
            assert await values(dm, shared, f"c-{tag}/") == [f"c-{tag}/dm.md"]
            assert await values(dm, shared, "rollout", "notes") == ["rollout.md"]  # seeded
        async with connect(stack, "alice", mode=mode) as alice:
            for uri in (
                f"memory://workspace/notes/c-{tag}/a.md",
                f"memory://me/notes/c-{tag}/p.md",
            ):
                await call(alice, "memory_write", uri=uri, content="x", expected_revision=0)
            assert await values(alice, shared, f"c-{tag}/", "notes") == [f"c-{tag}/a.md"]
            assert await values(alice, personal, f"c-{tag}/") == [f"c-{tag}/p.md"]
            # The seeded DM note (docs/contract.md §8) is not offered outside the DM.
            assert await values(alice, shared, "rollout", "notes") == []
            assert await values(alice, personal, "one-on", "notes") == ["one-on-ones.md"]
            names = await alice.complete(
                t.PromptReference(name="release-notes"), {"name": "name", "value": "release"}
            )
            assert "release-notes" in names.completion.values
        async with connect(stack, "alice", mode=mode, context="channel:eng") as eng:
            assert await values(eng, shared, f"c-{tag}/") == [f"c-{tag}/a.md"]
        async with connect(stack, "bob", mode=mode) as bob:
            assert await values(bob, personal, f"c-{tag}/") == []
            assert await values(bob, personal, "one-on", "notes") == []  # alice's
            assert await values(bob, shared, f"c-{tag}/") == [f"c-{tag}/a.md"]

    run(scenario())


def test_the_local_stack_refuses_foreign_hosts_and_origins(stack) -> None:  # type: ignore[no-untyped-def]
    """DNS rebinding: a page on another site reaching the loopback server."""
    url = stack.info["url"]
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    base = {"Authorization": f"Bearer {stack.info['tokens']['alice']}"}

    def post(**headers: str) -> httpx2.Response:
        return httpx2.post(url, json=body, headers={**base, **headers}, verify=TLS)

    assert post().status_code == 200
    for origin in ("http://localhost:6274", "http://127.0.0.1:9", stack.info["api_url"]):
        assert post(origin=origin).status_code == 200, origin  # loopback pages (Inspector)
    refused = post(origin="http://evil.example.com")
    assert (refused.status_code, refused.json()) == (403, {"error": "origin_not_allowed"})
    for host in ("evil.example.com", "evil.example.com:8787"):
        refused = post(host=host)
        assert (refused.status_code, refused.json()) == (403, {"error": "host_not_allowed"})
    admin = httpx2.get(
        url.replace("/mcp", "/admin/members"),
        headers={**base, "origin": "http://evil.example"},
        verify=TLS,
    )
    assert (admin.status_code, admin.json()) == (403, {"error": "origin_not_allowed"})
