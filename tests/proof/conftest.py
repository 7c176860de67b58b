"""The proof suite's own local stack: ``make dev``'s DevStack on the test server.

Same shape as ``tests/e2e``'s ``stack`` (which is scoped to that package): the
whole service on loopback, reached with the official MCP client over HTTP, plus
the inspection handles the proofs need (the owner role, the auditor role, the
cluster's superuser for killing backends).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from memory_local.dev import DevStack

from tests.proof.support import Inspector
from tests.support import running_dev_stack


@pytest.fixture(scope="package")
def stack(cluster, tmp_path_factory) -> Iterator[DevStack]:  # type: ignore[no-untyped-def]
    with running_dev_stack(cluster, Path(tmp_path_factory.mktemp("proof")), "proof") as dev:
        yield dev


@pytest.fixture(scope="package")
def inspector(stack: DevStack, cluster: Any) -> Iterator[Inspector]:
    with psycopg.connect(stack.info["database_url"], autocommit=True) as owner:
        yield Inspector(stack, owner, auditor_password=cluster.passwords["auditor"])


@pytest.fixture(scope="package")
def run_id() -> str:
    """Tags this run's records, so leftovers of other runs never confuse a proof."""
    return uuid.uuid4().hex[:10]
