"""Test infrastructure: one real PostgreSQL per test session, and one local stack.

``DATABASE_URL`` (a role that may create roles and databases) when set; otherwise a
private embedded server under ``.tmp/`` that is removed afterwards. The database is
provisioned by ``memory_server.data.provision``, as every deployment is.
"""

from __future__ import annotations

import fcntl
import os
import secrets
import tempfile
import uuid
from collections.abc import Generator, Iterator
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


# -- the order files go to the workers ----------------------------------------------
#
# pytest-xdist gives each worker a whole file at a time, in collection order (pyproject's
# ``testpaths``: the packages without the shared local stack first), the next one when
# the worker is nearly done. Two changes to that order, so that neither worker is left
# alone with a long file at the end of the run:
#
# - ``tests/upgrade`` (the database server only, no stack) goes with the packages
#   without the stack, not after the proofs.
# - Within each of the two phases (without the stack, then with it), the longest files
#   go first (``LONG_FILES``), the rest keep their order after them. xdist gives a
#   worker its next file as soon as two or fewer of its tests are left, so a worker
#   starting a file of one long test takes the next file along at once: the file of
#   one long test is followed by one of many short tests, never by another long one
#   (the two isolation modules on one worker made that worker's last three minutes).
#
# Every file without the stack still goes out before any file with it, so a worker
# never runs a local-emulation test (which inspects process-wide emulated AWS state)
# after it has started its stack.

STACK_PACKAGES = ("admin", "cli", "e2e", "proof")  # they take the session's dev_stack
LONG_FILES = (  # measured with --durations (docs/endpoint.md)
    "tests/local/test_dev_process.py",
    "tests/upgrade/test_upgrade.py",
    "tests/proof/test_isolation_reads.py",  # one test, 80 s
    "tests/proof/test_hostile_input.py",  # 32 tests, 22 s: goes along with it
    "tests/proof/test_isolation.py",
    "tests/cli/test_memoryctl.py",
    "tests/e2e/test_console.py",
    "tests/proof/test_racing_clients.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONG_FILES)}

    def key(item: pytest.Item) -> tuple[bool, int]:
        path = item.path.relative_to(ROOT).as_posix()
        return path.split("/")[1] in STACK_PACKAGES, rank.get(path, len(LONG_FILES))

    items.sort(key=key)  # stable: the rest keep their order


# -- tests that time the machine run alone ------------------------------------------
#
# Under pytest-xdist (pyproject.toml) three workers share the machine's cores. A test
# marked ``alone`` asserts how fast something answers, so it runs while the other
# workers wait: every test holds the run's "main" lock shared, an ``alone`` test
# holds it exclusively. The "gate" lock is taken first by all, so a waiting
# ``alone`` test is not starved by the other workers' next tests.


def _run_locks(config: pytest.Config) -> tuple[int, int] | None:
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if run is None:  # one process: nothing runs beside a test
        return None
    locks: tuple[int, int] | None = getattr(config, "_run_locks", None)
    if locks is None:
        base = Path(tempfile.gettempdir()) / f"memory-tests-{run}"
        flags = os.O_RDWR | os.O_CREAT
        locks = (os.open(f"{base}.gate", flags, 0o600), os.open(f"{base}.main", flags, 0o600))
        config._run_locks = locks  # type: ignore[attr-defined]
    return locks


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None]:
    locks = _run_locks(item.config)
    if locks is None:
        return (yield)
    gate, main = locks
    alone = item.get_closest_marker("alone") is not None
    fcntl.flock(gate, fcntl.LOCK_EX)
    try:
        fcntl.flock(main, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
    finally:
        if not alone:
            fcntl.flock(gate, fcntl.LOCK_UN)
    try:
        return (yield)
    finally:
        fcntl.flock(main, fcntl.LOCK_UN)
        if alone:
            fcntl.flock(gate, fcntl.LOCK_UN)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """A worker that has finished needs its locks no more, and the other keeps the
    files it opened: the first to finish removes them."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if run is not None:
        for suffix in (".gate", ".main"):
            Path(tempfile.gettempdir(), f"memory-tests-{run}{suffix}").unlink(missing_ok=True)


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
