"""Database roles and ordered plain-SQL migrations.

``bootstrap`` runs once with an administrative connection (the embedded server's
superuser locally, the cluster's master user in AWS): it creates the migration role
that owns the schema and the runtime role that serves requests, in one transaction.
``migrate`` runs as the migration role and applies the pending
``infra/migrations/NNNN_*.sql`` in order, all in ONE transaction under an advisory
lock, each file in a savepoint of its own, recording name and checksum in
``memory.schema_migrations``. A failing file raises ``MigrationError`` naming it, and
the whole run rolls back (files applied before it in the same run too); a concurrent
migrator waits for the lock, then finds them applied. A file that changed after it
was applied stops the run: history is never silently rewritten.

Besides the migration files, this module runs named statements from ``sql/`` (through
:mod:`.statements`) and the role and grant statements composed below.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from memory_server.data import statements as sql_files

OWNER_ROLE = "memory_owner"
RUNTIME_ROLE = "memory_runtime"
AUDITOR_ROLE = "memory_auditor"  # the audit sweeper: two functions, nothing else
SCHEMA = "memory"
_MIGRATION_NAME = re.compile(r"^\d{4}_[a-z0-9_]+\.sql$")
_LOCK_ID = 0x6D656D6F  # advisory lock serialising concurrent migrators


class MigrationError(RuntimeError):
    pass


@dataclass(frozen=True, slots=True)
class Migration:
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
    """Apply pending migrations as the owner role; returns the names applied."""
    migrations = load_migrations(directory)
    applied_now: list[str] = []
    with owner.transaction():  # one transaction for the whole run
        sql_files.run(owner, "migrate_lock", {"lock_id": _LOCK_ID})
        sql_files.run(owner, "migrate_search_path")
        sql_files.run(owner, "migrate_create_ledger")
        done = {row["name"]: row["checksum"] for row in sql_files.rows(owner, "migrate_applied")}
        for migration in migrations:
            if migration.name in done:
                if done[migration.name] != migration.checksum:
                    raise MigrationError(
                        f"{migration.name} was changed after it was applied; "
                        "add a new migration instead"
                    )
                continue
            with owner.transaction():  # a savepoint per file, inside the run's transaction
                try:
                    owner.execute(migration.text.encode())
                except psycopg.Error as exc:
                    raise MigrationError(f"{migration.name} failed: {exc}") from exc
                sql_files.run(
                    owner,
                    "migrate_record",
                    {"name": migration.name, "checksum": migration.checksum},
                )
            applied_now.append(migration.name)
    return applied_now


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
