"""The benchmark's database: server, roles, schema, and a seeded multi-tenant corpus.

Seeding is the slow part, so a seeded database is reused by later runs: its
fingerprint (seed parameters, generator version, the checksum of every migration it
was seeded under) is stored as the database's comment. A database whose parameters
differ, or whose migrations are not an unchanged prefix of today's, is rebuilt; one
that only lacks newer migrations gets them from the migrator, as a deployed
database would.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import random
import re
import sys
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
from memory_local.postgres import admin_server
from memory_server.admin import operators
from memory_server.data.migrate import drop_database
from memory_server.data.provision import Passwords, provision
from memory_server.domain.caller import SHARED_OWNER
from memory_server.domain.grants import ALL_GRANTS
from psycopg import sql

from .corpus import COMMON_TERM, RARE_TERM, TYPICAL_TERM, TextGenerator

ROOT = Path(__file__).resolve().parent.parent
MIGRATIONS = ROOT / "infra" / "migrations"
SEED_VERSION = 2  # bump when the generated corpus changes shape

OTHER_WORKSPACES = 12
PEOPLE_PER_WORKSPACE = 6
CHANNELS = ("C01ENG", "C02OPS", "C03SALES", "C04RANDOM")
THREADS_PER_CHANNEL = 2
WRITE_TARGETS = 100  # records the write benchmark rewrites, in the second workspace
COMMON_SHARE = 0.10
SHARED_SHARE = 0.65
# Where records live: most in the workspace, then channels, threads, the DM.
CONTEXT_SHARES = (("workspace", 0.55), ("channel", 0.28), ("thread", 0.12), ("dm", 0.05))
KIND_SHARES = (("memories", 0.47), ("notes", 0.47), ("skills", 0.06))
FOLDERS = ("projects", "people", "meetings", "runbooks", "decisions", "customers", "howto")
BATCH_ROWS = 50_000
# Index for the search floor (see docs/performance.md): a bench-only GIN index over
# the largest workspace's records, the best index a single-phase query could have.
FLOOR_INDEX = "bench_floor_search_vector"

COPY_COLUMNS = (
    "workspace_id",
    "owner_id",
    "context_key",
    "kind",
    "path",
    "title",
    "body",
    "revision",
    "created_at",
    "created_by",
    "updated_at",
    "updated_by",
    "source",
)


@dataclass(frozen=True, slots=True)
class SeedSpec:
    records: int
    largest: int
    seed: int

    @property
    def database(self) -> str:
        return f"memory_bench_{self.records}_{self.largest}_{self.seed}"

    def fingerprint(self) -> dict[str, Any]:
        return {
            "seed_version": SEED_VERSION,
            "records": self.records,
            "largest": self.largest,
            "seed": self.seed,
            "migrations": [
                [path.name, hashlib.sha256(path.read_bytes()).hexdigest()]
                for path in sorted(MIGRATIONS.glob("*.sql"))
            ],
        }


def reusable_marker(marker: dict[str, Any] | None, expected: dict[str, Any]) -> bool:
    """Was this database completely seeded with these parameters, under migrations
    that are still the first of today's, unchanged?"""
    if marker is None or marker.get("complete") is not True:
        return False
    if any(marker.get(k) != v for k, v in expected.items() if k != "migrations"):
        return False
    seeded = marker.get("migrations")
    current = expected["migrations"]
    return (
        isinstance(seeded, list)
        and 0 < len(seeded) <= len(current)
        and (seeded == current[: len(seeded)])
    )


@dataclass(frozen=True, slots=True)
class Member:
    id: uuid.UUID
    subject: str


@dataclass(slots=True)
class Tenant:
    slug: str
    size: int
    id: uuid.UUID = SHARED_OWNER  # a placeholder until the workspace exists
    people: list[Member] = field(default_factory=list)
    dm_members: tuple[int, int] = (0, 1)

    def person_subject(self, index: int) -> str:
        return f"{self.slug}-person-{index}"


