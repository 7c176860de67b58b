"""Database roles, ordered plain-SQL migrations, and the schema's current-state files.

``bootstrap`` runs once with an administrative connection (the embedded server's
superuser locally, the cluster's master user in AWS): it creates the migration role
that owns the schema and the runtime role that serves requests, in one transaction.
``migrate`` runs as the migration role, all in ONE transaction under an advisory lock:

- the pending ``infra/migrations/NNNN_*.sql`` (tables, indexes, table privileges), in
  order, each once, each in a savepoint of its own, recorded with its checksum in
  ``memory.schema_migrations``. A file that changed after it was applied stops the
  run: history is never silently rewritten. A ledger naming migrations that are no
  longer files (a database made before the migrations were folded into a baseline)
  stops it too, saying how to start afresh;
- then the current-state files ``infra/schema/NN_*.sql`` (functions, policies,
  triggers, grants on functions), found next to the migrations folder: like Flyway's
  repeatable migrations, applied in name order whenever one is new, changed or gone,
  or a migration was applied in this run, and recorded with their checksums in
  ``memory.schema_files``. A ``{{NAME}}`` in them is a value of :mod:`.limits`
  (``schema_values``), put in before the checksum is taken, so a changed limit applies
  them again.

A failing file raises ``MigrationError`` naming it, and the whole run rolls back
(files applied before it in the same run too); a concurrent migrator waits for the
lock, then finds them applied.

Besides these files, this module runs named statements from ``sql/`` (through
:mod:`.statements`), the role and grant statements composed below, and the few
statements of the schema files' ledger (``migrate_schema_*``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from memory_server.data import statements as sql_files
from memory_server.domain import limits

OWNER_ROLE = "memory_owner"
RUNTIME_ROLE = "memory_runtime"
AUDITOR_ROLE = "memory_auditor"  # the audit sweeper: two functions, nothing else
SCHEMA = "memory"
_MIGRATION_NAME = re.compile(r"^\d{4}_[a-z0-9_]+\.sql$")
_SCHEMA_FILE_NAME = re.compile(r"^\d{2}_[a-z0-9_]+\.sql$")
_PLACEHOLDER = re.compile(r"\{\{([A-Za-z0-9_]*)\}\}")
_DEFINED_FUNCTION = re.compile(r"^CREATE\s+OR\s+REPLACE\s+FUNCTION\s+(\w+)\s*\(", re.M | re.I)
_LOCK_ID = 0x6D656D6F  # advisory lock serialising concurrent migrators

# The schema version this code serves: the number of the newest migration in
# infra/migrations (tests/integration/test_migrations.py holds the two together). The
# service checks it at start (``require_version``): a database that is older has not
# been migrated yet, one that is newer was upgraded by a later release.
SCHEMA_VERSION = 7


class MigrationError(RuntimeError):
    pass


class SchemaAhead(MigrationError):
    """The database was migrated by a later release than this code: migrations never
    run backwards, so there is nothing this release may apply."""


class SchemaVersionError(RuntimeError):
    """The database's schema version is not the one this code serves."""


def version_of(name: str) -> int:
    """A migration's version: the number its file name starts with (0004_x.sql: 4)."""
    return int(name[:4])


def require_version(found: int | None, expected: int = SCHEMA_VERSION) -> None:
    """Raise ``SchemaVersionError`` with the way out unless ``found`` is ``expected``.

    ``None`` is a database without ``memory.schema_version()``: one made before schema
    versions existed (version 4 or older), or no schema at all."""
    if found == expected:
        return
    if found is None or found < expected:
        shown = "predates schema versions" if found is None else f"is at version {found}"
        raise SchemaVersionError(
            f"the database schema {shown}; this release serves version {expected}. "
            "Run the migrations first: `make dev` does on start; deployed, the stack's "
            "migrations step does on every deploy (docs/deploy.md, Releases and rollback)"
        )
    raise SchemaVersionError(
        f"the database schema is at version {found}, newer than the version {expected} "
        "this release serves: a later release upgraded it, and migrations never run "
        "backwards. Deploy that release again (roll forward), or restore the snapshot "
        "taken before the upgrade (docs/deploy.md, Releases and rollback)"
    )


