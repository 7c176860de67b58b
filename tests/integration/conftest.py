"""Integration fixtures beyond the session database (tests/conftest.py)."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from memory_server.data.migrate import drop_database
from memory_server.data.provision import Passwords, provision

from tests.conftest import ROOT, Cluster

INFRA = ROOT / "infra"


@pytest.fixture
def scratch_database(cluster: Cluster) -> Iterator[str]:
    """The owner URL of a database of its own on the session's server, provisioned from
    ``infra/`` (for tests that change its schema), dropped afterwards. The roles are
    server-wide: it keeps the session's passwords."""
    database = f"memscratch_{uuid.uuid4().hex[:12]}"
    passwords = Passwords(cluster.passwords["owner"], cluster.passwords["runtime"])
    made = provision(cluster.admin_url, passwords, database=database)
    try:
        yield made.owner_url
    finally:
        drop_database(cluster.admin_url, database)


def copy_infra(target: Path) -> Path:
    """A copy of the SQL of ``infra/`` under ``target`` (``migrations`` and, next to
    it, ``schema``); returns the migrations folder, as ``migrate.migrate`` takes it."""
    for folder in ("migrations", "schema"):
        shutil.copytree(INFRA / folder, target / folder)
    return target / "migrations"