def tenant_layout(spec: SeedSpec) -> list[Tenant]:
    """The largest workspace first, then the others with sizes spread 1.5x to 0.6x."""
    rest = spec.records - spec.largest - WRITE_TARGETS
    if rest < OTHER_WORKSPACES:
        raise SystemExit("--records must exceed --largest by at least a few hundred")
    weights = [1.5 - i / OTHER_WORKSPACES for i in range(OTHER_WORKSPACES)]
    sizes = [int(rest * w / sum(weights)) for w in weights]
    sizes[0] += rest - sum(sizes)
    if max(sizes) > spec.largest:
        print(f"note: another workspace ({max(sizes)}) is larger than --largest", file=sys.stderr)
    tenants = [Tenant("bench-largest", spec.largest)]
    tenants += [Tenant(f"bench-ws-{i + 1:02d}", size) for i, size in enumerate(sizes)]
    return tenants


def thread_key(channel: str, index: int) -> str:
    return f"channel:{channel}/thread:17000000{index:02d}.000100"


def dm_key(tenant_index: int) -> str:
    return f"dm:D{tenant_index:02d}PAIR"


# The benchmark's reader listens from a thread: three ancestor contexts to search.
READER_CONTEXT = thread_key(CHANNELS[0], 0)
WRITER_TENANT = 1  # writes go to the second workspace (the floor index covers the first)


@dataclass(frozen=True, slots=True)
class Cluster:
    admin_url: str  # superuser, connected to the bench database
    owner_url: str
    runtime_url: str
    server_admin_url: str  # superuser, connected to the maintenance database


def server(keep: bool) -> AbstractContextManager[tuple[str, bool]]:
    """An administrative URL: ``DATABASE_URL`` or an embedded server under ``.tmp/``
    (stopped on leaving when ``keep``, else removed).

    Yields the URL and whether the server is ours (embedded).
    """
    return admin_server(ROOT / ".tmp" / "bench-pg", keep=keep)


def stored_fingerprint(server_admin_url: str, database: str) -> dict[str, Any] | None:
    with psycopg.connect(server_admin_url, autocommit=True) as admin:
        row = admin.execute(
            "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = %s",
            (database,),
        ).fetchone()
    if row is None:
        return None
    try:
        marker = json.loads(row[0] or "")
    except json.JSONDecodeError:
        return {}
    return marker if isinstance(marker, dict) else {}


def prepare(
    server_admin_url: str, spec: SeedSpec, *, reseed: bool
) -> tuple[Cluster, dict[str, Any]]:
    """Create or reuse the bench database; returns the cluster and the seed marker."""
    database = spec.database
    expected = spec.fingerprint()
    marker = stored_fingerprint(server_admin_url, database)
    reusable = not reseed and reusable_marker(marker, expected)
    if not reusable:
        if marker is not None:
            print(f"dropping {database} to seed it again", file=sys.stderr)
        drop_database(server_admin_url, database)
    # Created when missing; a reused database only gets the migrations it lacks.
    roles = provision(
        server_admin_url,
        Passwords.generate(auditor=False),
        database=database,
        migrations_dir=MIGRATIONS,
    )
    cluster = Cluster(
        admin_url=roles.admin_url,
        owner_url=roles.owner_url,
        runtime_url=roles.runtime_url,
        server_admin_url=server_admin_url,
    )
    applied = roles.applied
    if reusable:
        assert marker is not None
        newer = f" (migrated since: {', '.join(applied)})" if applied else ""
        print(f"reusing seeded database {database}{newer}", file=sys.stderr)
        return cluster, marker
    started = time.monotonic()
    facts = seed(cluster, spec)
    marker = {
        **expected,
        **facts,
        "complete": True,
        "seed_seconds": round(time.monotonic() - started, 1),
    }
    with psycopg.connect(server_admin_url, autocommit=True) as admin:
        admin.execute(
            sql.SQL("COMMENT ON DATABASE {} IS {}").format(
                sql.Identifier(database), sql.Literal(json.dumps(marker))
            )
        )
    return cluster, marker


