"""Test infrastructure: one real PostgreSQL per test session, and one local stack.

``DATABASE_URL`` (a role that may create roles and databases) when set; otherwise a
private embedded server under ``.tmp/`` that is removed afterwards. The database is
provisioned by ``memory_server.data.provision``, as every deployment is.
"""

from __future__ import annotations

import os
import secrets
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import psycopg
import pytest
from memory_local.postgres import admin_server
from memory_server.data.migrate import drop_database
from memory_server.data.pool import Database
from memory_server.data.provision import Passwords, provision
from memory_server.operations.store import Store

if TYPE_CHECKING:  # the stack's modules (moto, the gateway) load only when it starts
    from tests.builders import SharedStack

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Cluster:
    admin_url: str
    owner_url: str
    runtime_url: str
    auditor_url: str
    passwords: dict[str, str]


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    with admin_server(ROOT / ".tmp" / f"pytest-{os.getpid()}") as (admin_url, embedded):
        database = f"memtest_{uuid.uuid4().hex[:12]}"
        try:
            # The auditor shares the runtime password (bootstrap's default).
            passwords = Passwords.generate(auditor=False)
            roles = provision(
                admin_url,
                passwords,
                database=database,
                migrations_dir=ROOT / "infra" / "migrations",
            )
            yield Cluster(
                roles.admin_url,
                roles.owner_url,
                roles.runtime_url,
                roles.auditor_url,
                {
                    "owner": passwords.owner,
                    "runtime": passwords.runtime,
                    "auditor": passwords.effective_auditor,
                },
            )
        finally:
            if not embedded:  # an embedded server goes with its databases
                drop_database(admin_url, database)


@pytest.fixture(scope="session")
def dev_stack(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedStack]:
    """``make dev``'s stack on the test server, started once for the whole session and
    shared by ``tests/admin``, ``tests/e2e`` and ``tests/proof`` (each takes it through
    its own package-scoped ``stack`` fixture, which applies its environment)."""
    from tests.builders import running_dev_stack

    with running_dev_stack(cluster, tmp_path_factory.mktemp("stack")) as shared:
        yield shared


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
    from tests.builders import World

    return World(store, owner)
