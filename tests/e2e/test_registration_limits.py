"""Registration cannot be exhausted (issue 23, item 3), over HTTP against the local
stack: ``POST /register`` through the API Gateway emulator to the management function,
MCP and admin calls through the deployed authorizer to the MCP function, and the
management function's sweep as its schedule runs it.

Sources are told apart by the address a request comes from: the tests connect from
addresses of their own on the loopback network (127.0.0.0/8), as separate hosts
would. Tokens of a registered client are issued by the local issuer exactly as the
pool would issue them after a sign-in with that client (the sign-in itself is
``tests/e2e/test_oauth.py``'s)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx2
import psycopg
import pytest
from botocore.exceptions import ClientError
from memory_server.admin import operators
from memory_server.domain.grants import MCP_SCOPES
from memory_server.domain.limits import (
    APP_CLIENTS_RESERVED,
    REGISTERED_CLIENT_UNUSED_GRACE_S,
    REGISTRATIONS_PER_SOURCE_PER_HOUR,
)
from memory_server.signin.registry import ClientRecord, SigninTable

from tests.builders import settle_audit
from tests.stack_clients import admin, mcp_status, person
from tests.tls import TLS

REDIRECT = "http://127.0.0.1:47999/callback"  # never listened on


class Clock:
    """The management function's clock, moved by the test (its sweep's "now")."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(stack: Any, monkeypatch: pytest.MonkeyPatch) -> Clock:
    # Real time now, so the MCP function's record of a use (real time) compares with it.
    moved = Clock(time.time())
    monkeypatch.setattr(stack.management, "clock", moved)
    return moved


@pytest.fixture
def from_address(stack: Any) -> Iterator[Callable[[str], httpx2.Client]]:
    """An HTTP client of the stack whose requests come from ``address``."""
    made: list[httpx2.Client] = []

    def client(address: str) -> httpx2.Client:
        http = httpx2.Client(
            base_url=stack.info["api_url"],
            transport=httpx2.HTTPTransport(local_address=address),
            timeout=30,
            verify=TLS,
        )
        made.append(http)
        return http

    yield client
    for http in made:
        http.close()


def register(http: httpx2.Client, name: str = "limits") -> httpx2.Response:
    return http.post("/register", json={"redirect_uris": [REDIRECT], "client_name": name})


def table(stack: Any) -> SigninTable:
    return SigninTable(stack.aws.client("dynamodb"), stack.aws.provisioned.signin_table)


def record(stack: Any, client_id: str) -> ClientRecord | None:
    return next((r for r in table(stack).clients() if r.client_id == client_id), None)


def exists(stack: Any, client_id: str) -> bool:
    try:
        stack.aws.describe_client(client_id)
    except ClientError:
        return False
    return True


def sweep_after_grace(stack: Any, clock: Clock) -> list[str]:
    """The sweep, as its schedule runs it, once the unused grace period is over."""
    clock.now += REGISTERED_CLIENT_UNUSED_GRACE_S + 60
    return list(stack.sweep_clients()["removed"])


