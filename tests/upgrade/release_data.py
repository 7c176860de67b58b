"""Fill a database through the tools, and describe what each caller can see of it.

Run as a script by tests/upgrade/test_upgrade.py with ONE release's code on the path:
the previous release's (PYTHONPATH at its ``layers/core``) to provision, fill and
describe a database, then today's to describe it again after the upgrade. So it uses
only what both releases have: ``provision``, the operators, ``resolve_caller`` and the
tool table, called as an MCP client's request reaches them.

    python release_data.py fill     ADMIN_URL DATABASE PASSWORDS_JSON  (prints the role URLs)
    python release_data.py describe OWNER_URL RUNTIME_URL OUT_JSON

The description is per caller (workspace x principal x listening context): every
record it lists, what it reads of each (content, revision, provenance, lifecycle), its
history, a search and the briefing; and, as the owner, every row of the data tables.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import psycopg
from memory_server.admin import operators
from memory_server.data.pool import Database
from memory_server.data.provision import Passwords, provision
from memory_server.domain.arguments import BriefArgs
from memory_server.domain.contexts import parse_context
from memory_server.domain.deadline import Deadline
from memory_server.domain.errors import ContextUnavailable, ToolError
from memory_server.domain.grants import ALL_GRANTS, GRANT_SCOPES
from memory_server.operations import embeddings
from memory_server.operations.membership import resolve_caller
from memory_server.operations.memory_brief import memory_brief
from memory_server.operations.store import Store
from memory_server.protocol.tools import ToolTable

ALL_SCOPES = [GRANT_SCOPES[g] for g in ALL_GRANTS]
KINDS = ("memories", "notes", "skills")
NAMESPACES = ("me", "workspace")
CURSOR_SECRET = b"upgrade-test-cursor-secret-32byt"
WORKSPACES = {"acme": True, "globex": True, "initech": False}
# handle: (kind, {workspace: grants}, personal namespace for a service)
PRINCIPALS: dict[str, tuple[str, dict[str, tuple[str, ...]], bool | None]] = {
    "alice": ("person", {"acme": ALL_GRANTS, "globex": ("read",), "initech": ALL_GRANTS}, None),
    "bob": ("person", {"acme": ("read", "write:personal")}, None),
    "carol": ("person", {"globex": ALL_GRANTS, "acme": ("read", "write:shared")}, None),
    "dave": ("person", {"acme": ("read",)}, None),
    "ci-bot": ("service", {"acme": ("read",)}, False),
    "release-bot": ("service", {"acme": ("read", "write:shared")}, False),
    "notes-bot": ("service", {"acme": ALL_GRANTS}, True),
    # Handles the previous release let two members of acme share (as today's rule folds
    # them): another person "Alice" beside alice, and a service "CAROL" beside carol.
    # The upgrade keeps them and their records, and flags them for a rename.
    "Alice": ("person", {"acme": ("read", "write:personal", "write:shared")}, None),
    "CAROL": ("service", {"acme": ("read",)}, False),
}
# The members of acme the upgrade flags: every one sharing a folded handle.
DUPLICATE_HANDLES = {"alice", "Alice", "carol", "CAROL"}
# From this schema version on (migration 0006) a release refuses a handle another member
# of the workspace holds: there the twins take handles of their own.
UNIQUE_HANDLES_SINCE = 6
REGISTERED = {
    "acme": {
        "channel:leads": ["alice", "carol"],
        "dm:alice-release-bot": ["alice", "release-bot"],
        "dm:bob-carol": ["bob", "carol"],
    }
}
CONTEXTS = [
    "workspace",
    "channel:general",
    "channel:general/thread:t1",
    "channel:leads",
    "channel:leads/thread:plan",
    "dm:alice-release-bot",
    "dm:bob-carol",
]
DATA_TABLES = {
    "workspaces": "id",
    "principals": "id",
    "memberships": "workspace_id, principal_id",
    "contexts": "workspace_id, context_key",
    "context_members": "workspace_id, context_key, principal_id",
    "memories": "id",
    "revisions": "memory_id, revision",
    "idempotency_keys": "workspace_id, principal_id, context_key, target, idempotency_key",
    "audit_outbox": "id",
    "invitations": "id",
    "search_embeddings": "memory_id",
    "embedding_queue": "memory_id",
}
# Vectors the previous release stored (from a stand-in model: the upgrade must keep
# them as they are, whatever model made them), for this many records; the rest stay
# queued, as on a stack whose embedder was off or behind.
EMBEDDED = 40


class HashEmbedder:
    """A deterministic stand-in for a model: 8 dimensions from the text's digest."""

    model = "upgrade-test-hash"
    dimensions = 8

    def embed(self, texts: Any) -> list[list[float]]:
        vectors = []
        for text in texts:
            raw = [b - 127.5 for b in hashlib.sha256(text.encode()).digest()[:8]]
            norm = sum(x * x for x in raw) ** 0.5
            vectors.append([x / norm for x in raw])
        return vectors


def subject(handle: str) -> str:
    return f"{handle}-subject"