def load_tenants(cluster: Cluster, spec: SeedSpec) -> list[Tenant]:
    """The layout with database ids filled in (after seeding or on reuse)."""
    tenants = tenant_layout(spec)
    with psycopg.connect(cluster.admin_url, autocommit=True) as admin:
        for tenant in tenants:
            row = admin.execute(
                "SELECT id FROM memory.workspaces WHERE slug = %s", (tenant.slug,)
            ).fetchone()
            assert row is not None, f"workspace {tenant.slug} missing"
            tenant.id = row[0]
            tenant.people = []
            for index in range(PEOPLE_PER_WORKSPACE):
                subject = tenant.person_subject(index)
                found = admin.execute(
                    "SELECT id FROM memory.principals WHERE subject = %s", (subject,)
                ).fetchone()
                assert found is not None, f"principal {subject} missing"
                tenant.people.append(Member(found[0], subject))
    return tenants


def seed(cluster: Cluster, spec: SeedSpec) -> dict[str, Any]:
    """Seed the corpus; returns facts for the marker (corpus-wide term counts)."""
    tenants = tenant_layout(spec)
    with psycopg.connect(cluster.owner_url, autocommit=True) as owner:
        for index, tenant in enumerate(tenants):
            _create_tenant(owner, tenant, index)
    with psycopg.connect(cluster.admin_url, autocommit=True) as admin:
        select = trigger_select(admin)
        if select is None:
            _progress("search trigger not in the expected shape: seeding row by row")
        _copy_records(admin, tenants, spec, triggers=select is None)
        if select is not None:
            _rebuild_search_documents(admin, cluster.admin_url, select)
        _rebuild_search_statistics(admin)
        _check_search_documents(admin)
        _progress("creating the search-floor index")
        admin.execute("SET maintenance_work_mem = '512MB'")
        admin.execute(
            sql.SQL(
                "CREATE INDEX {} ON memory.memories USING gin (search_vector) "
                "WHERE workspace_id = {}"
            ).format(sql.Identifier(FLOOR_INDEX), sql.Literal(tenants[0].id))
        )
        _progress("VACUUM ANALYZE")
        admin.execute("VACUUM ANALYZE")
        _progress("counting term matches in the corpus")
        counts = _count_terms(admin)
    _progress("seeded")
    return {"corpus_term_matches": counts}


def _create_tenant(owner: psycopg.Connection, tenant: Tenant, index: int) -> None:
    tenant.id = operators.ensure_workspace(owner, tenant.slug, memory_enabled=True)
    tenant.people = []
    for person in range(PEOPLE_PER_WORKSPACE):
        subject = tenant.person_subject(person)
        pid = operators.ensure_principal(owner, "person", subject, f"person{person}")
        operators.set_membership(owner, tenant.id, pid, ALL_GRANTS)
        tenant.people.append(Member(pid, subject))
    service = operators.ensure_principal(owner, "service", f"{tenant.slug}-agent", "agent")
    operators.set_membership(owner, tenant.id, service, ("read", "write:shared"))
    first, second = tenant.dm_members
    operators.register_context(
        owner, tenant.id, dm_key(index), [tenant.people[first].id, tenant.people[second].id]
    )


def _pick(rng: random.Random, shares: tuple[tuple[str, float], ...]) -> str:
    roll = rng.random()
    for name, share in shares:
        roll -= share
        if roll < 0:
            return name
    return shares[-1][0]


@dataclass(frozen=True, slots=True)
class Placement:
    """Forced coordinates for a record (otherwise drawn at random)."""

    owner: int | None  # person index, or None for shared
    context: str
    rare: bool = False  # carries the rare term
    path: str | None = None


