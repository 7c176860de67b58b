"""The management function's code against the emulated pool, table and bus: discovery,
registration (Cognito settings, rate limits, audit), agent keys' app clients, and the
sweep of unused registered clients."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from botocore.exceptions import ClientError
from memory_local.aws import LocalAws
from memory_server.admin.identity import CognitoDirectory
from memory_server.domain.grants import MCP_SCOPES
from memory_server.domain.limits import REGISTRATIONS_PER_SOURCE_PER_HOUR
from memory_server.operations import audit_events as audit
from memory_server.signin import management as management_module
from memory_server.signin.management import AUDIT_SOURCE, Management
from memory_server.signin.registry import SigninTable, UsageRecorder

DAY = 86_400


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


@pytest.fixture
def mgmt(signin_aws: LocalAws, clock: Clock) -> Management:
    provisioned = signin_aws.provisioned
    return Management(
        cognito=CognitoDirectory(signin_aws.client("cognito-idp"), provisioned.user_pool_id),
        table=SigninTable(signin_aws.client("dynamodb"), provisioned.signin_table),
        oauth_base_url="https://memory-dev.auth.us-east-1.amazoncognito.com",
        events_client=signin_aws.client("events"),
        audit_bus=provisioned.bus_name,
        idle_days=30,
        clock=clock,
    )


def published(aws: LocalAws, detail_type: str) -> list[dict[str, Any]]:
    return [e["detail"] for e in aws.read_audit_events() if e["detail-type"] == detail_type]


def test_metadata_names_the_product_as_issuer(mgmt: Management) -> None:
    answer = mgmt.route(http_event("GET /.well-known/oauth-authorization-server"))
    assert answer["statusCode"] == 200
    assert answer["headers"]["cache-control"] == "public, max-age=3600"
    doc = json.loads(answer["body"])
    assert doc["issuer"] == "https://api.example.com"
    assert doc["registration_endpoint"] == "https://api.example.com/register"
    assert doc["token_endpoint"].startswith("https://memory-dev.auth.")
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
    bad = register(mgmt, redirect_uris=["cursor://anysphere.cursor-mcp/oauth/callback"])
    assert bad["statusCode"] == 400
    assert json.loads(bad["body"])["error"] == "invalid_redirect_uri"
    assert bad["headers"]["cache-control"] == "no-store"
    junk = mgmt.route(http_event("POST /register", "{not json"))
    assert json.loads(junk["body"])["error"] == "invalid_client_metadata"
    assert clients() == before


def test_registration_is_rate_limited_per_source_and_in_total(
    mgmt: Management, monkeypatch: pytest.MonkeyPatch
) -> None:
    for _ in range(REGISTRATIONS_PER_SOURCE_PER_HOUR):
        assert register(mgmt, source="203.0.113.1")["statusCode"] == 201
    refused = register(mgmt, source="203.0.113.1")
    assert refused["statusCode"] == 429
    assert json.loads(refused["body"])["error"] == "temporarily_unavailable"
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


class FailingEvents:
    def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        return {"FailedEntryCount": 1, "Entries": [{"ErrorCode": "InternalFailure"}]}


def test_no_registration_without_its_audit_event(mgmt: Management, signin_aws: LocalAws) -> None:
    mgmt.events_client = FailingEvents()
    before = {r.client_id for r in mgmt.table.clients()}
    answer = register(mgmt)
    assert answer["statusCode"] == 503
    assert json.loads(answer["body"])["error"] == "temporarily_unavailable"
    assert {r.client_id for r in mgmt.table.clients()} == before


class RefusingCognito:
    def __init__(self, code: str) -> None:
        self.code = code

    def create_public_client(self, *args: Any) -> str:
        raise ClientError({"Error": {"Code": self.code, "Message": "no"}}, "CreateUserPoolClient")


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
    # Never used: gone after a day, not before.
    assert abandoned not in sweep_at(0.9) and exists(abandoned)
    fresh = json.loads(register(mgmt)["body"])["client_id"]  # registered at day 0.9
    assert abandoned in sweep_at(1.1) and not exists(abandoned)
    assert fresh not in sweep_at(1.5)
    (removal,) = [e for e in published(signin_aws, "ClientRemoved") if e["client_id"] == abandoned]
    assert removal["reason"] == "never used" and removal["existed"] is True
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


def test_agent_clients_for_the_admin_api(mgmt: Management, signin_aws: LocalAws) -> None:
    made = mgmt.route(
        {"action": "create_agent_client", "name": "acme.ci", "scopes": ["memory/read"]}
    )
    described = signin_aws.describe_client(made["client_id"])
    assert described["ClientSecret"] == made["client_secret"]
    assert described["AllowedOAuthFlows"] == ["client_credentials"]
    assert mgmt.route({"action": "delete_agent_client", "client_id": made["client_id"]}) == {
        "deleted": True
    }
    assert mgmt.route({"action": "delete_agent_client", "client_id": made["client_id"]}) == {
        "deleted": False
    }
    for bad in (
        {"action": "create_agent_client", "name": "x", "scopes": ["aws.cognito.signin.user.admin"]},
        {"action": "create_agent_client", "name": "x"},
        {"action": "drop_everything"},
        {},
    ):
        with pytest.raises(ValueError):
            mgmt.route(bad)


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
