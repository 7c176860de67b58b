"""Test infrastructure: one real PostgreSQL per test session.

``DATABASE_URL`` (a role that may create roles and databases) when set; otherwise a
private embedded server under ``.tmp/`` that is removed afterwards.
"""

from __future__ import annotations

import os
import secrets
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from memory_local.postgres import EmbeddedPostgres
from memory_server import migrate
from memory_server.db import Database
from memory_server.store import Store

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Cluster:
    admin_url: str
    owner_url: str
    runtime_url: str
    auditor_url: str
    passwords: dict[str, str]


def _with_credentials(url: str, user: str, password: str, database: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    netloc = f"{user}:{password}@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, f"/{database}", parts.query, ""))


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    server = None
    admin_url = os.environ.get("DATABASE_URL")
    if not admin_url:
        server = EmbeddedPostgres(ROOT / ".tmp" / f"pytest-{os.getpid()}", durable=False)
        admin_url = server.start()
    database = f"memtest_{uuid.uuid4().hex[:12]}"
    try:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{database}"')
        owner_password, runtime_password = secrets.token_urlsafe(16), secrets.token_urlsafe(16)
        db_admin_url = _with_credentials(
            admin_url,
            urlsplit(admin_url).username or "postgres",
            urlsplit(admin_url).password or "",
            database,
        )
        with psycopg.connect(db_admin_url, autocommit=True) as admin:
            migrate.bootstrap(
                admin, owner_password=owner_password, runtime_password=runtime_password
            )
        owner_url = _with_credentials(admin_url, migrate.OWNER_ROLE, owner_password, database)
        runtime_url = _with_credentials(admin_url, migrate.RUNTIME_ROLE, runtime_password, database)
        with psycopg.connect(owner_url) as owner:
            migrate.migrate(owner, ROOT / "infra" / "migrations")
        auditor_url = _with_credentials(admin_url, migrate.AUDITOR_ROLE, runtime_password, database)
        passwords = {
            "owner": owner_password,
            "runtime": runtime_password,
            "auditor": runtime_password,
        }
        yield Cluster(db_admin_url, owner_url, runtime_url, auditor_url, passwords)
    finally:
        if server is not None:
            server.destroy()
        else:
            with psycopg.connect(admin_url, autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


@pytest.fixture(scope="session")
def database(cluster: Cluster) -> Iterator[Database]:
    db = Database(cluster.runtime_url, min_size=2, max_size=70)
    yield db
    db.close()


@pytest.fixture(scope="session")
def store(database: Database) -> Store:
    return Store(database, cursor_secret=secrets.token_bytes(32))


@pytest.fixture
def owner(cluster: Cluster) -> Iterator[psycopg.Connection]:
    with psycopg.connect(cluster.owner_url, autocommit=True) as conn:
        yield conn


@pytest.fixture
def world(store: Store, owner: psycopg.Connection):  # type: ignore[no-untyped-def]
    from tests.support import World

    return World(store, owner)