_SHARED_HERE = Placement(None, "workspace", rare=True)
# Rare term: four records the reader sees and two it must not see (a colleague's
# personal records) in the largest workspace; two more in another workspace.
RARE_PLACEMENTS = {
    0: [_SHARED_HERE] * 4 + [Placement(1, "workspace", rare=True)] * 2,
    2: [_SHARED_HERE] * 2,
}


class _RowMaker:
    def __init__(self, rng: random.Random, text: TextGenerator, now: datetime) -> None:
        self.rng = rng
        self.text = text
        self.now = now
        self.counter = 0

    def row(
        self, tenant: Tenant, tenant_index: int, placement: Placement | None
    ) -> tuple[object, ...]:
        rng = self.rng
        self.counter += 1
        context = placement.context if placement else _pick(rng, CONTEXT_SHARES)
        if context == "channel":
            context = f"channel:{rng.choice(CHANNELS)}"
        elif context == "thread":
            context = thread_key(rng.choice(CHANNELS), rng.randrange(THREADS_PER_CHANNEL))
        elif context == "dm":
            context = dm_key(tenant_index)
        owner_index: int | None
        if placement is not None:
            owner_index = placement.owner
        elif context.startswith("dm:"):
            # A DM holds shared records and the personal records of its two members.
            owner_index = rng.choice([None, *tenant.dm_members])
        elif rng.random() < SHARED_SHARE:
            owner_index = None
        else:
            owner_index = rng.randrange(len(tenant.people))
        owner = SHARED_OWNER if owner_index is None else tenant.people[owner_index].id
        if owner_index is None:
            writer = rng.choice(tenant.people).id
        else:
            writer = tenant.people[owner_index].id
        kind = "notes" if placement else _pick(rng, KIND_SHARES)
        plant: tuple[str, ...] = (RARE_TERM,) if placement and placement.rare else ()
        if not (placement and placement.path) and rng.random() < COMMON_SHARE:
            plant += (COMMON_TERM,)
        if kind == "skills":
            name = f"{self.text.slug()}-{self.counter}"
            document = self.text.document(plant=plant, skill=name)
            path = f"{name}/SKILL.md"
        else:
            document = self.text.document(plant=plant)
            path = (placement.path if placement else None) or (
                f"{rng.choice(FOLDERS)}/{self.text.slug()}-{self.counter}.md"
            )
        created = self.now - timedelta(seconds=rng.randrange(365 * 86400))
        # Skewed towards recent updates, as in a live workspace.
        updated = created + (self.now - created) * (1 - rng.random() ** 2)
        source = f"slack:{context}" if rng.random() < 0.25 else None
        return (
            tenant.id,
            owner,
            context,
            kind,
            path,
            document.title,
            document.body,
            1,
            created,
            writer,
            updated,
            writer,
            source,
        )


def _rows(tenants: list[Tenant], rng: random.Random) -> Iterator[tuple[object, ...]]:
    maker = _RowMaker(rng, TextGenerator(rng), datetime.now(UTC))
    writer = tenants[WRITER_TENANT]
    for i in range(WRITE_TARGETS):
        target = Placement(None, "workspace", path=f"bench/write-{i:03d}.md")
        yield maker.row(writer, WRITER_TENANT, target)
    # Interleave tenants, as records arriving over time would be: no workspace gets
    # a physically contiguous (and so unrealistically cheap to scan) stretch of heap.
    order = [i for i, t in enumerate(tenants) for _ in range(t.size)]
    rng.shuffle(order)
    seen = [0] * len(tenants)
    for index in order:
        placements = RARE_PLACEMENTS.get(index, [])
        nth = seen[index]
        seen[index] += 1
        yield maker.row(tenants[index], index, placements[nth] if nth < len(placements) else None)


