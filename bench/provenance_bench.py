"""Provenance benchmark: what showing the writer's kind beside its handle costs.

Run as ``python -m bench.provenance_bench``. A read by path and a read's history name
their writers; before the kind, each writer was ``memory.principal_handle`` in the
select list, now ``memory.principal_provenance`` (handle and kind in one look-up) in
the FROM list. This times both forms of the same statement, interleaved (A, B, A,
B, ...) on one connection as the runtime role under row-level security, each in its
own request transaction with the request's settings, on a database of its own (an
embedded server under ``.tmp/``, or ``DATABASE_URL``'s). Only the statement is timed.
Writers alternate between a person and a service so both kinds are looked up.

Results: ``bench/results/provenance.json``; see docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import secrets
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg
from memory_local.postgres import admin_server
from memory_server.admin import operators
from memory_server.data.migrate import drop_database
from memory_server.data.pool import Database, request_settings
from memory_server.data.provision import Passwords, provision
from memory_server.data.records import view
from memory_server.data.statements import query
from memory_server.domain.arguments import WriteArgs, parse_args
from memory_server.domain.caller import Caller
from memory_server.domain.contexts import parse_context
from memory_server.domain.grants import ALL_GRANTS, GRANT_SCOPES
from memory_server.operations.membership import resolve_caller
from memory_server.operations.memory_write import memory_write
from memory_server.operations.store import Store

from bench.timing import RESULTS, percentiles

ROOT = Path(__file__).resolve().parent.parent
SCOPES = [GRANT_SCOPES[g] for g in ALL_GRANTS]

# The statements as the release before the kind sent them (main's files then).
BEFORE = {
    "read_by_path": """
SELECT a.id, a.workspace_id, a.owner_id, a.context_key, a.kind, a.path, a.title, a.body,
       a.revision, a.created_at, a.updated_at, a.source, a.expires_at, a.pinned,
       memory.principal_handle(a.created_by) AS created_by,
       memory.principal_handle(a.updated_by) AS updated_by
FROM memory.address_record(%(workspace_id)s, %(owner_id)s, %(kind)s, %(path)s, %(contexts)s) AS a
""",
    "history": """
SELECT r.revision, r.operation, r.kind, r.path, r.owner_id, r.created_at, r.source,
       memory.principal_handle(r.writer_id) AS writer
FROM memory.revisions AS r
WHERE r.memory_id = %(id)s
  AND r.workspace_id = %(workspace_id)s
  AND r.owner_id = ANY (%(owners)s)
  AND r.context_key = ANY (%(contexts)s)