@dataclass(frozen=True, slots=True)
class Migration:
    """A numbered migration, or a current-state file as it is applied (rendered)."""

    name: str
    text: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()


def load_migrations(directory: Path) -> list[Migration]:
    files = sorted(p for p in directory.iterdir() if p.suffix == ".sql")
    bad = [p.name for p in files if not _MIGRATION_NAME.match(p.name)]
    if bad:
        raise MigrationError(f"migration file names must look like 0001_name.sql: {bad}")
    return [Migration(p.name, p.read_text(encoding="utf-8")) for p in files]


def schema_dir(migrations_dir: Path) -> Path:
    """The current-state files' folder: ``schema`` next to the migrations folder (as in
    ``infra/``, and in the migrations function's layer)."""
    return migrations_dir.parent / "schema"


def load_schema_files(directory: Path) -> list[Migration]:
    """The current-state files in name order, rendered (``render``)."""
    if not directory.is_dir():
        raise MigrationError(f"no schema folder at {directory} (infra/schema, next to migrations)")
    files = sorted(p for p in directory.iterdir() if p.suffix == ".sql")
    bad = [p.name for p in files if not _SCHEMA_FILE_NAME.match(p.name)]
    if bad or not files:
        raise MigrationError(f"schema file names must look like 10_name.sql: {bad or 'none'}")
    values = schema_values()
    return [Migration(p.name, render(p.name, p.read_text(encoding="utf-8"), values)) for p in files]


def render(name: str, text: str, values: dict[str, str]) -> str:
    """``text`` with each ``{{NAME}}`` replaced by its value; an unknown name is an error."""
    unknown = sorted({m for m in _PLACEHOLDER.findall(text) if m not in values})
    if unknown:
        raise MigrationError(f"{name}: no value for {unknown} (migrate.schema_values)")
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], text)


def schema_values() -> dict[str, str]:
    """The values of :mod:`.limits` the schema files name, as SQL literals.

    Read at every call, so that a test can patch a limit. Numbers are written so that
    the rendered text equals what the SQL held before these limits moved here (the
    derived BM25 terms computed in decimal: 1.2 * (1 - 0.75) is 0.3, not
    0.30000000000000004).
    """
    k1 = Decimal(repr(limits.SEARCH_BM25_K1))
    b = Decimal(repr(limits.SEARCH_BM25_B))
    ceilings = tuple(limits.SEARCH_TIER_CEILINGS)
    if not ceilings or list(ceilings) != sorted(set(ceilings)) or not 0 < ceilings[-1] < k1 + 1:
        raise MigrationError("SEARCH_TIER_CEILINGS must ascend, below k1 + 1")
    if len(ceilings) > 25:  # a band is one letter, a to z
        raise MigrationError("SEARCH_TIER_CEILINGS: at most 25 (26 bands)")
    return {
        "SEARCH_BM25_K1_PLUS_1": _literal(k1 + 1),
        "SEARCH_BM25_K1_TIMES_1_MINUS_B": _literal(k1 * (1 - b)),
        "SEARCH_BM25_K1_TIMES_B": _literal(k1 * b),
        "SEARCH_BM25_REFERENCE_LENGTH": _literal(limits.SEARCH_BM25_REFERENCE_LENGTH),
        "SEARCH_TIER_CEILINGS": "{" + ",".join(_literal(c) for c in ceilings) + "}",
        "SEARCH_TOP_TIER": _literal(len(ceilings)),
        "SEARCH_PRIOR_WEIGHT": _literal(limits.SEARCH_PRIOR_WEIGHT),
        "SEARCH_PRIOR_HALF_LIFE_DAYS": _literal(limits.SEARCH_PRIOR_HALF_LIFE_DAYS),
        "SEARCH_RARE_WORD_RECORDS": _literal(limits.SEARCH_RARE_WORD_RECORDS),
        "SEARCH_SEGMENTS_FIRST": _literal(limits.SEARCH_SEGMENTS_FIRST),
        "SEARCH_SEGMENTS_AFTER": _literal(limits.SEARCH_SEGMENTS_AFTER),
        "BRIEF_CONTENT_BYTES": _literal(limits.BRIEF_CONTENT_BYTES),
        "BRIEF_PINNED_ITEMS": _literal(limits.BRIEF_PINNED_ITEMS),
        "BRIEF_RECENT_ITEMS": _literal(limits.BRIEF_RECENT_ITEMS),
        "BRIEF_SKILL_ITEMS": _literal(limits.BRIEF_SKILL_ITEMS),
        "SKILL_HEAD_CHARS": _literal(limits.SKILL_HEAD_CHARS),
    }