def _copy_records(
    admin: psycopg.Connection, tenants: list[Tenant], spec: SeedSpec, *, triggers: bool
) -> None:
    """COPY every record, normally with triggers off (the search index is then rebuilt
    in bulk).

    ``session_replication_role = replica`` skips ordinary triggers for this session
    only, so an interrupted seed cannot leave the product's trigger disabled.
    """
    _progress("building the sentence pool")
    rows = _rows(tenants, random.Random(spec.seed))
    total = sum(t.size for t in tenants) + WRITE_TARGETS
    if not triggers:
        admin.execute("SET session_replication_role = replica")
    columns = sql.SQL(", ").join(sql.Identifier(c) for c in COPY_COLUMNS)
    copy_sql = sql.SQL("COPY memory.memories ({}) FROM STDIN").format(columns)
    started = time.monotonic()
    done = 0
    while done < total:
        batch = min(BATCH_ROWS, total - done)
        with admin.transaction(), admin.cursor() as cursor, cursor.copy(copy_sql) as copy:
            for row in itertools.islice(rows, batch):
                copy.write_row(row)
        done += batch
        rate = done / (time.monotonic() - started)
        _progress(f"copied {done:,}/{total:,} records ({rate:,.0f}/s)")
    admin.execute("SET session_replication_role = DEFAULT")


# The row the search trigger writes, as it writes it: read from the live trigger
# function, so the bulk rebuild follows whatever the migrations currently define.
_TRIGGER_INSERT = re.compile(
    r"INSERT\s+INTO\s+search_documents(?:\s+AS\s+\w+)?\s*\((?P<columns>[^)]*)\)\s*"
    r"VALUES\s*\((?P<values>.*)\)\s*ON\s+CONFLICT",
    re.IGNORECASE | re.DOTALL,
)


def trigger_select(admin: psycopg.Connection) -> tuple[str, str] | None:
    """(columns, expressions over ``m``) of memory.sync_search_document()'s INSERT, or
    None when its shape is not the plain INSERT … VALUES (NEW.…) ON CONFLICT."""
    row = admin.execute(
        "SELECT prosrc FROM pg_proc WHERE oid = 'memory.sync_search_document()'::regprocedure"
    ).fetchone()
    match = _TRIGGER_INSERT.search(str(row[0])) if row else None
    if match is None:
        return None
    values = re.sub(r"\bNEW\.", "m.", match["values"])
    if re.search(r"\b(OLD|TG_\w+|NEW)\b", values, re.IGNORECASE):
        return None
    return match["columns"], values


