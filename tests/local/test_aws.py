"""LocalAws: moto on loopback, provisioned with the names the service uses."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import boto3
import pytest
from memory_local.aws import (
    AUDIT_BUS,
    IDEMPOTENCY_TABLE,
    MEMORY_SCOPES,
    LocalAws,
    cognito_issuer,
)


def test_endpoint_is_loopback_and_env_points_at_it(local_aws: LocalAws) -> None:
    assert local_aws.endpoint_url.startswith("http://127.0.0.1:")
    env = local_aws.env()
    assert env["AWS_ENDPOINT_URL"] == local_aws.endpoint_url
    assert env["AWS_DEFAULT_REGION"] == local_aws.region == "us-east-1"
    assert env["AWS_ACCESS_KEY_ID"] and env["AWS_SECRET_ACCESS_KEY"]
    # A plain SDK client configured only from env() reaches the same server.
    client = boto3.client(
        "dynamodb",
        endpoint_url=env["AWS_ENDPOINT_URL"],
        region_name=env["AWS_DEFAULT_REGION"],
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
    )
    assert IDEMPOTENCY_TABLE in client.list_tables()["TableNames"]


def test_provisioning_twice_is_idempotent(local_aws: LocalAws) -> None:
    first = local_aws.provisioned
    again = local_aws.provision()
    assert again == first
    cognito = local_aws.client("cognito-idp")
    pools = [
        p
        for p in cognito.list_user_pools(MaxResults=60)["UserPools"]
        if p["Name"] == "memory-server"
    ]
    assert [p["Id"] for p in pools] == [first.user_pool_id]
    clients = cognito.list_user_pool_clients(UserPoolId=first.user_pool_id, MaxResults=60)
    people = [c for c in clients["UserPoolClients"] if c["ClientName"] == "memory-people"]
    assert [c["ClientId"] for c in people] == [first.people_client_id]
    events = local_aws.client("events")
    targets = events.list_targets_by_rule(Rule="memory-audit-tap", EventBusName=AUDIT_BUS)
    assert len(targets["Targets"]) == 1


def test_a_second_object_attached_to_the_server_sees_the_same_resources(
    local_aws: LocalAws,
) -> None:
    with LocalAws(endpoint_url=local_aws.endpoint_url) as attached:
        assert attached.provision() == local_aws.provisioned
    # Leaving the attached object did not stop the server it did not start.
    assert local_aws.client("dynamodb").list_tables()["TableNames"]


def test_user_pool_and_resource_server(local_aws: LocalAws) -> None:
    provisioned = local_aws.provisioned
    assert provisioned.issuer == cognito_issuer("us-east-1", provisioned.user_pool_id)
    assert provisioned.issuer.startswith("https://cognito-idp.us-east-1.amazonaws.com/")
    cognito = local_aws.client("cognito-idp")
    server = cognito.describe_resource_server(
        UserPoolId=provisioned.user_pool_id, Identifier="memory"
    )["ResourceServer"]
    names = [f"memory/{s['ScopeName']}" for s in server["Scopes"]]
    assert (
        names
        == list(MEMORY_SCOPES)
        == [
            "memory/read",
            "memory/write.personal",
            "memory/write.shared",
            "memory/delete",
            "memory/admin",
        ]
    )
    people = local_aws.describe_client(provisioned.people_client_id)
    assert "ClientSecret" not in people  # a public client


def test_idempotency_table_has_the_powertools_schema(local_aws: LocalAws) -> None:
    dynamodb = local_aws.client("dynamodb")
    table = dynamodb.describe_table(TableName=IDEMPOTENCY_TABLE)["Table"]
    assert table["KeySchema"] == [{"AttributeName": "id", "KeyType": "HASH"}]
    assert table["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    ttl = dynamodb.describe_time_to_live(TableName=IDEMPOTENCY_TABLE)["TimeToLiveDescription"]
    assert ttl == {"TimeToLiveStatus": "ENABLED", "AttributeName": "expiration"}


def test_agent_clients_are_client_credentials_clients_found_by_name(local_aws: LocalAws) -> None:
    client_id, secret = local_aws.create_agent_client("ci-bot-test", ["memory/read"])
    described = local_aws.describe_client(client_id)
    assert described["ClientSecret"] == secret
    assert described["AllowedOAuthFlows"] == ["client_credentials"]
    assert described["AllowedOAuthScopes"] == ["memory/read"]
    assert described["AllowedOAuthFlowsUserPoolClient"] is True
    same_id, same_secret = local_aws.create_agent_client(
        "ci-bot-test", ["memory/read", "memory/delete"]
    )
    assert (same_id, same_secret) == (client_id, secret)
    assert local_aws.describe_client(client_id)["AllowedOAuthScopes"] == [
        "memory/read",
        "memory/delete",
    ]


def test_create_user_returns_a_stable_sub(local_aws: LocalAws) -> None:
    sub = local_aws.create_user("dora")
    assert len(sub) == 36
    assert local_aws.create_user("dora") == sub
    assert local_aws.create_user("erin") != sub


def test_audit_events_are_read_back_from_the_bus(local_aws: LocalAws) -> None:
    local_aws.read_audit_events()  # start from an empty tap
    events = local_aws.client("events")
    result = events.put_events(
        Entries=[
            {
                "Source": "memory-server",
                "DetailType": "MemoryChanged",
                "Detail": json.dumps({"operation": "write", "revision": 1}),
                "EventBusName": AUDIT_BUS,
            },
            {
                "Source": "someone-else",
                "DetailType": "Other",
                "Detail": "{}",
                "EventBusName": AUDIT_BUS,
            },
            {
                "Source": "memory-server",
                "DetailType": "MemoryChanged",
                "Detail": json.dumps({"operation": "delete", "revision": 2}),
                "EventBusName": AUDIT_BUS,
            },
        ]
    )
    assert result["FailedEntryCount"] == 0
    received = local_aws.read_audit_events()
    assert [e["detail"] for e in received] == [
        {"operation": "write", "revision": 1},
        {"operation": "delete", "revision": 2},
    ]
    assert {e["detail-type"] for e in received} == {"MemoryChanged"}
    assert {e["source"] for e in received} == {"memory-server"}
    assert local_aws.read_audit_events() == []  # drained


SEEDED_RESTARTS = """
import json, urllib.request
from memory_local.aws import LocalAws