def _literal(value: float | Decimal) -> str:
    """A number as an SQL literal: an int as it is, a float as Python writes it (1.0
    stays 1.0), a Decimal without trailing zeros (0.300 is 0.3)."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise MigrationError(f"not a number: {value!r}")
    if isinstance(value, Decimal):
        return format(value.normalize(), "f")
    return repr(value)


def bootstrap(
    admin: psycopg.Connection,
    *,
    owner_password: str,
    runtime_password: str,
    auditor_password: str | None = None,
) -> None:
    """Create (or update) the roles and the schema. Idempotent.

    Works for a superuser (local, tests) and for a cluster master user that is not
    one (Aurora/RDS: CREATEROLE but not SUPERUSER). Such a user may not change a
    role's privileged attributes, even to switch them off, so on a re-run it only
    sets LOGIN and the password and verifies the attributes instead; and on
    PostgreSQL 16 it must grant itself SET on the owner role before creating a
    schema owned by it. The auditor role gets the runtime password unless one is given.
    """
    database = admin.info.dbname
    roles = (
        (OWNER_ROLE, owner_password),
        (RUNTIME_ROLE, runtime_password),
        (AUDITOR_ROLE, auditor_password or runtime_password),
    )
    # Role, grant and schema statements take no bind parameters, so their identifiers
    # and passwords are composed here, quoted by psycopg.sql; each is one line, clearer
    # beside the logic that picks it than as a template in a file of its own.
    with admin.transaction():
        superuser = _yes(sql_files.one(admin, "bootstrap_is_superuser"))
        for role, password in roles:
            exists = _yes(sql_files.one(admin, "bootstrap_role_exists", {"role": role}))
            if exists and not superuser:
                admin.execute(
                    sql.SQL("ALTER ROLE {} LOGIN PASSWORD {}").format(
                        sql.Identifier(role), sql.Literal(password)
                    )
                )
                _require_unprivileged(admin, role)
                continue
            admin.execute(
                sql.SQL(
                    "{} ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS "
                    "NOREPLICATION PASSWORD {}"
                ).format(
                    sql.SQL("ALTER" if exists else "CREATE"),
                    sql.Identifier(role),
                    sql.Literal(password),
                )
            )
        for role in (RUNTIME_ROLE, AUDITOR_ROLE):
            params = {"role": role, "of_role": OWNER_ROLE}
            if _yes(sql_files.one(admin, "bootstrap_role_is_member", params)):
                raise MigrationError(f"{role} must not be a member of {OWNER_ROLE}")
        # On PostgreSQL 16 the creator of a role holds it WITH ADMIN but not SET;
        # INHERIT stays off so the administrator acts as the owner only when it says so.
        needs_set = not superuser and admin.info.server_version >= 160000
        if needs_set and not _yes(
            sql_files.one(admin, "bootstrap_can_set_role", {"role": OWNER_ROLE})
        ):
            admin.execute(
                sql.SQL("GRANT {} TO CURRENT_USER WITH INHERIT FALSE, SET TRUE").format(
                    sql.Identifier(OWNER_ROLE)
                )
            )
        admin.execute(
            sql.SQL("GRANT CONNECT, CREATE ON DATABASE {} TO {}").format(
                sql.Identifier(database), sql.Identifier(OWNER_ROLE)
            )
        )
        for role in (RUNTIME_ROLE, AUDITOR_ROLE):
            admin.execute(
                sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(
                    sql.Identifier(database), sql.Identifier(role)
                )
            )
        admin.execute(
            sql.SQL("CREATE SCHEMA IF NOT EXISTS {} AUTHORIZATION {}").format(
                sql.Identifier(SCHEMA), sql.Identifier(OWNER_ROLE)
            )
        )
        sql_files.run(admin, "bootstrap_revoke_public_create")
        sql_files.run(admin, "bootstrap_create_vector")
        for role, _ in roles:
            admin.execute(
                sql.SQL("ALTER ROLE {} SET search_path = {}").format(
                    sql.Identifier(role), sql.Identifier(SCHEMA)
                )
            )
            # No JIT compilation (on by default where the server is built with LLVM):
            # it would compile a statement again at every execution, milliseconds each,
            # for statements of a few milliseconds. The search's fetch statements come
            # close: their inner join is estimated at 167,578 on the 1,000,000-record
            # corpus (jit_above_cost is 100,000); only their LIMIT keeps them below.
            admin.execute(sql.SQL("ALTER ROLE {} SET jit = off").format(sql.Identifier(role)))


def _yes(row: sql_files.Row | None) -> bool:
    """The answer of a yes/no check: its row's single value (no row: no)."""
    return row is not None and all(row.values())


