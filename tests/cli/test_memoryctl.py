"""``memoryctl`` end to end, from a subprocess, against the shared local stack: workspaces,
members, agent keys, contexts, the memory feature, export and import."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.stack_clients import client_token, mcp_status, person
from tests.tls import TLS

ROOT = Path(__file__).resolve().parents[2]


def memoryctl(stack: Any, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MEMORY_ENDPOINT_FILE": str(Path(stack.root) / "endpoint.json")}
    env.pop("USER_POOL_ID", None)  # the endpoint file says where the pool is
    env.pop("EMBEDDER", None)  # the shared stack's "off": memoryctl takes make dev's model
    done = subprocess.run(
        [sys.executable, "-m", "memory_cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    if check:
        assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done


def as_json(done: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(done.stdout)


def write(stack: Any, token: str, workspace: str, context: str, uri: str, content: str) -> None:
    response = httpx2.post(
        f"{stack.info['api_url']}/w/{workspace}/mcp",
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": "memory_write",
                "arguments": {"uri": uri, "content": content, "expected_revision": 0},
            },
        },
        headers={
            "Authorization": f"Bearer {token}",
            "Memory-Context": context,
            "MCP-Protocol-Version": "2025-11-25",
        },
        verify=TLS,
    )
    assert response.status_code == 200 and not response.json()["result"]["isError"], response.text


@pytest.mark.slow
def test_memoryctl_end_to_end(stack, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    tag = uuid.uuid4().hex[:8]
    source, target = f"ctl-{tag}", f"ctl-copy-{tag}"
    alice_sub = stack.aws.create_user("alice")
    bob_sub = stack.aws.create_user("bob")
    ws = ("--as", "alice", "--workspace", source)

    made = as_json(
        memoryctl(
            stack,
            "--json",
            "workspaces",
            "create",
            source,
            "--admin-subject",
            alice_sub,
            "--admin-handle",
            "alice",
            "--memory-on",
        )
    )
    assert made["slug"] == source and made["memory_enabled"] is True
    listed = as_json(memoryctl(stack, "--json", "workspaces", "list"))["workspaces"]
    assert {"slug": source, "admins": 1}.items() <= next(
        w for w in listed if w["slug"] == source
    ).items()

    # bob joins by accepting an invitation, with his own token.
    invited = memoryctl(
        stack, *ws, "invitations", "create", bob_sub, "-g", "read", "-g", "write:personal"
    ).stdout
    assert "invitations accept" in invited
    pending = as_json(memoryctl(stack, "--json", *ws, "invitations", "list"))["invitations"]
    assert [i["subject"] for i in pending] == [bob_sub]
    assert "bob" not in memoryctl(stack, *ws, "members", "list").stdout  # not yet
    member = as_json(
        memoryctl(
            stack, "--json", "--as", "bob", "-w", source, "invitations", "accept", pending[0]["id"]
        )
    )
    assert member["handle"] == "bob" and member["grants"] == ["read", "write:personal"]
    table = memoryctl(stack, *ws, "members", "list").stdout
    assert "members" in table and "alice" in table and "bob" in table
    bad = memoryctl(stack, *ws, "members", "set", bob_sub, "-g", "fly", check=False)
    assert bad.returncode == 1 and "grants.0" in bad.stderr

    key = as_json(memoryctl(stack, "--json", *ws, "keys", "create", "ci", "-s", "memory/read"))
    assert key["client_secret"] and key["scopes"] == ["memory/read"]
    assert client_token(stack, key["client_id"], key["client_secret"]).status_code == 200
    keys = as_json(memoryctl(stack, "--json", *ws, "keys", "list"))["agent_keys"]
    assert [k["client_id"] for k in keys] == [key["client_id"]]
    assert (keys[0]["created_by"], keys[0]["created_by_kind"]) == ("alice", "person")
    memoryctl(stack, *ws, "keys", "revoke", key["client_id"])
    assert client_token(stack, key["client_id"], key["client_secret"]).status_code == 401

    memoryctl(stack, *ws, "contexts", "set", "dm:a-b", "-m", alice_sub, "-m", bob_sub)
    contexts = as_json(memoryctl(stack, "--json", *ws, "contexts", "list"))
    assert contexts["contexts"][0]["members"] == sorted([alice_sub, bob_sub])
    fixed = memoryctl(stack, *ws, "contexts", "set", "dm:a-b", "-m", alice_sub, check=False)
    assert fixed.returncode == 1 and "dm_participants_fixed" in fixed.stderr
    # A DM between others: alice registers it, but who is in it is not hers to list...
    memoryctl(stack, *ws, "contexts", "set", "dm:bob-only", "-m", bob_sub)
    assert "not yours to see" in memoryctl(stack, *ws, "contexts", "list").stdout
    # ...nor to change; she may delete it wholesale (it holds nothing here).
    changed = memoryctl(stack, *ws, "contexts", "set", "dm:bob-only", "-m", alice_sub, check=False)
    assert changed.returncode == 1 and "private_context_members" in changed.stderr
    assert memoryctl(stack, *ws, "contexts", "delete", "dm:bob-only", check=False).returncode == 1
    emptied = as_json(memoryctl(stack, "--json", *ws, "contexts", "delete", "dm:bob-only", "--yes"))
    assert emptied == {"deleted": "dm:bob-only", "records": 0, "revisions_purged": 0}
    assert as_json(memoryctl(stack, "--json", *ws, "memory", "off")) == {"enabled": False}
    assert as_json(memoryctl(stack, "--json", *ws, "memory", "on")) == {"enabled": True}

    # Records in three contexts, exported and imported into an empty workspace.
    alice = stack.info["tokens"]["alice"]
    write(stack, alice, source, "workspace", "memory://workspace/notes/a.md", "# A\nalpha")
    write(stack, alice, source, "channel:eng", "memory://workspace/notes/b.md", "# B\nbeta")
    write(stack, alice, source, "dm:a-b", "memory://workspace/notes/c.md", "# C\ngamma")
    write(
        stack,
        alice,
        source,
        "workspace",
        "memory://workspace/skills/s/SKILL.md",
        "---\nname: s\ndescription: A skill\n---\nsteps",
    )
    folder = tmp_path / "export"
    exported = memoryctl(stack, "--json", *ws, "export", str(folder), "--all-contexts")
    assert as_json(exported)["records"] == 4 and "exporting" in exported.stderr  # the bar
    assert (folder / "workspace/skills/s/SKILL.md").read_text().startswith("---\nname: s")

    memoryctl(
        stack,
        "workspaces",
        "create",
        target,
        "--admin-subject",
        alice_sub,
        "--admin-handle",
        "alice",
        "--memory-on",
    )
    there = ("--as", "alice", "--workspace", target)
    early = memoryctl(stack, "--json", *there, "import", str(folder), check=False)
    assert early.returncode == 3  # the DM is not registered there yet: skipped, reported
    assert as_json(early)["skipped"] == 1 and as_json(early)["created"] == 3
    again_invited = as_json(
        memoryctl(stack, "--json", *there, "invitations", "create", bob_sub, "-g", "read")
    )
    memoryctl(stack, "--as", "bob", "-w", target, "invitations", "accept", again_invited["id"])
    memoryctl(stack, *there, "contexts", "set", "dm:a-b", "-m", alice_sub, "-m", bob_sub)
    rest = as_json(memoryctl(stack, "--json", *there, "import", str(folder)))
    assert (rest["created"], rest["unchanged"]) == (1, 3)
    again = as_json(memoryctl(stack, "--json", *there, "import", str(folder)))
    assert (again["created"], again["unchanged"], again["conflict"]) == (0, 4, 0)
    copy = tmp_path / "copy"
    memoryctl(stack, "--json", *there, "export", str(copy), "--all-contexts")
    original = {p.relative_to(folder): p for p in folder.rglob("*.md")}
    copied = {p.relative_to(copy): p for p in copy.rglob("*.md")}
    assert original.keys() == copied.keys()
    from memory_cli.transfer import parse

    for name, path in original.items():
        meta, content = parse(path.read_text())
        meta2, content2 = parse(copied[name].read_text())
        assert content == content2
        assert (meta["uri"], meta["context"], meta["kind"]) == (
            meta2["uri"],
            meta2["context"],
            meta2["kind"],
        )

    trail = as_json(memoryctl(stack, "--json", *ws, "audit", "--all", "--limit", "3"))["events"]
    operations = [e["operation"] for e in trail]
    # Each actor with its kind: the admin a person, the agent key a service.
    kinds = {(e["actor_handle"], e["actor_kind"]) for e in trail if e["actor_handle"]}
    assert ("alice", "person") in kinds
    assert all(kind in ("person", "service") for _, kind in kinds)
    for expected in (
        "workspace.create",
        "member.add",
        "agent_key.create",
        "agent_key.revoke",
        "context.register",
        "context.delete",
        "invitation.create",
        "memory.disable",
        "memory.enable",
        "create",
    ):
        assert expected in operations

    # Erasure of a person, with the pool told too.
    erin_sub, erin = person(stack, f"erin-{tag}")
    # New to the service: no admin adds her; she accepts an invitation and names her
    # handle, which shows in every workspace she joins.
    refused = memoryctl(stack, *ws, "members", "set", erin_sub, "-g", "read", check=False)
    assert refused.returncode == 1 and "404" in refused.stderr and "invite" in refused.stderr
    erins = as_json(
        memoryctl(
            stack,
            "--json",
            *ws,
            "invitations",
            "create",
            erin_sub,
            "-g",
            "read",
            "-g",
            "write:personal",
        )
    )
    as_erin = ("--token", erin, "-w", source, "invitations", "accept", erins["id"])
    unnamed = memoryctl(stack, *as_erin, check=False)
    assert unnamed.returncode == 1 and "required_for_a_new_identity" in unnamed.stderr
    assert mcp_status(stack, erin, source) == 404  # pending: nothing yet
    joined = as_json(memoryctl(stack, "--json", *as_erin, "--handle", f"erin-{tag}"))
    assert joined["handle"] == f"erin-{tag}"
    # Issue 33: the operator's rename cannot give her a member's handle, however spelt.
    taken = memoryctl(stack, "identities", "rename", erin_sub, "--handle", "ALICE", check=False)
    assert taken.returncode == 1 and "taken by another member" in taken.stderr
    renamed = memoryctl(
        stack, "--json", "identities", "rename", erin_sub, "--handle", f"erin2-{tag}"
    )
    assert as_json(renamed)["handle"] == f"erin2-{tag}"
    members = as_json(memoryctl(stack, "--json", *ws, "members", "list"))["members"]
    assert {m["handle"] for m in members if m["subject"] == erin_sub} == {f"erin2-{tag}"}
    # A withdrawn invitation is gone; a service is made known by the operator first.
    service = f"svc{tag}"
    memoryctl(stack, "identities", "add", service, "--handle", "indexer", "--kind", "service")
    doomed = as_json(
        memoryctl(stack, "--json", *ws, "invitations", "create", service, "-g", "read")
    )
    memoryctl(stack, *ws, "invitations", "revoke", doomed["id"])
    assert as_json(memoryctl(stack, "--json", *ws, "invitations", "list"))["invitations"] == []
    write(stack, erin, source, "workspace", "memory://me/notes/private.md", f"ERIN-{tag}")
    assert mcp_status(stack, erin, source) == 200
    refused = memoryctl(stack, "erase", erin_sub, check=False)
    assert refused.returncode == 1 and "--yes" in refused.stderr
    erased = as_json(memoryctl(stack, "--json", "erase", erin_sub, "--yes"))
    assert erased["personal_records"] == 1 and erased["workspaces"] == [source]
    assert erased["identity_provider"] == {"found": True, "signed_out": True, "disabled": True}
    user = stack.aws.client("cognito-idp").admin_get_user(
        UserPoolId=stack.aws.provisioned.user_pool_id, Username=f"erin-{tag}"
    )
    assert user["Enabled"] is False
    assert mcp_status(stack, erin, source) == 404

    gone = as_json(memoryctl(stack, "--json", "workspaces", "delete", target, "--yes"))
    assert gone["records"] == 4
    assert target not in {
        w["slug"] for w in as_json(memoryctl(stack, "--json", "workspaces", "list"))["workspaces"]
    }


def test_the_audit_table_names_the_server_for_what_it_did_itself() -> None:
    from memory_cli.main import _actor

    nil = "00000000-0000-0000-0000-000000000000"
    assert _actor({"actor_handle": None, "actor": nil}) == "(the server)"  # an expiry
    assert _actor({"actor_handle": "alice", "actor": "x"}) == "alice"
    gone = "3f1c0a52-0000-4000-8000-000000000000"  # a writer no longer a member
    assert _actor({"actor_handle": None, "actor": gone}) == gone


def test_embeddings_backfill_and_status(stack) -> None:  # type: ignore[no-untyped-def]
    # The shared stack searches by words alone; the operator backfills with the local
    # model (EMBEDDER unset: make dev's), then the status shows what it made.
    token = stack.info["tokens"]["alice"]
    write(stack, token, "acme", "workspace", "memory://workspace/notes/embed-me.md", "To embed")
    done = as_json(memoryctl(stack, "--json", "embeddings", "backfill", "--limit", "64"))
    assert done["model"].startswith("all-MiniLM-L6-v2@") and done["embedded"] >= 1
    status = as_json(memoryctl(stack, "--json", "embeddings", "status"))
    assert status["by_model"][f"{done['model']} (384)"] >= done["embedded"]
    assert status["waiting"] == done["waiting"]
