"""AWS emulation for tests and ``make dev``: moto's server on a loopback port.

Moto runs in a thread of this process (``ThreadedMotoServer``), or in a child
process of its own (``own_process=True``, as ``make dev`` runs it, so emulating
AWS does not compete with the handler for this interpreter's lock). Either way the
code under test reaches it only over HTTP with ordinary boto3 clients, exactly as
it would reach AWS: nothing is patched, so what works here is the code that ships. This
module only starts the server and provisions what the service uses (Cognito user
pool and resource server, the DynamoDB idempotency table, the EventBridge audit
bus); it never touches ``os.environ`` (callers apply :meth:`LocalAws.env` to a
child process or a test's environment themselves).

Moto keeps its state in process-global backends. Two ``LocalAws`` objects in one
process therefore see the same pools and tables, and anything that resets moto in
this process (``mock_aws``) resets ours too (not a server in its own process).

What moto's Cognito does not do, and why :mod:`memory_local.tokens` exists: its
tokens carry ``iss = https://cognito-idp.{region}.amazonaws.com/{pool_id}`` and
only the ``aws.cognito.signin.user.admin`` scope, and it has no ``/oauth2/token``
endpoint, so ``memory/*`` scopes and client-credentials tokens come from a local
issuer that verifies client secrets against the pool here.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import moto.backends
from moto.server import ThreadedMotoServer

from .lifecycle import StartsAndStops

# The resource server and its scopes are the contract's (docs/contract.md §2).
USER_POOL_NAME = "memory-server"
RESOURCE_SERVER = "memory"
SCOPE_NAMES: tuple[str, ...] = ("read", "write.personal", "write.shared", "delete", "admin")
MEMORY_SCOPES: tuple[str, ...] = tuple(f"{RESOURCE_SERVER}/{name}" for name in SCOPE_NAMES)
PEOPLE_CLIENT_NAME = "memory-people"
CONSOLE_CLIENT_NAME = "memory-console"
DOCUMENT_CLIENT_NAME = "memory-documents"  # metadata-document clients sign in through it
IDEMPOTENCY_TABLE = "memory-idempotency"
SIGNIN_TABLE = "memory-signin"
AUDIT_BUS = "memory-audit"
AUDIT_SOURCE = "memory-server"
AUDIT_TAP_QUEUE = "memory-audit-tap"
AUDIT_TAP_RULE = "memory-audit-tap"
AUDIT_TAP_TARGET = "audit-tap"
# The tap must not grow with history (docs/contract.md §8): emulated SQS works over
# every message a queue holds on each send, and keeps every deleted message's
# receipt handles. So the queue is drained often into a ring of the latest events,
# and replaced by a fresh one after TAP_ROTATE messages.
TAP_KEEP = 10_000  # events held for read_audit_events; older ones are dropped
TAP_ROTATE = 5_000


class _Tap:
    """What the tap has drained and not yet handed to a reader. Moto's state is
    process-wide (every LocalAws in a process sees the same queues and rules), so
    this is too: whichever object drains the queue (make dev's drain thread, a
    test's read), every object reads the same events."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: deque[tuple[int, dict[str, Any]]] = deque()
        self.dropped = 0  # events pushed out before anyone read them
        self.taken = 0  # messages taken from the current queue
        self.url = ""  # the queue the rule delivers to (as last set or found)


_TAP = _Tap()

# Moto accepts any credentials; fixed fake ones keep a developer's real keys (and
# session token) out of every request sent here.
FAKE_ACCESS_KEY = "testing"
FAKE_SECRET_KEY = "testing"  # noqa: S105 - not a secret: moto's conventional fake key

_SCOPE_DESCRIPTIONS = {
    "read": "List, read and search memories",
    "write.personal": "Write in the caller's personal namespace",
    "write.shared": "Write in the workspace namespace",
    "delete": "Delete records",
    "admin": "Administer the workspace's memory",
}


def cognito_issuer(region: str, pool_id: str) -> str:
    """The ``iss`` of tokens from a Cognito pool (and of moto's, which copy it)."""
    return f"https://cognito-idp.{region}.amazonaws.com/{pool_id}"


@dataclass(frozen=True)
class Provisioned:
    """Identifiers of what :meth:`LocalAws.provision` made (or found)."""

    region: str
    user_pool_id: str
    people_client_id: str
    issuer: str
    table_name: str
    bus_name: str
    # The tap queue when provisioned; it is replaced as events flow (TAP_ROTATE).
    queue_url: str = field(compare=False)
    scopes: tuple[str, ...] = MEMORY_SCOPES
    signin_table: str = SIGNIN_TABLE


class LocalAws(StartsAndStops):
    """A moto server on ``host`` (loopback) and the resources the service needs.

    ``endpoint_url`` attaches to a moto server someone else runs: then ``start``
    only checks it answers and ``stop`` leaves it running. ``seed`` seeds moto's
    random generator, so a fresh process that provisions the same things in the
    same order gets the same pool id, client ids, secrets and user ``sub`` values
    (tokens and personal memories then survive a restart of ``make dev``); it is
    process-global, so leave it ``None`` in tests. ``audit_tap`` subscribes a queue
    to the audit bus so published events can be read back (``read_audit_events``);
    emulated SQS costs tens of milliseconds of CPU an event, so ``make dev`` leaves
    it off unless asked (``MEMORY_AUDIT_TAP=1``). ``own_process`` runs the server
    in a child process (``python -m memory_local.aws``), which ``stop`` ends and
    which exits by itself if this process dies; ``niceness`` lowers its scheduling
    priority (``nice``), so it takes the CPU the request path leaves.
    """

    def __init__(
        self,
        *,
        region: str = "us-east-1",
        host: str = "127.0.0.1",
        port: int = 0,
        endpoint_url: str | None = None,
        seed: int | None = None,
        quiet: bool = True,
        audit_tap: bool = True,
        tap_keep: int = TAP_KEEP,
        tap_rotate: int = TAP_ROTATE,
        own_process: bool = False,
        niceness: int = 0,
    ) -> None:
        self.region = region
        self.host = host
        self.port = port
        self.seed = seed
        self.quiet = quiet
        self.own_process = own_process
        self.niceness = niceness
        self._endpoint_url = endpoint_url
        self._server: ThreadedMotoServer | None = None
        self._process: subprocess.Popen[str] | None = None
        self._clients: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._session_lock = threading.Lock()
        self._session: Any = None
        self._provisioned: Provisioned | None = None
        # The audit tap: the queue the rule delivers to now, and what was drained.
        self.audit_tap = audit_tap
        self._tap_lock = _TAP.lock
        self.tap_keep, self.tap_rotate = tap_keep, tap_rotate
        self._tap_events = _TAP.events

    # -- lifecycle ------------------------------------------------------------

    def start(self) -> LocalAws:
        if self._server is not None or self._process is not None:
            return self
        if self._endpoint_url is None and self.own_process:
            self._start_process()
        elif self._endpoint_url is None:
            if self.quiet:
                _quiet_werkzeug()
            _cache_module_listing()
            server = ThreadedMotoServer(ip_address=self.host, port=self.port, verbose=False)
            server.start()
            self._server = server
            host, port = server.get_host_and_port()
            self.port = port
            self._endpoint_url = f"http://{host}:{port}"
        if self.seed is not None:
            self._moto_api(f"/moto-api/seed?a={int(self.seed)}")
        return self

    def _start_process(self) -> None:
        # The child learns the parent is gone when its standard input closes (see
        # _serve), so a crashed ``make dev`` leaves no server behind.
        package_root = str(Path(__file__).resolve().parents[1])
        path = os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))
        command = [
            sys.executable,
            "-m",
            "memory_local.aws",
            self.host,
            str(self.port),
            str(self.niceness),
        ]
        if not self.quiet:
            command.append("--verbose")
        process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": path},
            text=True,
        )
        assert process.stdout is not None
        line = process.stdout.readline()  # "host port" once listening
        if not line:
            process.wait(10)
            raise RuntimeError(f"the moto process exited ({process.returncode}) before listening")
        host, port = line.split()
        self._process, self.port = process, int(port)
        self._endpoint_url = f"http://{host}:{port}"

    def stop(self) -> None:
        """Stop the server this object started (an attached one keeps running)."""
        server, self._server = self._server, None
        process, self._process = self._process, None
        self._clients.clear()
        if server is not None:
            server.stop()
            self._endpoint_url = None
        if process is not None:
            process.terminate()  # this child, by its PID
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            for stream in (process.stdin, process.stdout):
                if stream is not None:
                    stream.close()
            self._endpoint_url = None

    @property
    def endpoint_url(self) -> str:
        if self._endpoint_url is None:
            raise RuntimeError("LocalAws is not started")
        return self._endpoint_url

    @property
    def process_id(self) -> int | None:
        """The server's own process (``own_process``), while it runs."""
        return self._process.pid if self._process is not None else None

    def env(self) -> dict[str, str]:
        """Variables that point an AWS SDK (boto3, a child process) at this server.

        ``AWS_SESSION_TOKEN`` is overridden too, so a developer's real session
        token is never paired with the fake keys and sent anywhere.
        """
        return {
            "AWS_ENDPOINT_URL": self.endpoint_url,
            "AWS_ACCESS_KEY_ID": FAKE_ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": FAKE_SECRET_KEY,
            "AWS_SESSION_TOKEN": "testing",
            "AWS_DEFAULT_REGION": self.region,
            "AWS_REGION": self.region,
        }

    def client(self, service: str) -> Any:
        """A new boto3 client for ``service`` pointed at this server."""
        # A private session, kept: it caches the service models (loading them is
        # most of a client's creation time). Sessions are not thread-safe, hence
        # the lock; the clients they make are. Explicit credentials beat whatever
        # AWS_* variables the shell has.
        with self._session_lock:
            if self._session is None:
                self._session = boto3.session.Session(
                    aws_access_key_id=FAKE_ACCESS_KEY,
                    aws_secret_access_key=FAKE_SECRET_KEY,
                    aws_session_token="testing",  # noqa: S106 - moto's fake credentials
                    region_name=self.region,
                )
            return self._session.client(service, endpoint_url=self.endpoint_url)

    def _client(self, service: str) -> Any:
        """A cached client for this module's own calls (boto3 clients are thread-safe)."""
        with self._lock:
            if service not in self._clients:
                self._clients[service] = self.client(service)
            return self._clients[service]

    def _moto_api(self, path: str) -> None:
        request = urllib.request.Request(self.endpoint_url + path, method="POST")  # noqa: S310 - our own http:// endpoint
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            response.read()

    # -- provisioning ---------------------------------------------------------

    @property
    def provisioned(self) -> Provisioned:
        if self._provisioned is None:
            raise RuntimeError("call LocalAws.provision() first")
        return self._provisioned

    def provision(self) -> Provisioned:
        """Create what the service needs; safe to repeat on a provisioned server.

        Everything is found by name first and created only when missing, so a
        second call (or a second ``LocalAws`` attached to the same server)
        returns the same identifiers.
        """
        pool_id = self._ensure_user_pool()
        self._ensure_resource_server(pool_id)
        people_client_id = self._ensure_people_client(pool_id)
        # Powertools' default idempotency schema: key ``id``, TTL on ``expiration``.
        self._ensure_table(IDEMPOTENCY_TABLE, "id", "expiration")
        # template.yaml's ``SigninTable``: key ``pk``, TTL on ``expires_at``.
        self._ensure_table(SIGNIN_TABLE, "pk", "expires_at")
        self._ensure_bus()
        queue_url = ""
        if self.audit_tap:
            with self._tap_lock:
                queue_url = self._ensure_audit_tap()
        self._provisioned = Provisioned(
            region=self.region,
            user_pool_id=pool_id,
            people_client_id=people_client_id,
            issuer=cognito_issuer(self.region, pool_id),
            table_name=IDEMPOTENCY_TABLE,
            bus_name=AUDIT_BUS,
            queue_url=queue_url,
        )
        return self._provisioned

    def _ensure_user_pool(self) -> str:
        cognito = self._client("cognito-idp")
        for page in _pages(cognito, "list_user_pools", "UserPools", MaxResults=60):
            if page.get("Name") == USER_POOL_NAME:
                return str(page["Id"])
        pool = cognito.create_user_pool(PoolName=USER_POOL_NAME)["UserPool"]
        return str(pool["Id"])

    def _ensure_resource_server(self, pool_id: str) -> None:
        cognito = self._client("cognito-idp")
        scopes = [
            {"ScopeName": name, "ScopeDescription": _SCOPE_DESCRIPTIONS[name]}
            for name in SCOPE_NAMES
        ]
        try:
            cognito.describe_resource_server(UserPoolId=pool_id, Identifier=RESOURCE_SERVER)
        except cognito.exceptions.ResourceNotFoundException:
            cognito.create_resource_server(
                UserPoolId=pool_id, Identifier=RESOURCE_SERVER, Name="memory", Scopes=scopes
            )
        # An existing one is left as it is: moto has no UpdateResourceServer, and
        # only this code creates it.

    def _find_client(self, pool_id: str, name: str) -> str | None:
        cognito = self._client("cognito-idp")
        pages = _pages(
            cognito, "list_user_pool_clients", "UserPoolClients", UserPoolId=pool_id, MaxResults=60
        )
        for client in pages:
            if client.get("ClientName") == name:
                return str(client["ClientId"])
        return None

    def _ensure_people_client(self, pool_id: str) -> str:
        existing = self._find_client(pool_id, PEOPLE_CLIENT_NAME)
        if existing is not None:
            return existing
        # A public client (no secret): people sign in through the hosted UI with
        # authorization code + PKCE; the password flows are for scripted tests.
        created = self._client("cognito-idp").create_user_pool_client(
            UserPoolId=pool_id,
            ClientName=PEOPLE_CLIENT_NAME,
            GenerateSecret=False,
            ExplicitAuthFlows=[
                "ALLOW_USER_SRP_AUTH",
                "ALLOW_USER_PASSWORD_AUTH",
                "ALLOW_ADMIN_USER_PASSWORD_AUTH",
                "ALLOW_REFRESH_TOKEN_AUTH",
            ],
            AllowedOAuthFlows=["code"],
            AllowedOAuthScopes=["openid", *MEMORY_SCOPES],
            AllowedOAuthFlowsUserPoolClient=True,
            CallbackURLs=["http://localhost/callback"],
            SupportedIdentityProviders=["COGNITO"],
        )["UserPoolClient"]
        return str(created["ClientId"])

    def ensure_console_client(self, callback_urls: Sequence[str]) -> str:
        """The web console's public app client (the template's ``ConsoleClient``):
        authorization code + PKCE, every memory scope, exactly ``callback_urls`` (the
        console's own address on this machine, set again on every start since the
        port may change)."""
        return self._ensure_public_client(CONSOLE_CLIENT_NAME, callback_urls, MEMORY_SCOPES)

    def ensure_document_client(self, callback_urls: Sequence[str]) -> str:
        """The app client metadata-document clients sign in through (the template's
        ``DocumentClient``): the MCP scopes, the front door's callback only."""
        scopes = [scope for scope in MEMORY_SCOPES if scope != f"{RESOURCE_SERVER}/admin"]
        return self._ensure_public_client(DOCUMENT_CLIENT_NAME, callback_urls, scopes)

    def _ensure_public_client(
        self, name: str, callback_urls: Sequence[str], scopes: Sequence[str]
    ) -> str:
        pool_id = self.provisioned.user_pool_id
        settings: dict[str, Any] = {
            "UserPoolId": pool_id,
            "ClientName": name,
            "ExplicitAuthFlows": ["ALLOW_REFRESH_TOKEN_AUTH"],
            "AllowedOAuthFlows": ["code"],
            "AllowedOAuthScopes": list(scopes),
            "AllowedOAuthFlowsUserPoolClient": True,
            "CallbackURLs": list(callback_urls),
            "SupportedIdentityProviders": ["COGNITO"],
        }
        cognito = self._client("cognito-idp")
        existing = self._find_client(pool_id, name)
        if existing is not None:
            cognito.update_user_pool_client(ClientId=existing, **settings)
            return existing
        created = cognito.create_user_pool_client(GenerateSecret=False, **settings)
        return str(created["UserPoolClient"]["ClientId"])

    def _ensure_table(self, name: str, key: str, ttl_attribute: str) -> None:
        """A table keyed by the string attribute ``key``, with TTL on ``ttl_attribute``:
        made when missing, its TTL switched on when it is not."""
        dynamodb = self._client("dynamodb")
        try:
            dynamodb.describe_table(TableName=name)
        except dynamodb.exceptions.ResourceNotFoundException:
            dynamodb.create_table(
                TableName=name,
                AttributeDefinitions=[{"AttributeName": key, "AttributeType": "S"}],
                KeySchema=[{"AttributeName": key, "KeyType": "HASH"}],
                BillingMode="PAY_PER_REQUEST",
            )
            dynamodb.get_waiter("table_exists").wait(
                TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 30}
            )
        ttl = dynamodb.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
        if ttl.get("TimeToLiveStatus") != "ENABLED":
            dynamodb.update_time_to_live(
                TableName=name,
                TimeToLiveSpecification={"Enabled": True, "AttributeName": ttl_attribute},
            )

    def _ensure_bus(self) -> None:
        events = self._client("events")
        try:
            events.describe_event_bus(Name=AUDIT_BUS)
        except events.exceptions.ResourceNotFoundException:
            events.create_event_bus(Name=AUDIT_BUS)

    def _current_tap_queue(self) -> str | None:
        """The name of the queue the tap rule delivers to (None: no rule or target)."""
        events = self._client("events")
        try:
            targets = events.list_targets_by_rule(Rule=AUDIT_TAP_RULE, EventBusName=AUDIT_BUS)
        except events.exceptions.ResourceNotFoundException:
            return None
        for target in targets.get("Targets", []):
            if target["Id"] == AUDIT_TAP_TARGET:
                return str(target["Arn"]).rsplit(":", 1)[1]
        return None

    def _ensure_audit_tap(self, name: str | None = None) -> str:
        """A queue subscribed to the bus, so tests can read back published events.

        EventBridge keeps nothing that can be queried afterwards; in AWS one would
        subscribe a queue or a log group the same way. The queue is the one the rule
        already delivers to (it is replaced as events flow: ``TAP_ROTATE``), or
        ``name``, or a first one.
        """
        sqs, events = self._client("sqs"), self._client("events")
        name = name or self._current_tap_queue() or AUDIT_TAP_QUEUE
        queue_url = str(sqs.create_queue(QueueName=name)["QueueUrl"])  # idempotent
        queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        # put_rule and put_targets are upserts, so repeating them changes nothing.
        events.put_rule(
            Name=AUDIT_TAP_RULE,
            EventBusName=AUDIT_BUS,
            EventPattern=json.dumps({"source": [AUDIT_SOURCE]}),
            State="ENABLED",
        )
        events.put_targets(
            Rule=AUDIT_TAP_RULE,
            EventBusName=AUDIT_BUS,
            Targets=[{"Id": AUDIT_TAP_TARGET, "Arn": queue_arn}],
        )
        _TAP.url = queue_url
        return queue_url

    def expire_idempotency_records(self, now: float | None = None) -> int:
        """Delete idempotency records past their TTL, as DynamoDB's TTL does (moto keeps
        them for ever); ``make dev`` calls this now and then. Returns how many."""
        dynamodb = self._client("dynamodb")
        cutoff = int(time.time() if now is None else now)
        expired = 0
        for page in dynamodb.get_paginator("scan").paginate(
            TableName=IDEMPOTENCY_TABLE,
            ProjectionExpression="id",
            FilterExpression="expiration < :now",
            ExpressionAttributeValues={":now": {"N": str(cutoff)}},
        ):
            for item in page.get("Items", []):
                dynamodb.delete_item(TableName=IDEMPOTENCY_TABLE, Key={"id": item["id"]})
                expired += 1
        return expired

    # -- principals -----------------------------------------------------------

    def create_agent_client(self, name: str, scopes: Sequence[str]) -> tuple[str, str]:
        """A service identity: a client-credentials app client; returns (id, secret).

        Found by name when it exists (its allowed scopes are then set to
        ``scopes``), so seeding a dev server twice keeps one client per name.
        """
        pool_id = self.provisioned.user_pool_id
        cognito = self._client("cognito-idp")
        settings: dict[str, Any] = {
            "AllowedOAuthFlows": ["client_credentials"],
            "AllowedOAuthScopes": list(scopes),
            "AllowedOAuthFlowsUserPoolClient": True,
        }
        client_id = self._find_client(pool_id, name)
        if client_id is None:
            created = cognito.create_user_pool_client(
                UserPoolId=pool_id, ClientName=name, GenerateSecret=True, **settings
            )["UserPoolClient"]
            return str(created["ClientId"]), str(created["ClientSecret"])
        cognito.update_user_pool_client(
            UserPoolId=pool_id, ClientId=client_id, ClientName=name, **settings
        )
        described = self.describe_client(client_id)
        return client_id, str(described["ClientSecret"])

    def describe_client(self, client_id: str) -> dict[str, Any]:
        """``DescribeUserPoolClient`` of a client in the pool (raises if unknown)."""
        cognito = self._client("cognito-idp")
        response = cognito.describe_user_pool_client(
            UserPoolId=self.provisioned.user_pool_id, ClientId=client_id
        )
        return dict(response["UserPoolClient"])

    def create_user(self, username: str) -> str:
        """A person in the pool; returns their ``sub`` (the same one if they exist)."""
        pool_id = self.provisioned.user_pool_id
        cognito = self._client("cognito-idp")
        try:
            user = cognito.admin_create_user(
                UserPoolId=pool_id, Username=username, MessageAction="SUPPRESS"
            )["User"]
            attributes = user["Attributes"]
        except cognito.exceptions.UsernameExistsException:
            attributes = cognito.admin_get_user(UserPoolId=pool_id, Username=username)[
                "UserAttributes"
            ]
        for attribute in attributes:
            if attribute["Name"] == "sub":
                return str(attribute["Value"])
        raise RuntimeError(f"user {username!r} has no sub attribute")

    def people(self) -> dict[str, str]:
        """The pool's users: user name → ``sub`` (the local sign-in page's choices)."""
        cognito = self._client("cognito-idp")
        found: dict[str, str] = {}
        pages = _pages(cognito, "list_users", "Users", UserPoolId=self.provisioned.user_pool_id)
        for user in pages:
            if not user.get("Enabled", True):
                continue
            for attribute in user.get("Attributes", []):
                if attribute["Name"] == "sub":
                    found[str(user["Username"])] = str(attribute["Value"])
        return found

    # -- audit ----------------------------------------------------------------

    def read_audit_events(self, wait_s: float = 0.0) -> list[dict[str, Any]]:
        """Every event published since the last call, oldest first (as far as the
        ring holds them: the latest ``TAP_KEEP``).

        Moto delivers to the queue inside ``PutEvents``, so no wait is needed here;
        ``wait_s`` (long polling, whole seconds) is for a real, asynchronous bus.
        """
        if not self.audit_tap:
            raise RuntimeError("this LocalAws has no audit tap (audit_tap=False)")
        with self._tap_lock:
            self._drain(int(wait_s))
            # A standard queue does not promise order; the send time restores it.
            ordered = sorted(self._tap_events, key=lambda pair: pair[0])
            self._tap_events.clear()
        return [event for _, event in ordered]

    @property
    def tap_dropped(self) -> int:
        """Events pushed out of the ring (``tap_keep``) before anyone read them."""
        return _TAP.dropped

    def set_audit_tap(self, on: bool) -> None:
        """Subscribe the tap to the bus, or unsubscribe it (events then reach no
        target, as under ``make dev`` by default); what it already holds stays."""
        with self._tap_lock:
            if on:
                self._ensure_audit_tap()
            else:
                self._drain(0)
                self._client("events").remove_targets(
                    Rule=AUDIT_TAP_RULE, EventBusName=AUDIT_BUS, Ids=[AUDIT_TAP_TARGET]
                )
            self.audit_tap = on

    def drain_audit_tap(self) -> int:
        """Move what the tap queue holds into the ring (``make dev`` calls this every
        second, so the emulated queue stays short); returns how many."""
        if not self.audit_tap:
            return 0
        with self._tap_lock:
            return self._drain(0)

    def _drain(self, wait: int) -> int:
        if not _TAP.url:
            self._ensure_audit_tap()
        try:
            moved = self._receive_all(_TAP.url, wait)
        except self._client("sqs").exceptions.QueueDoesNotExist:
            # Replaced by another LocalAws on the same server: follow the rule.
            self._ensure_audit_tap()
            moved = self._receive_all(_TAP.url, wait)
        _TAP.taken += moved
        if _TAP.taken >= self.tap_rotate:
            moved += self._rotate()
        return moved

    def _receive_all(self, queue_url: str, wait: int) -> int:
        sqs = self._client("sqs")
        moved = 0
        while True:
            response = sqs.receive_message(
                QueueUrl=queue_url,
                MaxNumberOfMessages=10,
                WaitTimeSeconds=wait,
                AttributeNames=["SentTimestamp"],
            )
            messages = response.get("Messages", [])
            if not messages:
                return moved
            wait = 0
            for message in messages:
                while len(self._tap_events) >= self.tap_keep:
                    self._tap_events.popleft()
                    _TAP.dropped += 1
                sent = int(message["Attributes"]["SentTimestamp"])
                self._tap_events.append((sent, json.loads(message["Body"])))
            sqs.delete_message_batch(
                QueueUrl=queue_url,
                Entries=[
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
                    for i, m in enumerate(messages)
                ],
            )
            moved += len(messages)

    def _rotate(self) -> int:
        """Point the rule at a fresh queue, drain the old one, delete it."""
        old_url = _TAP.url
        # The rule's target is now the new queue.
        self._ensure_audit_tap(f"{AUDIT_TAP_QUEUE}-{uuid.uuid4().hex[:12]}")
        moved = self._receive_all(old_url, 0)  # what arrived before the switch
        self._client("sqs").delete_queue(QueueUrl=old_url)
        _TAP.taken = 0
        return moved