def _require_unprivileged(admin: psycopg.Connection, role: str) -> None:
    row = sql_files.one(admin, "bootstrap_role_privileges", {"role": role})
    held = [name for name, value in (row or {}).items() if value]
    if held:
        raise MigrationError(
            f"role {role} holds {held}; only a superuser can remove them: fix it by hand"
        )


def migrate(owner: psycopg.Connection, directory: Path) -> list[str]:
    """Apply pending migrations, then the schema files if needed, as the owner role;
    returns the names applied (migrations first)."""
    migrations = load_migrations(directory)
    schema_files = load_schema_files(schema_dir(directory))
    applied_now: list[str] = []
    with owner.transaction():  # one transaction for the whole run
        sql_files.run(owner, "migrate_lock", {"lock_id": _LOCK_ID})
        sql_files.run(owner, "migrate_search_path")
        sql_files.run(owner, "migrate_create_ledger")
        sql_files.run(owner, "migrate_schema_files_ledger")
        done = {row["name"]: row["checksum"] for row in sql_files.rows(owner, "migrate_applied")}
        _refuse_later_history(done, migrations)
        _refuse_unknown_history(done, migrations, directory)
        for migration in migrations:
            if migration.name in done:
                if done[migration.name] != migration.checksum:
                    raise MigrationError(
                        f"{migration.name} was changed after it was applied; "
                        "add a new migration instead"
                    )
                continue
            _apply(owner, migration)
            sql_files.run(
                owner,
                "migrate_record",
                {"name": migration.name, "checksum": migration.checksum},
            )
            applied_now.append(migration.name)
        applied_now += _apply_schema_files(owner, schema_files, changed_tables=bool(applied_now))
    return applied_now


def _apply(owner: psycopg.Connection, migration: Migration) -> None:
    with owner.transaction():  # a savepoint per file, inside the run's transaction
        try:
            owner.execute(migration.text.encode())
        except psycopg.Error as exc:
            raise MigrationError(f"{migration.name} failed: {exc}") from exc


def _refuse_later_history(done: dict[str, str], migrations: list[Migration]) -> None:
    """A ledger holding every migration of this release and more, numbered above its
    newest: a later release migrated this database. Applying this release's schema
    files would put older functions over newer tables, so nothing is applied."""
    newest = max((version_of(m.name) for m in migrations), default=0)
    later = sorted(n for n in done if _MIGRATION_NAME.match(n) and version_of(n) > newest)
    if later and all(m.name in done for m in migrations):
        raise SchemaAhead(
            f"the database schema is at version {version_of(later[-1])} ({later[-1]}), "
            f"newer than this release's {newest}: a later release migrated it, and "
            "migrations never run backwards; nothing was applied. Deploy that release "
            "again, or restore the snapshot taken before the upgrade"
        )


