"""Stand a database up for the service: the database, its roles, its schema.

One helper for everything that provisions: the migrations function (the deployed
stack's custom resource), ``make dev``, the test session and the benchmarks. Given
an administrative connection string (a superuser locally, the cluster's master user
in AWS) and a database, ``provision`` creates the database when it is missing,
bootstraps the roles with the given passwords (``migrate.bootstrap``), applies the
pending migrations and the changed current-state files as the owner role
(``migrate.migrate``) and returns each role's connection string. Every step is
idempotent, so a re-run applies nothing and only re-sets the role passwords.

Role passwords are cluster-wide: callers sharing a server must pass the passwords
already in use, or every other user of the roles loses its connections.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from memory_server.data import migrate

Connect = migrate.Connect


@dataclass(frozen=True)
class Passwords:
    owner: str
    runtime: str
    auditor: str | None = None  # None: the auditor role shares the runtime password

    @classmethod
    def generate(cls, *, auditor: bool = True) -> Passwords:
        """Fresh random passwords (URL-safe, so they need no quoting)."""
        return cls(
            owner=secrets.token_urlsafe(16),
            runtime=secrets.token_urlsafe(16),
            auditor=secrets.token_urlsafe(16) if auditor else None,
        )

    @property
    def effective_auditor(self) -> str:
        return self.auditor or self.runtime


@dataclass(frozen=True)
class Provisioned:
    """Connection strings for the provisioned database, in the form given (URL or
    ``key=value``)."""

    database: str
    admin_url: str  # the administrator, connected to this database
    owner_url: str
    runtime_url: str
    auditor_url: str
    applied: list[str] = field(default_factory=list)  # migrations, schema files applied now


def with_role(dsn: str, user: str, password: str, database: str | None = None) -> str:
    """``dsn`` with another user and password (and database, if given).

    A URL stays a URL (what people paste into ``psql``), with the credentials
    percent-encoded; a ``key=value`` string stays one.
    """
    if "://" not in dsn:
        extra = {"dbname": database} if database is not None else {}
        return make_conninfo(dsn, user=user, password=password, **extra)
    parts = urlsplit(dsn)
    netloc = f"{quote(user, safe='')}:{quote(password, safe='')}@{_host_port(dsn)}"
    path = f"/{quote(database, safe='')}" if database is not None else parts.path
    return urlunsplit((parts.scheme, netloc, path, parts.query, ""))


def with_database(dsn: str, database: str) -> str:
    """``dsn`` connected to another database, with the same credentials."""
    if "://" not in dsn:
        return make_conninfo(dsn, dbname=database)
    parts = urlsplit(dsn)
    return urlunsplit((parts.scheme, parts.netloc, f"/{quote(database, safe='')}", parts.query, ""))


def _host_port(url: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    return f"{host}:{parts.port}" if parts.port else host


def database_of(dsn: str) -> str:
    """The database a connection string names (libpq's default: the user's name)."""
    params = conninfo_to_dict(dsn)
    return str(params.get("dbname") or params.get("user") or "postgres")


def provision(
    admin: str,
    passwords: Passwords,
    *,
    database: str | None = None,
    migrations_dir: Path | None = None,
    connect: Connect = psycopg.connect,
) -> Provisioned:
    """Database, roles and schema, ready for the service.

    ``database``: created when missing; ``None`` means the one ``admin`` names,
    which must exist (a cluster's own database: its master user may not be allowed
    to create one). ``migrations_dir`` defaults to the checkout's
    ``infra/migrations``; the migrations function passes its layer's copy. The
    current-state files are the ``schema`` folder next to it (``migrate.schema_dir``).
    """
    target = database or database_of(admin)
    if database is not None and database != database_of(admin):
        migrate.ensure_database(admin, database, connect=connect)
    admin_db = admin if database is None else with_database(admin, target)
    with connect(admin_db, autocommit=True) as conn:
        migrate.bootstrap(
            conn,
            owner_password=passwords.owner,
            runtime_password=passwords.runtime,
            auditor_password=passwords.effective_auditor,
        )
    owner_url = with_role(admin, migrate.OWNER_ROLE, passwords.owner, target)
    with connect(owner_url) as owner:
        applied = migrate.migrate(owner, migrations_dir or migrate.default_migrations_dir())
    return Provisioned(
        database=target,
        admin_url=admin_db,
        owner_url=owner_url,
        runtime_url=with_role(admin, migrate.RUNTIME_ROLE, passwords.runtime, target),
        auditor_url=with_role(admin, migrate.AUDITOR_ROLE, passwords.effective_auditor, target),
        applied=applied,
    )