def stored_handle(handle: str, schema_version: int) -> str:
    """The handle the release stores: a twin's own where the release has the rule."""
    twin = handle in DUPLICATE_HANDLES and not handle.islower()
    return f"{handle}-twin" if twin and schema_version >= UNIQUE_HANDLES_SINCE else handle


class Tools:
    def __init__(self, runtime_url: str) -> None:
        self.db = Database(runtime_url, min_size=1, max_size=2)
        self.store = Store(self.db, cursor_secret=CURSOR_SECRET)
        self.table = ToolTable(self.store)

    def caller(self, workspace: str, handle: str, context: str) -> Any:
        """The caller, or None where it may not call from there (no member, memory
        off, a context it may not listen from)."""
        try:
            resolved = resolve_caller(
                self.db,
                workspace=workspace,
                subject=subject(handle),
                scopes=ALL_SCOPES,
                context=parse_context(None if context == "workspace" else context),
            )
        except ContextUnavailable:
            return None
        if resolved is None or not resolved.memory_enabled:  # the endpoint answers 404
            return None
        return resolved.caller

    def run(self, caller: Any, tool: str, **raw: Any) -> dict[str, Any]:
        return self.table.run(tool, caller, raw, Deadline())

    def attempt(self, caller: Any, tool: str, **raw: Any) -> dict[str, Any]:
        try:
            return self.run(caller, tool, **raw)
        except ToolError as error:
            return {"error": error.code}

    def briefing(self, caller: Any) -> dict[str, Any]:
        """What memory_brief briefs the caller on, in order, before the byte budget
        fits it to a response (the budget's cut depends on what each item carries, and
        a release may add to that: the writer's kind beside its handle)."""
        try:
            brief = memory_brief(self.store, caller, BriefArgs(), Deadline())
        except ToolError as error:
            return {"error": error.code}
        return {
            "pinned": [p.summary["uri"] for p in brief.pinned],
            "recent": [(r["uri"], r["updated_by"]) for r in brief.recent],
            "skills": [s["uri"] for s in brief.skills],
        }


def fill(admin_url: str, database: str, passwords: Passwords) -> dict[str, str]:
    """Provision ``database`` with this release's migrations and fill it."""
    made = provision(admin_url, passwords, database=database)
    owner_url, runtime_url = made.owner_url, made.runtime_url
    with psycopg.connect(owner_url, autocommit=True) as owner:
        version = owner.execute("SELECT memory.schema_version()").fetchone()[0]  # type: ignore[index]
        ids = {
            s: operators.ensure_workspace(owner, s, memory_enabled=on)
            for s, on in WORKSPACES.items()
        }
        pids = {}
        for handle, (kind, memberships, personal) in PRINCIPALS.items():
            pids[handle] = operators.ensure_principal(
                owner,
                kind,  # type: ignore[arg-type]
                subject(handle),
                stored_handle(handle, version),
            )
            for slug, grants in memberships.items():
                operators.set_membership(
                    owner, ids[slug], pids[handle], grants, personal_namespace=personal
                )
        for slug, contexts in REGISTERED.items():
            for key, members in contexts.items():
                operators.register_context(owner, ids[slug], key, [pids[m] for m in members])
    tools = Tools(runtime_url)
    n = 0
    # Records in every namespace and kind, written from every context by each writer.
    for handle in ("alice", "Alice", "bob", "carol", "notes-bot", "release-bot"):
        for context in CONTEXTS:
            caller = tools.caller("acme", handle, context)
            if caller is None:
                continue
            slug = context.replace(":", "-").replace("/", "-")
            for uri in (
                f"memory://me/memories/{slug}/{handle}.md",
                f"memory://me/notes/{slug}/{handle}.md",
                f"memory://workspace/memories/{slug}/{handle}.md",
                f"memory://workspace/notes/{slug}/{handle}.md",
                f"memory://workspace/skills/{slug}-{handle}/SKILL.md",
            ):
                n += 1
                content = (
                    f"---\nname: {slug}-{handle}\ndescription: Skill {n} of {handle}\n---\nStep one.\n"
                    if "/skills/" in uri
                    else f"# Note {n}\n{handle} heard this in {context}: kiwi number {n}.\n"
                )
                tools.attempt(
                    caller,
                    "memory_write",
                    uri=uri,
                    content=content,
                    expected_revision=0,
                    source="upgrade test",
                    pinned=n % 7 == 0,
                    expires_at="2031-01-01T00:00:00Z" if n % 5 == 0 else None,
                )
    alice = tools.caller("acme", "alice", "workspace")
    # Revisions: a record changed twice; a move; a delete (a tombstone revision).
    uri = "memory://workspace/memories/decisions.md"
    tools.run(
        alice, "memory_write", uri=uri, content="# Decisions\nPostgres.\n", expected_revision=0
    )
    tools.run(
        alice, "memory_write", uri=uri, content="# Decisions\nPostgres 16.\n", expected_revision=1
    )
    tools.run(
        alice,
        "memory_write",
        uri=uri,
        content="# Decisions\nAurora.\n",
        expected_revision=2,
        pinned=True,
    )
    moved = "memory://workspace/memories/moved-from.md"
    tools.run(alice, "memory_write", uri=moved, content="to be moved\n", expected_revision=0)
    tools.run(
        alice,
        "memory_move",
        uri=moved,
        new_uri="memory://workspace/memories/moved-to.md",
        expected_revision=1,
    )
    gone = "memory://workspace/notes/gone.md"
    tools.run(alice, "memory_write", uri=gone, content="to be deleted\n", expected_revision=0)
    tools.run(alice, "memory_delete", uri=gone, expected_revision=1)
    # Facts remembered (exactly once, a retry included), and one superseded.
    bob = tools.caller("acme", "bob", "workspace")
    facts = "memory://me/memories/preferences.md"
    for key, fact in (
        ("fact-k-0001", "Prefers short answers"),
        ("fact-k-0002", "Works from Lisbon"),
    ):
        tools.run(bob, "memory_remember", uri=facts, fact=fact, idempotency_key=key)
    tools.run(
        bob,
        "memory_remember",
        uri=facts,
        fact="Prefers short answers",
        idempotency_key="fact-k-0001",
    )
    tools.run(
        bob,
        "memory_remember",
        uri=facts,
        fact="Works from Porto",
        idempotency_key="fact-k-0003",
        supersedes="Works from Lisbon",
    )
    lead = tools.caller("acme", "carol", "channel:leads")
    tools.run(
        lead,
        "memory_remember",
        uri="memory://workspace/memories/leads-facts.md",
        fact="The reorg is announced in May",
        idempotency_key="fact-lead-01",
        expires_at="2030-06-01T00:00:00Z",
    )
    carol = tools.caller("globex", "carol", "workspace")
    tools.run(
        carol,
        "memory_write",
        uri="memory://workspace/memories/vendors.md",
        content="Vendor renews in March.\n",
        expected_revision=0,
    )
    tools.db.close()
    embeddings.backfill(owner_url, HashEmbedder(), batch=8, limit=EMBEDDED)
    return {"owner_url": owner_url, "runtime_url": runtime_url}