def _refuse_unknown_history(
    done: dict[str, str], migrations: list[Migration], directory: Path
) -> None:
    """A ledger naming migrations that are no files: the database was made by another
    history (before 0001_baseline.sql folded the first twenty into one), and applying
    today's files on top of it would fail obscurely, or worse, half succeed."""
    unknown = sorted(done.keys() - {m.name for m in migrations})
    if unknown:
        shown = ", ".join(unknown[:3]) + (
            f" and {len(unknown) - 3} more" if len(unknown) > 3 else ""
        )
        raise MigrationError(
            f"this database was made by migrations that are not in {directory} ({shown}): "
            "made before the migrations were folded into 0001_baseline.sql, it cannot be "
            "migrated. Nothing was deployed with them; a local database is reset by "
            "stopping `make dev` and removing its data folder: `rm -rf .dev` (or the "
            "folder MEMORY_DEV_DIR names; with DATABASE_URL set, drop its `memory` "
            "database instead), then `make dev` again."
        )


# The schema files' ledger. Created here like schema_migrations (the migrator's own
# table, not the service's); its statements take no identifiers from outside.


def _apply_schema_files(
    owner: psycopg.Connection, files: list[Migration], *, changed_tables: bool
) -> list[str]:
    """Every schema file, in name order, when anything changed: a file new, changed or
    gone, or a migration applied in this run (it may have replaced a table that
    policies and triggers were on). Nothing otherwise.

    All of them, not only the changed ones: a file applied again may drop what a later
    one made (a DROP FUNCTION ... CASCADE takes the policies and triggers that use the
    function), so every file after it would have to be applied again anyway, and all
    of them cost little. Measured on the embedded server: applying the seven files
    again takes 40-90 ms (a fresh database's whole migration 100-130 ms); a run that
    changes nothing reads the ledger and applies nothing (4-8 ms). The search index is
    made again only when a function of its expression changed, whichever files run.
    """
    ledger = sql_files.rows(owner, "migrate_schema_files_applied")
    applied = {row["name"]: row["checksum"] for row in ledger}
    wanted = {f.name: f.checksum for f in files}
    if applied == wanted and not changed_tables:
        return []
    for schema_file in files:
        _apply(owner, schema_file)
        sql_files.run(
            owner,
            "migrate_schema_file_record",
            {"name": schema_file.name, "checksum": schema_file.checksum},
        )
    sql_files.run(owner, "migrate_schema_files_forget", {"names": list(wanted)})
    _refuse_stale_functions(owner, files)
    return [f.name for f in files]


def _refuse_stale_functions(owner: psycopg.Connection, files: list[Migration]) -> None:
    """Every function of the schema is one a schema file defines, as many times (its
    overloads): one taken out of the files, or whose argument types changed, would
    otherwise stay in the database, callable, with its old grants."""
    defined: dict[str, int] = {}
    for schema_file in files:
        for name in _DEFINED_FUNCTION.findall(schema_file.text):
            defined[name] = defined.get(name, 0) + 1
    functions = sql_files.rows(owner, "migrate_schema_functions")
    stale = sorted(
        row["name"] for row in functions if row["overloads"] > defined.get(row["name"], 0)
    )
    if stale:
        raise MigrationError(
            f"functions no schema file defines (any more, or with these arguments): {stale}; "
            "drop them in the schema file that defined them (DROP FUNCTION IF EXISTS ...)"
        )


def default_migrations_dir() -> Path:
    """``infra/migrations`` of a source checkout (the deployment bundles its own copy)."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        candidate = parent / "infra" / "migrations"
        if candidate.is_dir():
            return candidate
    raise MigrationError("infra/migrations not found; pass the directory explicitly")


# -- Databases (identifiers take no bind parameters: composed, like the roles) --

Connect = Callable[..., psycopg.Connection[Any]]  # psycopg.connect, or one that retries


def ensure_database(admin: str, database: str, *, connect: Connect = psycopg.connect) -> bool:
    """Create ``database`` on the server ``admin`` reaches, unless it exists."""
    with connect(admin, autocommit=True) as conn:
        exists = sql_files.one(conn, "database_exists", {"database": database})
        if exists is not None:
            return False
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
    return True


def drop_database(admin: str, database: str, *, connect: Connect = psycopg.connect) -> None:
    """Drop ``database`` if it exists, closing its sessions first."""
    with connect(admin, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(database))
        )
