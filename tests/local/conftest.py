"""Local AWS, token issuer and API Gateway emulator, once per test session.

No database: the gateway fronts a small handler that echoes the event it got, so
these tests pin down the emulator itself (what the real handler will receive).
"""

from __future__ import annotations

import base64
import http.client
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from memory_local.aws import LocalAws
from memory_local.gateway import ApiGateway
from memory_local.tokens import LocalIssuer

AGENT_SCOPES = ["memory/read", "memory/write.shared"]


@dataclass
class Response:
    status: int
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        values = [v for k, v in self.headers if k.lower() == name.lower()]
        return values[0] if values else None

    def json(self) -> Any:
        return json.loads(self.body)


def request(
    url: str,
    method: str = "GET",
    path: str = "/",
    *,
    headers: list[tuple[str, str]] | None = None,
    body: bytes | None = None,
    token: str | None = None,
    connection: http.client.HTTPConnection | None = None,
) -> Response:
    """One raw HTTP request: repeated headers and odd bodies go out exactly as given."""
    parts = urlsplit(url)
    conn = connection or http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        conn.putrequest(method, path, skip_accept_encoding=True)
        sent = list(headers or [])
        if token is not None:
            sent.append(("Authorization", f"Bearer {token}"))
        if body is not None:
            sent.append(("Content-Length", str(len(body))))
        for name, value in sent:
            conn.putheader(name, value)
        conn.endheaders(body)
        response = conn.getresponse()
        return Response(response.status, response.getheaders(), response.read())
    finally:
        if connection is None:
            conn.close()


def echo_handler(event: dict[str, Any], context: Any) -> Any:
    """Answers with the event; ``x-test-mode`` selects a misbehaviour instead."""
    mode = event.get("headers", {}).get("x-test-mode", "echo")
    if mode == "raise":
        raise RuntimeError("secret-internal-detail")
    if mode == "string":
        return "plain string"
    if mode == "dict":
        return {"hello": "world"}
    if mode == "bad-status":
        return {"statusCode": "two hundred", "body": "x"}
    if mode == "not-json":
        return {"statusCode": 200, "body": object()}
    if mode == "binary":
        return {
            "statusCode": 201,
            "headers": {"content-type": "application/octet-stream"},
            "body": base64.b64encode(b"\x00\xff\x10").decode(),
            "isBase64Encoded": True,
        }
    if mode == "size":
        return {"statusCode": 200, "body": str(len(event.get("body", "")))}
    if mode == "huge":
        return {"statusCode": 200, "body": "x" * (6 * 1024 * 1024 + 1)}
    if mode == "sleep":
        time.sleep(1.0)
    return {
        "statusCode": 200,
        "headers": {"Content-Type": "application/json", "X-Echo": 1},
        "multiValueHeaders": {"X-Ignored": ["a", "b"]},
        "cookies": ["session=abc; Path=/", "theme=dark"],
        "body": json.dumps(
            {
                "event": event,
                "remaining_ms": context.get_remaining_time_in_millis(),
                "function_name": context.function_name,
                "aws_request_id": context.aws_request_id,
            }
        ),
    }


@dataclass
class Agent:
    client_id: str
    client_secret: str


@pytest.fixture(scope="session")
def local_aws() -> Iterator[LocalAws]:
    with LocalAws() as aws:
        aws.provision()
        yield aws


@pytest.fixture(scope="session")
def key_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("issuer")


@pytest.fixture(scope="session")
def issuer(local_aws: LocalAws, key_dir: Path) -> LocalIssuer:
    return LocalIssuer(key_dir / "signing-key.pem", local_aws.provisioned.issuer)


@pytest.fixture(scope="session")
def agent(local_aws: LocalAws) -> Agent:
    return Agent(*local_aws.create_agent_client("test-agent", AGENT_SCOPES))


@pytest.fixture(scope="session")
def gateway(local_aws: LocalAws, issuer: LocalIssuer, agent: Agent) -> Iterator[ApiGateway]:
    # The deployed authorizer code with its defaults (the issuer's key set, this
    # gateway's URL as the public base URL), and no result cache, so every request
    # is decided afresh; the cache has its own tests.
    with ApiGateway(
        echo_handler, issuer=issuer, aws=local_aws, authorizer_ttl_s=0, quiet=True
    ) as gw:
        yield gw


@pytest.fixture(scope="session")
def alice(local_aws: LocalAws) -> str:
    return local_aws.create_user("alice")


@pytest.fixture
def alice_token(issuer: LocalIssuer, local_aws: LocalAws, alice: str) -> str:
    return issuer.issue_access_token(
        sub=alice,
        client_id=local_aws.provisioned.people_client_id,
        scopes=["memory/read", "memory/write.personal"],
        username="alice",
    )