def _rebuild_search_documents(
    admin: psycopg.Connection, admin_url: str, select: tuple[str, str]
) -> None:
    """Fill memory.search_documents with INSERT … SELECT, as the trigger would row by row.

    The GIN index is dropped first and re-created from its own definition afterwards:
    building it once is far cheaper than a million incremental insertions. The
    document expression can be costly, and an INSERT does not run in parallel, so
    one connection per core each fills a range of record ids.
    """
    columns, values = select
    # With its comment: the schema file makes the search index again when the comment
    # (the fingerprint of the functions its entries are computed with) is missing.
    indexes = admin.execute(
        "SELECT indexrelid::regclass::text, pg_get_indexdef(indexrelid), "
        "obj_description(indexrelid, 'pg_class') FROM pg_index "
        "WHERE indrelid = 'memory.search_documents'::regclass AND NOT indisprimary"
    ).fetchall()
    with admin.transaction():
        for name, _, _ in indexes:
            admin.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(*name.split("."))))
        # The embeddings' tables refer to the documents (0005_embeddings.sql); the
        # rebuild's trigger queues every record for its embedding again.
        admin.execute(
            "TRUNCATE memory.search_documents, memory.search_embeddings, memory.embedding_queue"
        )
    workers = max(1, min(4, len(os.sched_getaffinity(0))))
    bounds = [uuid.UUID(int=(2**128 * k) // workers) for k in range(workers)]
    ranges = list(zip(bounds, [*bounds[1:], None], strict=True))
    insert = (
        f"INSERT INTO memory.search_documents ({columns}) "
        f"SELECT {values} FROM memory.memories AS m WHERE m.id >= %s"
    )

    def fill(low: uuid.UUID, high: uuid.UUID | None) -> None:
        with psycopg.connect(admin_url, autocommit=True) as conn, conn.transaction():
            # The trigger function's own search_path, for its unqualified names.
            conn.execute("SET LOCAL search_path = memory, pg_temp")
            if high is None:
                conn.execute(insert, (low,))
            else:
                conn.execute(insert + " AND m.id < %s", (low, high))

    _progress(f"rebuilding memory.search_documents ({workers} connections)")
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for future in [pool.submit(fill, low, high) for low, high in ranges]:
            future.result()
    _progress("re-creating the search_documents indexes")
    admin.execute("SET maintenance_work_mem = '512MB'")
    for name, definition, comment in indexes:
        admin.execute(definition)
        if comment is not None:
            admin.execute(
                sql.SQL("COMMENT ON INDEX {} IS {}").format(
                    sql.Identifier(*name.split(".")), sql.Literal(comment)
                )
            )


def _check_search_documents(admin: psycopg.Connection) -> None:
    """The bulk rebuild must equal what the trigger writes: remove a few documents,
    let the trigger write them again (in a transaction rolled back after), compare."""
    columns = admin.execute(
        "SELECT string_agg(quote_ident(attname) || CASE WHEN atttypid = 'tsvector'::regtype "
        "THEN '::text' ELSE '' END, ', ' ORDER BY attnum) FROM pg_attribute "
        "WHERE attrelid = 'memory.search_documents'::regclass AND attnum > 0 "
        "AND NOT attisdropped AND attname NOT IN ('memory_id', 'updated_at')"
    ).fetchone()
    assert columns is not None
    document = f"SELECT {columns[0]} FROM memory.search_documents WHERE memory_id = %s"
    with admin.transaction(force_rollback=True):
        sample = admin.execute(
            "SELECT memory_id FROM memory.search_documents TABLESAMPLE SYSTEM (1) LIMIT 20"
        ).fetchall()
        assert sample, "no search documents"
        for (memory_id,) in sample:
            bulk = admin.execute(document, (memory_id,)).fetchone()
            admin.execute("DELETE FROM memory.search_documents WHERE memory_id = %s", (memory_id,))
            admin.execute(
                "UPDATE memory.memories SET updated_at = updated_at + interval '1 microsecond' "
                "WHERE id = %s",
                (memory_id,),
            )
            redone = admin.execute(document, (memory_id,)).fetchone()
            assert redone == bulk, f"search document of {memory_id} differs from the trigger's"
    count = admin.execute(
        "SELECT (SELECT count(*) FROM memory.memories), "
        "(SELECT count(*) FROM memory.search_documents)"
    ).fetchone()
    assert count is not None and count[0] == count[1], f"row counts differ: {count}"


def _rebuild_search_statistics(admin: psycopg.Connection) -> None:
    """Recount the search statistics, which the statement triggers keep but a COPY with
    triggers off does not (when the schema has them)."""
    exists = admin.execute(
        "SELECT to_regprocedure('memory.search_statistics_rebuild()') IS NOT NULL"
    ).fetchone()
    if exists is not None and exists[0]:
        _progress("recounting memory.search_statistics")
        admin.execute("SELECT memory.search_statistics_rebuild()")


def _count_terms(admin: psycopg.Connection) -> dict[str, int]:
    """Records matching each planted term across the whole corpus (one table scan)."""
    terms = {"rare": RARE_TERM, "typical": TYPICAL_TERM, "common": COMMON_TERM}
    filters = sql.SQL(", ").join(
        sql.SQL(
            "count(*) FILTER (WHERE search_vector @@ websearch_to_tsquery('english', {}))"
        ).format(sql.Literal(term))
        for term in terms.values()
    )
    row = admin.execute(sql.SQL("SELECT {} FROM memory.memories").format(filters)).fetchone()
    assert row is not None
    return dict(zip(terms, row, strict=True))


def _progress(message: str) -> None:
    print(f"[seed {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)
