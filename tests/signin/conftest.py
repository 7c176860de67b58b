"""Moto on loopback for the management function's tests (Cognito, DynamoDB, the bus)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from memory_local.aws import LocalAws


@pytest.fixture(scope="session")
def signin_aws() -> Iterator[LocalAws]:
    with LocalAws() as aws:
        aws.provision()
        yield aws
