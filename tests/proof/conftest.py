"""The proofs' local stack: ``make dev``'s DevStack on the test server.

The session's stack (``dev_stack`` in tests/conftest.py, shared with ``tests/e2e``
and ``tests/admin``): the whole service on loopback, reached with the official MCP
client over HTTP, plus the inspection handles the proofs need (the owner role, the
auditor role, the cluster's superuser for killing backends). Proofs tag their
records with ``run_id`` and compare before/after, so earlier packages' data on the
same stack does not disturb them.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from memory_local.dev import DevStack

from tests.builders import SharedStack, using_stack
from tests.proof.harness import Inspector
from tests.proof.isolation import Lifecycle, Marker, lifecycle_of, write_markers


@pytest.fixture(scope="package")
def stack(dev_stack: SharedStack) -> Iterator[DevStack]:
    with using_stack(dev_stack) as dev:
        yield dev


@pytest.fixture(scope="package")
def inspector(stack: DevStack, cluster: Any) -> Iterator[Inspector]:
    with psycopg.connect(stack.info["database_url"], autocommit=True) as owner:
        yield Inspector(stack, owner, auditor_password=cluster.passwords["auditor"])


@pytest.fixture(scope="module")
def run_id() -> str:
    """Tags this module's records, so leftovers of other runs and modules never confuse
    a proof."""
    return uuid.uuid4().hex[:10]


# -- the isolation matrix (tests/proof/isolation.py): one set of records per module ----


@pytest.fixture(scope="module")
def markers(stack: DevStack, run_id: str) -> list[Marker]:
    return write_markers(stack, run_id)


@pytest.fixture(scope="module")
def lifecycle(
    stack: DevStack, inspector: Inspector, markers: list[Marker], run_id: str
) -> Iterator[Lifecycle]:
    with lifecycle_of(stack, inspector, run_id) as made:
        yield made
