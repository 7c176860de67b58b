"""Database roles and ordered plain-SQL migrations.

``bootstrap`` runs once with an administrative connection (the embedded server's
superuser locally, the cluster's master user in AWS): it creates the migration role
that owns the schema and the runtime role that serves requests. ``migrate`` runs as
the migration role and applies ``infra/migrations/NNNN_*.sql`` in order, each in its
own transaction, recording name and checksum in ``memory.schema_migrations``. A file
that changed after it was applied stops the run: history is never silently rewritten.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql

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


_PRIVILEGED_ATTRIBUTES = (
    "rolsuper",
    "rolcreatedb",
    "rolcreaterole",
    "rolbypassrls",
    "rolreplication",
)


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
    with admin.transaction():
        superuser = _scalar(admin, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
        for role, password in roles:
            exists = _scalar(admin, "SELECT true FROM pg_roles WHERE rolname = %s", role)
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
            if _scalar(admin, "SELECT pg_has_role(%s, %s, 'MEMBER')", role, OWNER_ROLE):
                raise MigrationError(f"{role} must not be a member of {OWNER_ROLE}")
        # On PostgreSQL 16 the creator of a role holds it WITH ADMIN but not SET;
        # INHERIT stays off so the administrator acts as the owner only when it says so.
        needs_set = not superuser and admin.info.server_version >= 160000
        if needs_set and not _scalar(
            admin, "SELECT pg_has_role(current_user, %s, 'SET')", OWNER_ROLE
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
        # Nobody but the owner creates objects anywhere the runtime role looks.
        admin.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        for role, _ in roles:
            admin.execute(
                sql.SQL("ALTER ROLE {} SET search_path = {}").format(
                    sql.Identifier(role), sql.Identifier(SCHEMA)
                )
            )


def _scalar(conn: psycopg.Connection, statement: str, *params: object) -> object:
    row = conn.execute(statement.encode(), params or None).fetchone()
    return row[0] if row else None


def _require_unprivileged(admin: psycopg.Connection, role: str) -> None:
    columns = sql.SQL(", ").join(sql.Identifier(c) for c in _PRIVILEGED_ATTRIBUTES)
    row = admin.execute(
        sql.SQL("SELECT {} FROM pg_roles WHERE rolname = %s").format(columns), (role,)
    ).fetchone()
    held = [name for name, value in zip(_PRIVILEGED_ATTRIBUTES, row or (), strict=False) if value]
    if held:
        raise MigrationError(
            f"role {role} holds {held}; only a superuser can remove them: fix it by hand"
        )


def migrate(owner: psycopg.Connection, directory: Path) -> list[str]:
    """Apply pending migrations as the owner role; returns the names applied."""
    migrations = load_migrations(directory)
    applied_now: list[str] = []
    with owner.transaction():
        owner.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_ID,))
        owner.execute("SET LOCAL search_path = memory")
        owner.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " name text PRIMARY KEY, checksum text NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now())"
        )
        done: dict[str, str] = dict(
            owner.execute("SELECT name, checksum FROM schema_migrations").fetchall()
        )
        for migration in migrations:
            if migration.name in done:
                if done[migration.name] != migration.checksum:
                    raise MigrationError(
                        f"{migration.name} was changed after it was applied; "
                        "add a new migration instead"
                    )
                continue
            with owner.transaction():  # a savepoint: one failing file names itself
                try:
                    owner.execute(migration.text.encode())
                except psycopg.Error as exc:
                    raise MigrationError(f"{migration.name} failed: {exc}") from exc
                owner.execute(
                    "INSERT INTO schema_migrations (name, checksum) VALUES (%s, %s)",
                    (migration.name, migration.checksum),
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
