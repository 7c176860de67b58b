"""The management function's code against the emulated pool, table and bus: discovery,
registration (Cognito settings, rate limits, the ceiling of live clients, audit), agent
keys' app clients (made and deleted only for their workspace), and the sweep of
registered clients no member used."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest
from botocore.exceptions import ClientError
from memory_local.aws import LocalAws
from memory_server.admin.identity import CognitoDirectory
from memory_server.domain.grants import MCP_SCOPES
from memory_server.domain.limits import (
    APP_CLIENTS_RESERVED,
    CLIENT_SWEEP_EVERY_S,
    REGISTERED_CLIENT_UNUSED_GRACE_S,
    REGISTRATION_RESERVATION_TTL_S,
    REGISTRATIONS_PER_HOUR,
    REGISTRATIONS_PER_SOURCE_PER_HOUR,
    USER_POOL_APP_CLIENT_QUOTA,
)
from memory_server.operations import audit_events as audit
from memory_server.signin import management as management_module
from memory_server.signin.management import AUDIT_SOURCE, Management
from memory_server.signin.registry import SigninTable, UsageRecorder, source_bucket

DAY = 86_400
MINUTE = 60
ADMIN = "7d8a4c3e-2b1f-4e6a-9c0d-5f4e3a2b1c0d"  # the creating admin's principal id


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def http_event(
    route: str, body: Any = None, source: str = "198.51.100.7", domain: str = "api.example.com"
) -> dict[str, Any]:
    method, path = route.split(" ", 1)
    return {
        "version": "2.0",
        "routeKey": route,
        "rawPath": path,
        "headers": {"content-type": "application/json"},
        "requestContext": {
            "domainName": domain,
            "http": {"method": method, "path": path, "sourceIp": source},
            "requestId": uuid.uuid4().hex,
        },
        "body": body if body is None or isinstance(body, str) else json.dumps(body),
        "isBase64Encoded": False,
    }


def register(mgmt: Management, source: str = "198.51.100.7", **metadata: Any) -> dict[str, Any]:
    body = {"redirect_uris": ["http://127.0.0.1:43123/callback"], **metadata}
    return mgmt.route(http_event("POST /register", body, source))


@pytest.fixture
def clock() -> Clock:
    # Each test in its own hour, far from the real clock: rate buckets never collide.
    return Clock(4_000_000_000 + uuid.uuid4().int % 10_000 * 3600)


def fresh_table(aws: LocalAws) -> SigninTable:
    """A sign-in table of the test's own (as template.yaml's), so its count of live
    registered clients is the test's alone."""
    dynamodb = aws.client("dynamodb")
    name = f"signin-{uuid.uuid4().hex[:12]}"
    dynamodb.create_table(
        TableName=name,
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return SigninTable(dynamodb, name)


@pytest.fixture
def mgmt(signin_aws: LocalAws, clock: Clock) -> Management:
    provisioned = signin_aws.provisioned
    return Management(
        cognito=CognitoDirectory(signin_aws.client("cognito-idp"), provisioned.user_pool_id),
        table=fresh_table(signin_aws),
        oauth_base_url="https://memory-dev.auth.us-east-1.amazoncognito.com",
        events_client=signin_aws.client("events"),
        audit_bus=provisioned.bus_name,
        idle_days=30,
        clock=clock,
    )


def published(aws: LocalAws, detail_type: str) -> list[dict[str, Any]]:
    return [e["detail"] for e in aws.read_audit_events() if e["detail-type"] == detail_type]


class FailingEvents:
    def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        return {"FailedEntryCount": 1, "Entries": [{"ErrorCode": "InternalFailure"}]}


class RefusingCognito:
    def __init__(self, code: str) -> None:
        self.code = code

    def create_public_client(self, *args: Any) -> str:
        raise ClientError({"Error": {"Code": self.code, "Message": "no"}}, "CreateUserPoolClient")


def test_metadata_names_the_product_as_issuer(mgmt: Management) -> None:
    answer = mgmt.route(http_event("GET /.well-known/oauth-authorization-server"))
    assert answer["statusCode"] == 200
    assert answer["headers"]["cache-control"] == "public, max-age=3600"
    doc = json.loads(answer["body"])
    assert doc["issuer"] == "https://api.example.com"
    assert doc["registration_endpoint"] == "https://api.example.com/register"
    assert doc["token_endpoint"] == "https://api.example.com/token"  # the front door's
    mgmt.public_base_url = "https://memory.example.org"
    doc = json.loads(mgmt.route(http_event("GET /.well-known/oauth-authorization-server"))["body"])
    assert doc["issuer"] == "https://memory.example.org"
    assert audit.SOURCE == AUDIT_SOURCE


def test_registration_creates_a_public_code_client_and_audits_it(
    mgmt: Management, signin_aws: LocalAws
) -> None:
    signin_aws.read_audit_events()
    answer = register(
        mgmt,
        client_name="Inspector",
        redirect_uris=["http://localhost:6274/oauth/callback", "myapp://cb"],
        token_endpoint_auth_method="client_secret_basic",  # replaced: public clients only
        scope="memory/read memory/admin",
    )
    assert answer["statusCode"] == 201, answer["body"]
    assert answer["headers"]["cache-control"] == "no-store"
    registered = json.loads(answer["body"])
    client_id = registered["client_id"]
    assert registered == {
        "client_id": client_id,
        "client_id_issued_at": int(mgmt.clock()),
        "client_name": "Inspector",
        "redirect_uris": ["http://localhost:6274/oauth/callback"],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "scope": "memory/read",
    }
    described = signin_aws.describe_client(client_id)
    assert "ClientSecret" not in described
    assert (
        described["AllowedOAuthFlows"] == ["code"] and described["AllowedOAuthFlowsUserPoolClient"]
    )
    assert described["AllowedOAuthScopes"] == ["memory/read"]
    assert described["CallbackURLs"] == ["http://localhost:6274/oauth/callback"]
    assert described["SupportedIdentityProviders"] == ["COGNITO"]
    assert described["ClientName"].startswith("mcp-registered.")
    (record,) = [r for r in mgmt.table.clients() if r.client_id == client_id]
    assert record.created_at == int(mgmt.clock()) and record.last_used is None
    assert record.counted and mgmt.table.live_registered() == 1
    assert list(mgmt.table.reservations()) == []  # the place became the client's
    (event,) = published(signin_aws, "ClientRegistered")
    assert event["client_id"] == client_id
    assert event["refused_redirect_uris"] == ["myapp://cb"]
    assert event["source_ip"] == "198.51.100.7" and event["scopes"] == ["memory/read"]


def test_refused_registrations_create_nothing(mgmt: Management, signin_aws: LocalAws) -> None:
    pool = signin_aws.provisioned.user_pool_id
    cognito = signin_aws.client("cognito-idp")

    def clients() -> int:
        return len(
            cognito.list_user_pool_clients(UserPoolId=pool, MaxResults=60)["UserPoolClients"]
        )

    before = clients()
    bad = register(mgmt, redirect_uris=["javascript:alert(1)"])
    assert bad["statusCode"] == 400
    assert json.loads(bad["body"])["error"] == "invalid_redirect_uri"
    assert bad["headers"]["cache-control"] == "no-store"
    junk = mgmt.route(http_event("POST /register", "{not json"))
    assert json.loads(junk["body"])["error"] == "invalid_client_metadata"
    assert clients() == before
    assert mgmt.table.live_registered() == 0


def test_registration_is_rate_limited_per_source_and_in_total(
    mgmt: Management, monkeypatch: pytest.MonkeyPatch
) -> None:
    for _ in range(REGISTRATIONS_PER_SOURCE_PER_HOUR):
        assert register(mgmt, source="203.0.113.1")["statusCode"] == 201
    refused = register(mgmt, source="203.0.113.1")
    assert refused["statusCode"] == 429
    assert json.loads(refused["body"])["error"] == "temporarily_unavailable"
    assert "this address" in json.loads(refused["body"])["error_description"]
    assert 0 < int(refused["headers"]["retry-after"]) <= 3600
    assert register(mgmt, source="203.0.113.2")["statusCode"] == 201  # others still may
    # The next hour the source may register again.
    mgmt.clock.now += 3600  # type: ignore[attr-defined]
    assert register(mgmt, source="203.0.113.1")["statusCode"] == 201
    # The total limit holds whatever the sources.
    monkeypatch.setattr(management_module, "REGISTRATIONS_PER_HOUR", 3)
    mgmt.clock.now += 3600  # type: ignore[attr-defined]
    statuses = [register(mgmt, source=f"203.0.113.{10 + i}")["statusCode"] for i in range(5)]
    assert statuses == [201, 201, 201, 429, 429]


def test_a_few_sources_cannot_use_up_registration_for_everyone(mgmt: Management) -> None:
    # Issue 23, item 3: the total was counted before anything was created, so three
    # sources at their own limit (3 x 10 = the old total of 30) locked everyone out for
    # the hour. Now a source over its limit never reaches the total, and the total is
    # more than a few sources can fill.
    for attacker in ("198.51.100.1", "198.51.100.2", "198.51.100.3"):
        answers = [register(mgmt, source=attacker)["statusCode"] for _ in range(25)]
        assert answers == [201] * REGISTRATIONS_PER_SOURCE_PER_HOUR + [429] * 15
    assert register(mgmt, source="192.0.2.44")["statusCode"] == 201
    # The total counted the 31 registrations that succeeded, not the 45 refused.
    hour = int(mgmt.clock()) // 3600
    counted = mgmt.table.client.get_item(
        TableName=mgmt.table.name, Key={"pk": {"S": f"rate#all#{hour}"}}
    )["Item"]["hits"]["N"]
    assert int(counted) == 3 * REGISTRATIONS_PER_SOURCE_PER_HOUR + 1
    assert REGISTRATIONS_PER_HOUR >= 20 * REGISTRATIONS_PER_SOURCE_PER_HOUR


def test_the_total_counts_only_registrations_that_succeed(
    mgmt: Management, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(management_module, "REGISTRATIONS_PER_HOUR", 2)
    real = mgmt.cognito
    mgmt.cognito = RefusingCognito("InvalidParameterException")
    for i in range(4):  # refused by the pool: nothing created, nothing counted
        assert register(mgmt, source=f"192.0.2.{i}")["statusCode"] == 400
    mgmt.cognito = real
    mgmt.events_client = FailingEvents()
    for i in range(3):  # created, then undone (no audit event): not counted either
        assert register(mgmt, source=f"192.0.2.{10 + i}")["statusCode"] == 503
    mgmt.events_client = None
    statuses = [register(mgmt, source=f"192.0.2.{20 + i}")["statusCode"] for i in range(3)]
    assert statuses == [201, 201, 429]
    assert mgmt.table.live_registered() == 2 and list(mgmt.table.reservations()) == []


def test_a_source_is_an_ipv4_address_or_an_ipv6_64() -> None:
    assert source_bucket("2001:db8:1:2::1") == source_bucket("2001:db8:1:2:ffff::9")
    assert source_bucket("2001:db8:1:2::1") != source_bucket("2001:db8:1:3::1")
    assert source_bucket("::ffff:192.0.2.7") == source_bucket("192.0.2.7")
    assert source_bucket("192.0.2.7") != source_bucket("192.0.2.8")
    assert "192.0.2.7" not in source_bucket("192.0.2.7")  # the table holds no address
    assert source_bucket("unknown").startswith("source:")


@dataclass
class QuotaPool:
    """The user pool with Cognito's quota of app clients: past ``quota`` live clients
    (``fixed`` of them made by the template) CreateUserPoolClient fails with
    LimitExceededException. In memory: what is counted is what matters here."""

    quota: int
    fixed: int = 2  # the people client and the example agent client
    clients: dict[str, str] = field(default_factory=dict)

    def _make(self, kind: str) -> str:
        if self.fixed + len(self.clients) >= self.quota:
            raise ClientError(
                {"Error": {"Code": "LimitExceededException", "Message": "quota"}},
                "CreateUserPoolClient",
            )
        client_id = uuid.uuid4().hex[:26]
        self.clients[client_id] = kind
        return client_id

    def create_public_client(self, name: str, redirect_uris: Any, scopes: Any) -> str:
        return self._make("registered")

    def create_key_client(self, name: str, scopes: Any) -> tuple[str, str]:
        return self._make("agent"), "secret"

    def delete_app_client(self, client_id: str) -> bool:
        return self.clients.pop(client_id, None) is not None


def test_registration_stops_at_its_ceiling_and_leaves_the_rest_to_agent_keys(
    mgmt: Management,
) -> None:
    # A pool whose quota leaves registration a ceiling of 5 (the default: 1,000 - 400).
    # With the defaults, clients nobody uses never reach the ceiling by themselves: at
    # most two hourly totals are alive at once (each lives under an hour).
    assert 2 * REGISTRATIONS_PER_HOUR <= USER_POOL_APP_CLIENT_QUOTA - APP_CLIENTS_RESERVED
    pool = QuotaPool(quota=APP_CLIENTS_RESERVED + 5)
    mgmt.cognito, mgmt.app_client_quota = pool, pool.quota
    assert mgmt.registered_ceiling == 5
    sources = iter(f"192.0.2.{i}" for i in range(1, 250))
    made = [register(mgmt, source=next(sources)) for _ in range(5)]
    assert [m["statusCode"] for m in made] == [201] * 5
    refused = register(mgmt, source=next(sources))
    assert refused["statusCode"] == 503, refused["body"]
    body = json.loads(refused["body"])
    assert body["error"] == "temporarily_unavailable"
    assert "as many registered clients as it may (5)" in body["error_description"]
    assert int(refused["headers"]["retry-after"]) > 0
    assert list(pool.clients.values()).count("registered") == 5  # the pool never saw it
    # Agent keys keep their room: every place below the quota but the template's own.
    keys = 0
    while True:
        try:
            mgmt.route(
                {
                    "action": "create_agent_client",
                    "workspace": "acme",
                    "name": f"k{keys}",
                    "scopes": ["memory/read"],
                    "created_by": ADMIN,
                }
            )
        except ClientError:
            break
        keys += 1
    assert keys == APP_CLIENTS_RESERVED - pool.fixed
    # Registered clients nobody used go; then registration has room again.
    mgmt.clock.now += REGISTERED_CLIENT_UNUSED_GRACE_S + MINUTE  # type: ignore[attr-defined]
    swept = mgmt.route({"action": "sweep_clients"})
    assert len(swept["removed"]) == 5 and swept["live"] == 0
    assert register(mgmt, source=next(sources))["statusCode"] == 201


def test_a_registration_that_died_midway_gives_its_place_back(mgmt: Management) -> None:
    # As if the function stopped between taking a place and creating the client.
    assert mgmt.table.reserve("dead0000beef", mgmt.clock(), mgmt.registered_ceiling)
    assert mgmt.table.live_registered() == 1
    assert mgmt.route({"action": "sweep_clients"})["live"] == 1  # it may still finish
    mgmt.clock.now += REGISTRATION_RESERVATION_TTL_S + 1  # type: ignore[attr-defined]
    assert mgmt.route({"action": "sweep_clients"})["live"] == 0
    assert list(mgmt.table.reservations()) == []
    assert not mgmt.table.release("dead0000beef")  # given back once


def test_records_from_before_the_ceiling_are_counted_by_the_sweep(mgmt: Management) -> None:
    client_id = json.loads(register(mgmt)["body"])["client_id"]
    table = mgmt.table
    # A record as the previous version wrote it: no place counted.
    table.client.put_item(
        TableName=table.name,
        Item={
            "pk": {"S": "client#legacy-client"},
            "created_at": {"N": str(int(mgmt.clock()))},
            "name": {"S": "old"},
        },
    )
    assert table.live_registered() == 1
    assert mgmt.route({"action": "sweep_clients"})["live"] == 2
    assert mgmt.route({"action": "sweep_clients"})["live"] == 2  # counted once
    table.remove_client("legacy-client")
    table.remove_client(client_id)
    table.remove_client(client_id)  # gone already: nothing given back twice
    assert table.live_registered() == 0


def test_no_registration_without_its_audit_event(mgmt: Management, signin_aws: LocalAws) -> None:
    mgmt.events_client = FailingEvents()
    before = {r.client_id for r in mgmt.table.clients()}
    answer = register(mgmt)
    assert answer["statusCode"] == 503
    assert json.loads(answer["body"])["error"] == "temporarily_unavailable"
    assert {r.client_id for r in mgmt.table.clients()} == before
    assert mgmt.table.live_registered() == 0  # its place was given back


@pytest.mark.parametrize(
    "code,status,error",
    [
        ("LimitExceededException", 503, "temporarily_unavailable"),  # the app-client quota
        ("InvalidParameterException", 400, "invalid_client_metadata"),
        ("TooManyRequestsException", 503, "temporarily_unavailable"),
    ],
)
def test_cognito_refusals_become_oauth_errors(
    mgmt: Management, code: str, status: int, error: str
) -> None:
    mgmt.cognito = RefusingCognito(code)
    answer = register(mgmt)
    assert (answer["statusCode"], json.loads(answer["body"])["error"]) == (status, error)


def test_unused_registered_clients_are_swept(mgmt: Management, signin_aws: LocalAws) -> None:
    start = mgmt.clock()
    used, abandoned = (json.loads(register(mgmt)["body"])["client_id"] for _ in range(2))
    recorder = UsageRecorder(mgmt.table, clock=mgmt.clock)
    recorder.seen(used)
    clock = mgmt.clock

    def sweep_at(days: float) -> list[str]:
        clock.now = start + days * DAY  # type: ignore[attr-defined]
        return list(mgmt.route({"action": "sweep_clients"})["removed"])

    def exists(client_id: str) -> bool:
        try:
            signin_aws.describe_client(client_id)
        except ClientError:
            return False
        return True

    signin_aws.read_audit_events()
    grace = REGISTERED_CLIENT_UNUSED_GRACE_S / DAY
    # No member used it: gone once the grace period is over, not before.
    assert abandoned not in sweep_at(grace - 0.001) and exists(abandoned)
    fresh = json.loads(register(mgmt)["body"])["client_id"]  # registered just now
    assert abandoned in sweep_at(grace + 0.001) and not exists(abandoned)
    assert fresh not in sweep_at(grace + 0.002)
    (removal,) = [e for e in published(signin_aws, "ClientRemoved") if e["client_id"] == abandoned]
    assert removal["reason"] == "never used" and removal["existed"] is True
    # The grace period and the sweep's schedule together stay within the hour.
    assert REGISTERED_CLIENT_UNUSED_GRACE_S + CLIENT_SWEEP_EVERY_S < 3600
    # Used: kept until its last use is idle_days old.
    assert used not in sweep_at(29.9) and exists(used)
    recorder.every_s = 0  # (a new container would write again)
    clock.now = start + 20 * DAY  # type: ignore[attr-defined]
    recorder.seen(used)
    assert used not in sweep_at(49.9)
    assert used in sweep_at(50.1) and not exists(used)
    assert used not in {r.client_id for r in mgmt.table.clients()}
    (removal,) = [e for e in published(signin_aws, "ClientRemoved") if e["client_id"] == used]
    assert removal["reason"] == "unused for 30 days" and removal["last_used"]
    assert fresh not in {r.client_id for r in mgmt.table.clients()}  # never used either


def test_usage_is_written_at_most_daily_and_only_for_registered_clients(
    mgmt: Management,
) -> None:
    client_id = json.loads(register(mgmt)["body"])["client_id"]
    writes: list[str] = []
    table = mgmt.table

    class Counting(SigninTable):
        def touch(self, client_id: str, now: float, every_s: int) -> bool:
            writes.append(client_id)
            return super().touch(client_id, now, every_s)

    recorder = UsageRecorder(Counting(table.client, table.name), clock=mgmt.clock)
    for _ in range(5):
        recorder.seen(client_id)
        recorder.seen("a-people-client")
    assert writes == [client_id, "a-people-client"]
    (record,) = [r for r in table.clients() if r.client_id == client_id]
    assert record.last_used == int(mgmt.clock())
    assert "a-people-client" not in {r.client_id for r in table.clients()}  # no record made
    mgmt.clock.now += DAY  # type: ignore[attr-defined]
    recorder.seen(client_id)
    assert writes.count(client_id) == 2

    class Broken(SigninTable):
        def touch(self, client_id: str, now: float, every_s: int) -> bool:
            raise RuntimeError("throttled")

    UsageRecorder(Broken(table.client, table.name)).seen(client_id)  # never raises


def create_key(mgmt: Management, workspace: str = "acme", **changes: Any) -> dict[str, Any]:
    event = {
        "action": "create_agent_client",
        "workspace": workspace,
        "name": "ci",
        "scopes": ["memory/read"],
        "created_by": ADMIN,
        **changes,
    }
    return dict(mgmt.route(event))


def delete_key(mgmt: Management, workspace: str, client_id: str) -> bool:
    answer = mgmt.route(
        {"action": "delete_agent_client", "workspace": workspace, "client_id": client_id}
    )
    return bool(answer["deleted"])


def test_agent_clients_for_the_admin_api(mgmt: Management, signin_aws: LocalAws) -> None:
    made = create_key(mgmt, scopes=["memory/read", "memory/admin"])
    described = signin_aws.describe_client(made["client_id"])
    assert described["ClientSecret"] == made["client_secret"]
    assert described["AllowedOAuthFlows"] == ["client_credentials"]
    assert described["ClientName"] == "acme.ci"  # named here, from the workspace
    # A key may administer its workspace (docs/admin.md): memory/admin is a key's scope.
    assert sorted(described["AllowedOAuthScopes"]) == ["memory/admin", "memory/read"]
    # Recorded: for which workspace, by whom.
    record = mgmt.table.agent_client(made["client_id"])
    assert record is not None
    assert (record.workspace, record.created_by, record.name) == ("acme", ADMIN, "ci")
    assert delete_key(mgmt, "acme", made["client_id"]) is True
    assert delete_key(mgmt, "acme", made["client_id"]) is False
    assert mgmt.table.agent_client(made["client_id"]) is None
    for bad in (
        {"action": "drop_everything"},
        {},
        {"action": "delete_agent_client", "client_id": made["client_id"]},  # no workspace
    ):
        with pytest.raises(ValueError):
            mgmt.route(bad)


@pytest.mark.parametrize(
    "change",
    [
        {"scopes": ["aws.cognito.signin.user.admin"]},
        {"scopes": ["openid", "memory/read"]},
        {"scopes": []},
        {"scopes": "memory/read"},
        {"scopes": ["memory/read", "memory/read"]},
        {"scopes": ["memory/write.shared"]},  # writing needs reading
        {"name": "ci bot"},
        {"name": "../people"},
        {"name": ""},
        {"name": "x" * 65},
        {"workspace": "Acme"},
        {"workspace": "acme.globex"},
        {"workspace": None},
        {"created_by": None},
        {"created_by": "alice"},
    ],
)
def test_the_management_function_makes_only_what_an_agent_key_may_be(
    mgmt: Management, signin_aws: LocalAws, change: dict[str, Any]
) -> None:
    cognito = signin_aws.client("cognito-idp")
    pool = signin_aws.provisioned.user_pool_id

    def names() -> list[str]:
        pages = cognito.get_paginator("list_user_pool_clients").paginate(
            UserPoolId=pool, MaxResults=60
        )
        return sorted(c["ClientName"] for page in pages for c in page["UserPoolClients"])

    before = names()
    with pytest.raises(ValueError):
        create_key(mgmt, **change)
    assert names() == before


def test_it_deletes_only_clients_it_made_for_the_workspace_asking(
    mgmt: Management, signin_aws: LocalAws
) -> None:
    # Issue 23, item 5: any client_id was deleted, the people's client included.
    def exists(client_id: str) -> bool:
        try:
            signin_aws.describe_client(client_id)
        except ClientError:
            return False
        return True

    acme_key = create_key(mgmt, "acme")["client_id"]
    globex_key = create_key(mgmt, "globex")["client_id"]
    people = signin_aws.provisioned.people_client_id
    registered = json.loads(register(mgmt)["body"])["client_id"]
    by_hand, _ = CognitoDirectory(
        signin_aws.client("cognito-idp"), signin_aws.provisioned.user_pool_id
    ).create_key_client("acme.made-elsewhere", ["memory/read"])
    for workspace, client_id in (
        ("acme", globex_key),  # another workspace's key
        ("globex", acme_key),
        ("acme", people),  # the people's client
        ("acme", registered),  # a registered MCP client
        ("acme", by_hand),  # named like acme's, not made here
        ("acme", "no-such-client"),
    ):
        assert delete_key(mgmt, workspace, client_id) is False, client_id
    for client_id in (acme_key, globex_key, people, registered, by_hand):
        assert exists(client_id), client_id
    assert mgmt.table.live_registered() == 1  # the registered client is still counted
    assert delete_key(mgmt, "globex", globex_key) is True and not exists(globex_key)


def test_http_requests_never_reach_the_direct_actions(mgmt: Management) -> None:
    # Whatever an HTTP body says, an API Gateway event is routed by its route key.
    smuggled = mgmt.route(
        http_event("POST /register", {"action": "create_agent_client", "name": "x", "scopes": []})
    )
    assert smuggled["statusCode"] == 400
    other = mgmt.route(http_event("POST /w/acme/admin/agent-keys", {"action": "sweep_clients"}))
    assert other["statusCode"] == 404
    assert set(MCP_SCOPES) == {
        "memory/read",
        "memory/write.personal",
        "memory/write.shared",
        "memory/delete",
    }


def test_registration_takes_https_redirects_only_from_the_operators_list(
    mgmt: Management, signin_aws: LocalAws, monkeypatch: pytest.MonkeyPatch
) -> None:
    evil = register(mgmt, client_name="Claude Desktop", redirect_uris=["https://evil.example/cb"])
    assert evil["statusCode"] == 400
    assert json.loads(evil["body"])["error"] == "invalid_redirect_uri"
    claude = register(mgmt, redirect_uris=["https://claude.ai/api/mcp/auth_callback"])
    assert claude["statusCode"] == 201, claude["body"]
    # The function reads its list from ALLOWED_REDIRECT_URIS (the template's parameter).
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    env = {
        "USER_POOL_ID": signin_aws.provisioned.user_pool_id,
        "OAUTH_BASE_URL": "https://pool.example",
        "SIGNIN_TABLE": signin_aws.provisioned.signin_table,
    }
    built = management_module.build_management(
        {**env, "ALLOWED_REDIRECT_URIS": "https://evil.example/cb"}
    )
    assert built.allowed_redirect_uris == {"https://evil.example/cb"}
    assert management_module.build_management(env).allowed_redirect_uris == (
        mgmt.allowed_redirect_uris
    )
