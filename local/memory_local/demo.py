"""The demo tenants of docs/contract.md §8, seeded idempotently into a dev stack.

Workspaces ``acme`` and ``globex`` (memory on) and ``initech`` (memory off);
people alice, bob, carol; services ci-bot and release-bot; in acme the open
channels ``general`` and ``eng``, the private channel ``leads`` (alice) and the DM
``dm:alice-release-bot``. Tokens are issued fresh on every start.

Runs on every ``make dev``: the ``operators.ensure_*``/``set_*`` calls change (and
audit) only what is not in place yet, so a restart writes nothing new.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import psycopg
from memory_server.admin import operators
from memory_server.data.operators import workspace_has_records
from memory_server.domain.arguments import RememberArgs, WriteArgs
from memory_server.domain.contexts import parse_context
from memory_server.domain.grants import ALL_GRANTS, GRANT_SCOPES
from memory_server.operations import memory_remember, memory_write
from memory_server.operations.membership import resolve_caller
from memory_server.operations.store import Store

from .aws import LocalAws
from .tokens import LocalIssuer

ALL_SCOPES = [GRANT_SCOPES[g] for g in ALL_GRANTS]
WORKSPACES = {"acme": True, "globex": True, "initech": False}
PEOPLE: dict[str, dict[str, tuple[str, ...]]] = {
    "alice": {"acme": ALL_GRANTS, "globex": ("read",), "initech": ALL_GRANTS},
    "bob": {"acme": ("read", "write:personal")},
    "carol": {"globex": ALL_GRANTS},
}
SERVICES: dict[str, tuple[list[str], dict[str, tuple[str, ...]]]] = {
    "ci-bot": (["memory/read"], {"acme": ("read",)}),
    "release-bot": (["memory/read", "memory/write.shared"], {"acme": ("read", "write:shared")}),
}
CONTEXTS = {"acme": {"channel:leads": ["alice"], "dm:alice-release-bot": ["alice", "release-bot"]}}
TOKEN_TTL_S = 12 * 3600


@dataclass
class Demo:
    tokens: dict[str, str]


def seed(owner: psycopg.Connection[Any], aws: LocalAws, issuer: LocalIssuer, store: Store) -> Demo:
    """Create (or refresh) the demo; write sample memories the first time only."""
    provisioned = aws.provisioned
    workspace_ids = {
        slug: operators.ensure_workspace(owner, slug, memory_enabled=on)
        for slug, on in WORKSPACES.items()
    }
    principals: dict[str, tuple[uuid.UUID, str]] = {}
    tokens: dict[str, str] = {}
    for name, memberships in PEOPLE.items():
        sub = aws.create_user(name)
        pid = operators.ensure_principal(owner, "person", sub, name)
        principals[name] = (pid, sub)
        for slug, grants in memberships.items():
            operators.set_membership(owner, workspace_ids[slug], pid, grants)
        tokens[name] = issuer.issue_access_token(
            sub=sub,
            client_id=provisioned.people_client_id,
            scopes=ALL_SCOPES,
            username=name,
            ttl_s=TOKEN_TTL_S,
        )
    alice_sub = principals["alice"][1]
    tokens["alice-readonly"] = issuer.issue_access_token(
        sub=alice_sub,
        client_id=provisioned.people_client_id,
        scopes=["memory/read"],
        username="alice",
        ttl_s=TOKEN_TTL_S,
    )
    for name, (scopes, memberships) in SERVICES.items():
        client_id, _secret = aws.create_agent_client(name, scopes)
        pid = operators.ensure_principal(owner, "service", client_id, name)
        principals[name] = (pid, client_id)
        for slug, grants in memberships.items():
            operators.set_membership(owner, workspace_ids[slug], pid, grants)
        tokens[name] = issuer.issue_access_token(
            sub=client_id, client_id=client_id, scopes=scopes, ttl_s=TOKEN_TTL_S
        )
    for slug, contexts in CONTEXTS.items():
        for key, members in contexts.items():
            operators.register_context(
                owner, workspace_ids[slug], key, [principals[m][0] for m in members]
            )
    if not workspace_has_records(owner, workspace_ids["acme"]):
        _sample_memories(store, principals)
    return Demo(tokens)


def _sample_memories(store: Store, principals: dict[str, tuple[uuid.UUID, str]]) -> None:
    def as_caller(name: str, workspace: str, context: str | None = None) -> Any:
        membership = resolve_caller(
            store.db,
            workspace=workspace,
            subject=principals[name][1],
            scopes=ALL_SCOPES,
            context=parse_context(context),
        )
        assert membership is not None
        return membership.caller

    alice = as_caller("alice", "acme")
    samples = [
        (
            alice,
            "memory://workspace/memories/deploys.md",
            "# Deploys\nProduction deploys happen Tuesday to Thursday, never on Fridays.\n",
        ),
        (
            alice,
            "memory://workspace/skills/release-notes/SKILL.md",
            "---\nname: release-notes\ndescription: Draft release notes from merged changes\n---\n"
            "1. List merged changes since the last tag.\n2. Group them by area.\n",
        ),
        (
            alice,
            "memory://me/notes/one-on-ones.md",
            "# 1:1 notes\nAsk bob about the on-call rota.\n",
        ),
        (
            as_caller("alice", "acme", "dm:alice-release-bot"),
            "memory://workspace/notes/rollout.md",
            "# Rollout\nThe 2.0 rollout starts on the 14th; keep this between us for now.\n",
        ),
        (
            as_caller("carol", "globex"),
            "memory://workspace/memories/vendors.md",
            "# Vendors\nGlobex renews its data vendor contract in March.\n",
        ),
    ]
    for caller, uri, content in samples:
        memory_write(
            store,
            caller,
            WriteArgs(
                uri=uri, content=content, expected_revision=0, source="demo seed", context=None
            ),
        )
    memory_remember(
        store,
        as_caller("bob", "acme"),
        RememberArgs(
            uri="memory://me/memories/preferences.md",
            fact="Prefers short answers",
            idempotency_key="demo-seed-bob-0001",
            source="demo seed",
            context=None,
        ),
    )