def _pages(client: Any, operation: str, key: str, **kwargs: Any) -> Iterator[dict[str, Any]]:
    """Every item of a paginated list call (pools and clients can exceed a page)."""
    for page in client.get_paginator(operation).paginate(**kwargs):
        yield from page.get(key, [])


def _cache_module_listing() -> None:
    """Have moto's server list its own service packages once, not at every request.

    To route a request, moto's server asks whether the host names one of its
    service packages, and answers by listing its package directory (a directory
    check per entry, ~180 ``stat`` calls) each time: about half of the CPU an
    emulated call costs (measured on ``ListEventBuses``: 1.5-2.2 ms of CPU a call,
    0.9-1.0 ms with the listing cached). The directory does not change while the
    process runs.
    """
    listing = tuple(moto.backends.list_of_moto_modules())
    moto.backends.list_of_moto_modules = lambda: listing


def _quiet_werkzeug() -> None:
    """Silence moto's per-request access log unless the application configured it.

    Moto serves through werkzeug, which logs every request at INFO to stderr on a
    logger it configures itself when nobody else has.
    """
    logger = logging.getLogger("werkzeug")
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.WARNING)


def _serve(host: str, port: int, niceness: int, verbose: bool) -> None:
    """The child of ``LocalAws(own_process=True)``: serve until standard input closes
    (the parent stopped or died), after printing where it listens."""
    if niceness > 0:
        os.nice(niceness)
    if not verbose:
        _quiet_werkzeug()
    _cache_module_listing()
    server = ThreadedMotoServer(ip_address=host, port=port, verbose=False)
    server.start()
    bound_host, bound_port = server.get_host_and_port()
    print(bound_host, bound_port, flush=True)
    sys.stdin.read()
    server.stop()


if __name__ == "__main__":
    _serve(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), "--verbose" in sys.argv[4:])