def describe(owner_url: str, runtime_url: str) -> dict[str, Any]:
    tools = Tools(runtime_url)
    views: dict[str, Any] = {}
    for workspace in WORKSPACES:
        for handle in PRINCIPALS:
            for context in [*CONTEXTS, "channel:random"]:
                caller = tools.caller(workspace, handle, context)
                key = f"{workspace} {handle} {context}"
                views[key] = None if caller is None else view(tools, caller)
    tools.db.close()
    rows: dict[str, list[Any]] = {}
    with psycopg.connect(owner_url, autocommit=True) as owner:
        for table, order in DATA_TABLES.items():
            found = owner.execute(
                f"SELECT to_jsonb(t) FROM memory.{table} t ORDER BY {order}"
            ).fetchall()
            rows[table] = [r[0] for r in found]
    return {"views": views, "rows": rows}


def view(tools: Tools, caller: Any) -> dict[str, Any]:
    """What one caller sees: every record it lists, each as it reads it."""
    listed: list[str] = []
    for prefix in ("memory://", *(f"memory://{ns}/{kind}/" for ns in NAMESPACES for kind in KINDS)):
        cursor = None
        while True:
            args: dict[str, Any] = {"prefix": prefix, "limit": 50}
            if cursor:
                args["cursor"] = cursor
            page = tools.attempt(caller, "memory_list", **args)
            if "error" in page:
                listed.append(f"{prefix} {page['error']}")
                break
            listed += [item["uri"] for item in page["items"]]
            cursor = page.get("next_cursor")
            if not cursor:
                break
    records = {}
    for uri in sorted(set(listed)):
        if " " in uri:
            continue
        read = tools.attempt(caller, "memory_read", uri=uri, history=True)
        records[uri] = {
            key: read.get(key)
            for key in (
                "id",
                "revision",
                "created_by",
                "updated_by",
                "context",
                "pinned",
                "expires_at",
                "error",
            )
        } | {
            "content": hashlib.sha256(str(read.get("content")).encode()).hexdigest(),
            "history": [
                {k: h.get(k) for k in ("revision", "operation", "by", "at")}
                for h in read.get("history") or []
            ],
        }
    search = tools.attempt(caller, "memory_search", query="kiwi decisions vendor")
    return {
        "listed": sorted(listed),
        "records": records,
        "search": sorted(hit["uri"] for hit in search.get("hits", [])) or search.get("error"),
        "brief": tools.briefing(caller),
    }


def main(argv: list[str]) -> None:
    mode = argv[0]
    if mode == "fill":
        admin_url, database, passwords_json = argv[1:4]
        urls = fill(admin_url, database, Passwords(**json.loads(passwords_json)))
        print(json.dumps(urls))
    elif mode == "describe":
        owner_url, runtime_url, out = argv[1:4]
        Path(out).write_text(json.dumps(describe(owner_url, runtime_url), indent=1, default=str))
    else:
        raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