def post(url):
    urllib.request.urlopen(urllib.request.Request(url, method="POST")).read()

runs = []
with LocalAws(seed=7) as aws:
    for _ in range(2):
        provisioned = aws.provision()
        client = aws.create_agent_client("bot", ["memory/read"])
        runs.append([provisioned.user_pool_id, provisioned.people_client_id, client, aws.create_user("alice")])
        # What a restart loses: all of moto's state; what it keeps: the seed.
        post(aws.endpoint_url + "/moto-api/reset")
        assert not aws.client("cognito-idp").list_user_pools(MaxResults=10)["UserPools"]
        post(aws.endpoint_url + "/moto-api/seed?a=7")
print(json.dumps(runs))
"""


@pytest.mark.slow
def test_a_seed_gives_the_same_identifiers_after_a_restart() -> None:
    # Moto's state is global to a process, so this runs in a fresh interpreter.
    result = subprocess.run(
        [sys.executable, "-c", SEEDED_RESTARTS],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    first, second = json.loads(result.stdout)
    assert first == second
    assert all(first)


def test_sign_in_table_and_the_pools_people(local_aws: LocalAws) -> None:
    dynamodb = local_aws.client("dynamodb")
    table = dynamodb.describe_table(TableName=local_aws.provisioned.signin_table)["Table"]
    assert table["KeySchema"] == [{"AttributeName": "pk", "KeyType": "HASH"}]
    ttl = dynamodb.describe_time_to_live(TableName=local_aws.provisioned.signin_table)
    assert ttl["TimeToLiveDescription"]["AttributeName"] == "expires_at"
    sub = local_aws.create_user("signin-person")
    assert local_aws.people()["signin-person"] == sub


def _answers(endpoint_url: str) -> bool:
    host, port = endpoint_url.removeprefix("http://").rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=1).close()
    except OSError:
        return False
    return True


def test_a_server_in_its_own_process_ends_with_stop() -> None:
    aws = LocalAws(own_process=True, niceness=5).start()
    try:
        url = aws.endpoint_url
        assert aws.provision().bus_name == AUDIT_BUS
        pid = aws.process_id
        assert pid is not None and pid != os.getpid()
        mine = os.getpriority(os.PRIO_PROCESS, 0)
        assert os.getpriority(os.PRIO_PROCESS, pid) == min(19, mine + 5)
    finally:
        aws.stop()
    assert aws.process_id is None
    assert not _answers(url)


CRASHING_PARENT = """
import os
from memory_local.aws import LocalAws
print(LocalAws(own_process=True).start().endpoint_url, flush=True)
os._exit(1)  # no stop(): a crash
"""


@pytest.mark.slow
def test_a_server_in_its_own_process_does_not_outlive_a_crashed_parent() -> None:
    result = subprocess.run(
        [sys.executable, "-c", CRASHING_PARENT], capture_output=True, text=True, timeout=60
    )
    url = result.stdout.strip()
    assert url.startswith("http://127.0.0.1:")
    give_up = time.monotonic() + 10
    while _answers(url) and time.monotonic() < give_up:
        time.sleep(0.1)
    assert not _answers(url)