ORDER BY r.revision DESC
LIMIT %(limit)s
""",
}
AFTER = {"read_by_path": "resolve_address", "history": "history"}


def member(owner: psycopg.Connection[Any], ws: uuid.UUID, kind: str, handle: str) -> str:
    subject = f"{handle}-{uuid.uuid4().hex[:10]}"
    principal = operators.ensure_principal(owner, kind, subject, handle)  # type: ignore[arg-type]
    personal = None if kind == "person" else False  # people always have one
    operators.set_membership(owner, ws, principal, list(ALL_GRANTS), personal_namespace=personal)
    return subject


def caller_of(store: Store, slug: str, subject: str) -> Caller:
    found = resolve_caller(
        store.db, workspace=slug, subject=subject, scopes=SCOPES, context=parse_context("workspace")
    )
    assert found is not None
    return found.caller


def seed(store: Store, callers: list[Caller], records: int) -> list[tuple[str, uuid.UUID]]:
    """``records`` shared notes, each created by one writer and replaced by the other."""
    made = []
    for n in range(records):
        first, second = callers[n % 2], callers[(n + 1) % 2]
        path = f"bench/provenance-{n:05d}.md"
        uri = f"memory://workspace/notes/{path}"
        args = parse_args(
            WriteArgs, {"uri": uri, "content": f"# Note {n}\n", "expected_revision": 0}
        )
        written = memory_write(store, first, args)
        again = parse_args(
            WriteArgs, {"uri": uri, "content": f"# Note {n}\nagain\n", "expected_revision": 1}
        )
        memory_write(store, second, again)
        made.append((path, uuid.UUID(written["id"])))
    return made


def timed(
    conn: psycopg.Connection[Any], caller: Caller, sql: bytes, params: dict[str, Any]
) -> float:
    """One request transaction: settings, then the statement (timed, rows fetched)."""
    with conn.transaction():
        conn.execute(query("request_settings"), request_settings(caller, 3000))
        started = time.perf_counter()
        rows = conn.execute(sql, params).fetchall()
        elapsed = (time.perf_counter() - started) * 1000
    assert rows
    return elapsed


def explain(
    conn: psycopg.Connection[Any], caller: Caller, sql: bytes, params: dict[str, Any]
) -> list[str]:
    """The statement's plan as it ran (EXPLAIN ANALYZE, no timings: they are above)."""
    with conn.transaction():
        conn.execute(query("request_settings"), request_settings(caller, 3000))
        plan = conn.execute(b"EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + sql, params)
        return [str(row[0]) for row in plan.fetchall()]


def run(args: argparse.Namespace) -> dict[str, Any]:
    with admin_server(ROOT / ".tmp" / f"provenance-bench-{os.getpid()}") as (admin_url, embedded):
        database = f"provbench_{uuid.uuid4().hex[:10]}"
        try:
            roles = provision(
                admin_url,
                Passwords.generate(auditor=False),
                database=database,
                migrations_dir=ROOT / "infra" / "migrations",
            )
            db = Database(roles.runtime_url, min_size=1, max_size=2)
            store = Store(db, cursor_secret=secrets.token_bytes(32))
            slug = f"bench-{uuid.uuid4().hex[:8]}"
            with psycopg.connect(roles.owner_url, autocommit=True) as owner:
                ws = operators.ensure_workspace(owner, slug, memory_enabled=True)
                subjects = [member(owner, ws, "person", "ada"), member(owner, ws, "service", "ci")]
            callers = [caller_of(store, slug, s) for s in subjects]
            made = seed(store, callers, args.records)
            db.close()
            reader = callers[0]
            results: dict[str, Any] = {}
            plans: dict[str, Any] = {}
            with psycopg.connect(roles.runtime_url, autocommit=True) as conn:
                for name in ("read_by_path", "history"):
                    sql = {"before": BEFORE[name].encode(), "after": query(AFTER[name])}
                    samples: dict[str, list[float]] = {"before": [], "after": []}
                    for i in range(args.warmup + args.iterations):
                        target = made[i % len(made)]
                        order = ("before", "after") if i % 2 == 0 else ("after", "before")
                        for form in order:
                            ms = timed(conn, reader, sql[form], params(name, reader, target))
                            if i >= args.warmup:
                                samples[form].append(ms)
                    plans[name] = {
                        form: explain(conn, reader, text, params(name, reader, made[0]))
                        for form, text in sql.items()
                    }
                    results[name] = {
                        form: {
                            **{k: round(v, 4) for k, v in percentiles(s).items()},
                            "mean": round(statistics.fmean(s), 4),
                            "n": len(s),
                        }
                        for form, s in samples.items()
                    }
        finally:
            if not embedded:
                drop_database(admin_url, database)
    return {
        "benchmark": "provenance",
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "settings": {
            "records": args.records,
            "iterations": args.iterations,
            "warmup": args.warmup,
            "load_average_at_start": args.load_average,
            "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
        },
        "results": results,
        "plans": plans,
    }


def params(name: str, caller: Caller, target: tuple[str, uuid.UUID]) -> dict[str, Any]:
    path, record_id = target
    if name == "read_by_path":
        return {
            "workspace_id": caller.workspace_id,
            "owner_id": uuid.UUID(int=0),
            "kind": "notes",
            "path": path,
            "contexts": list(caller.context.ancestors),
        }
    return {**view(caller), "id": record_id, "limit": 50}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--iterations", type=int, default=4000)
    parser.add_argument("--warmup", type=int, default=400)
    parser.add_argument("--output", type=Path, default=RESULTS / "provenance.json")
    args = parser.parse_args(argv)
    args.load_average = [round(x, 2) for x in os.getloadavg()]
    report = run(args)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report["settings"]))
    for name, forms in report["results"].items():
        for form, figures in forms.items():
            print(name, form, figures)


if __name__ == "__main__":
    main()