@pytest.mark.slow
def test_three_sources_at_their_limit_do_not_lock_anyone_else_out(
    stack: Any, clock: Clock, from_address: Callable[[str], httpx2.Client]
) -> None:
    # The defect: the total (30 an hour) was counted before anything was created, so
    # three sources at their own limit (10 each) locked every new client out.
    clock.now = (int(time.time()) // 3600 + 1) * 3600 + 60  # an hour no other test uses
    made: list[str] = []
    for address in ("127.0.0.11", "127.0.0.12", "127.0.0.13"):
        http = from_address(address)
        answers = [register(http) for _ in range(REGISTRATIONS_PER_SOURCE_PER_HOUR + 5)]
        assert [a.status_code for a in answers] == [201] * REGISTRATIONS_PER_SOURCE_PER_HOUR + [
            429
        ] * 5
        refused = answers[-1]
        assert refused.json()["error"] == "temporarily_unavailable"
        assert 0 < int(refused.headers["retry-after"]) <= 3600
        made += [a.json()["client_id"] for a in answers if a.status_code == 201]
    newcomer = register(from_address("127.0.0.14"))
    assert newcomer.status_code == 201, newcomer.text
    made.append(newcomer.json()["client_id"])
    # None of them was ever used: all gone after the grace period.
    removed = sweep_after_grace(stack, clock)
    assert set(made) <= set(removed)
    assert not any(exists(stack, client_id) for client_id in made)


@pytest.mark.slow
def test_only_a_members_successful_call_keeps_a_registered_client(
    stack: Any, clock: Clock, from_address: Callable[[str], httpx2.Client]
) -> None:
    http = from_address("127.0.0.31")
    outsider_client, member_client, failed_client = (
        register(http, name).json()["client_id"] for name in ("outsider", "member", "failed")
    )
    issuer = stack.gateway.local_issuer
    tag = uuid.uuid4().hex[:8]
    # A user of the pool who belongs to no workspace: the authorizer lets its token
    # through (any client of the pool), the MCP function answers 404.
    outsider = stack.aws.create_user(f"outsider-{tag}")
    outsider_token = issuer.issue_access_token(
        sub=outsider, client_id=outsider_client, scopes=list(MCP_SCOPES)
    )
    for _ in range(3):
        assert mcp_status(stack, outsider_token, "acme") == 404
    # bob, a member of acme only, signed in with another client, calls where he is not
    # a member: a failed call.
    bob = stack.aws.people()["bob"]
    failed_token = issuer.issue_access_token(
        sub=bob, client_id=failed_client, scopes=list(MCP_SCOPES)
    )
    assert mcp_status(stack, failed_token, "globex") == 404
    # bob in acme: a member's successful call.
    member_token = issuer.issue_access_token(
        sub=bob, client_id=member_client, scopes=list(MCP_SCOPES)
    )
    assert mcp_status(stack, member_token, "acme") == 200

    used = record(stack, member_client)
    assert used is not None and used.last_used is not None
    for client_id in (outsider_client, failed_client):
        unused = record(stack, client_id)
        assert unused is not None and unused.last_used is None, client_id

    removed = sweep_after_grace(stack, clock)
    assert outsider_client in removed and failed_client in removed
    assert not exists(stack, outsider_client) and not exists(stack, failed_client)
    assert member_client not in removed and exists(stack, member_client)
    # Its token keeps working; the outsider's client is gone from the pool.
    assert mcp_status(stack, member_token, "acme") == 200


class QuotaPool:
    """The stack's user pool with a quota of app clients, as Cognito enforces one:
    past ``quota`` clients in the pool, CreateUserPoolClient fails with
    LimitExceededException (moto has no quota)."""

    def __init__(self, real: Any, stack: Any, quota: int) -> None:
        self.real, self.stack, self.quota = real, stack, quota

    def count(self) -> int:
        cognito = self.stack.aws.client("cognito-idp")
        pages = cognito.get_paginator("list_user_pool_clients").paginate(
            UserPoolId=self.stack.aws.provisioned.user_pool_id, MaxResults=60
        )
        return sum(len(page["UserPoolClients"]) for page in pages)

    def _room(self) -> None:
        if self.count() >= self.quota:
            raise ClientError(
                {"Error": {"Code": "LimitExceededException", "Message": "app clients"}},
                "CreateUserPoolClient",
            )

    def create_public_client(self, *args: Any) -> str:
        self._room()
        return str(self.real.create_public_client(*args))

    def create_key_client(self, *args: Any) -> tuple[str, str]:
        self._room()
        return self.real.create_key_client(*args)  # type: ignore[no-any-return]

    def delete_app_client(self, client_id: str) -> bool:
        return bool(self.real.delete_app_client(client_id))


@pytest.mark.slow
def test_registration_stops_at_its_ceiling_and_agent_keys_keep_their_room(
    stack: Any,
    clock: Clock,
    from_address: Callable[[str], httpx2.Client],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The defect: registered clients could fill the pool to its quota, after which
    # registration and agent-key creation both failed.
    tag = uuid.uuid4().hex[:8]
    slug = f"ceiling-{tag}"
    sub, token = person(stack, f"cora-{tag}")
    with psycopg.connect(stack.info["database_url"], autocommit=True) as owner:
        operators.create_workspace(
            owner, slug, admin_subject=sub, admin_handle="cora", memory_enabled=True
        )
    management = stack.management
    # A pool with room for three more clients, and registration allowed two more: the
    # third place stays an agent key's.
    pool = QuotaPool(management.cognito, stack, quota=0)
    pool.quota = pool.count() + 3
    monkeypatch.setattr(management, "cognito", pool)
    live = table(stack).live_registered()
    monkeypatch.setattr(management, "app_client_quota", live + 2 + APP_CLIENTS_RESERVED)

    http = from_address("127.0.0.41")
    first, second, third = (register(http, "ceiling") for _ in range(3))
    assert (first.status_code, second.status_code) == (201, 201), (first.text, second.text)
    assert third.status_code == 503, third.text
    assert third.json()["error"] == "temporarily_unavailable"
    assert "registered clients" in third.json()["error_description"]
    assert int(third.headers["retry-after"]) > 0
    assert pool.count() == pool.quota - 1  # the ceiling refused it, not the pool

    with admin(stack, token, slug) as api:
        key = api.post("/agent-keys", json={"name": "bot", "scopes": ["memory/read"]})
        assert key.status_code == 201, key.text
        # Now the pool itself is full: a further key fails as it would at the quota.
        full = api.post("/agent-keys", json={"name": "bot2", "scopes": ["memory/read"]})
        assert full.status_code == 503 and full.json()["error"] == "unavailable"
        revoked = api.delete(f"/agent-keys/{key.json()['client_id']}")
        assert revoked.json()["client_deleted"] is True

    # Unused, the two registered clients go; registration has room again.
    removed = sweep_after_grace(stack, clock)
    assert {first.json()["client_id"], second.json()["client_id"]} <= set(removed)
    again = register(http, "ceiling")
    assert again.status_code == 201, again.text
    sweep_after_grace(stack, clock)
    settle_audit(stack)  # the key's events are published after the responses
