"""``ManagementFunction``: the only code that writes to the user pool.

Outside the VPC, with its own role (create and delete app clients in the pool, its
table, the audit bus), it answers three kinds of event:

- HTTP API events (payload 2.0) on two public routes: ``GET
  /.well-known/oauth-authorization-server`` (RFC 8414 metadata) and ``POST /register``
  (RFC 7591 registration: loopback redirects or the operator's allowed https ones,
  rate-limited per source, then in total, under a ceiling of live registered clients
  that leaves the rest of the pool's app-client quota to agent keys; audited on the
  audit bus, recorded in the sign-in table);
- direct invocations from the MCP function's admin API (``LambdaDirectory``):
  ``{"action": "create_agent_client", "workspace", "name", "scopes", "created_by"}``
  and ``{"action": "delete_agent_client", "workspace", "client_id"}``. It makes only
  what an agent key may be (``domain.grants``), records whose it is, and deletes only
  a client it recorded for that workspace: anything else (the people client, a
  registered client, another workspace's key) answers as an unknown client does;
- the schedule's ``{"action": "sweep_clients"}``: registered clients no member used
  within ``REGISTERED_CLIENT_UNUSED_GRACE_S`` of registering, or unused for
  ``CLIENT_IDLE_DAYS``, are deleted from the pool (and audited); places under the
  ceiling held by registrations that died midway are given back.

An HTTP request can never reach the direct actions: API Gateway's events always carry
``requestContext``, and only an event without it is read as an action.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from memory_server.domain.errors import OAuthError, ServiceError, http_answer
from memory_server.domain.grants import AGENT_KEY_NAME_PATTERN, agent_key_scope_problem
from memory_server.domain.limits import (
    APP_CLIENTS_RESERVED,
    CLIENT_SWEEP_EVERY_S,
    REGISTERED_CLIENT_IDLE_DAYS,
    REGISTERED_CLIENT_UNUSED_GRACE_S,
    REGISTRATION_RESERVATION_TTL_S,
    REGISTRATIONS_PER_HOUR,
    REGISTRATIONS_PER_SOURCE_PER_HOUR,
    USER_POOL_APP_CLIENT_QUOTA,
)
from memory_server.gateway.events import SLUG, base_url, json_response, request_body
from memory_server.signin.registration import (
    DEFAULT_ALLOWED_REDIRECT_URIS,
    GRANT_TYPES,
    METADATA_PATH,
    REGISTER_PATH,
    ClientRequest,
    allowed_redirect_uris,
    cognito_client_name,
    parse_registration,
    server_metadata,
)
from memory_server.signin.registry import (
    AgentClientRecord,
    ClientRecord,
    SigninTable,
    source_bucket,
)

logger = logging.getLogger(__name__)

# The audit bus's source (memory_server.operations.audit_events.SOURCE).
AUDIT_SOURCE = "memory-server"
METADATA_ROUTE = f"GET {METADATA_PATH}"
REGISTER_ROUTE = f"POST {REGISTER_PATH}"
HOUR = 3600  # seconds
TOTAL_BUCKET = "all"  # registrations in total (a source's bucket: registry.source_bucket)
_KEY_NAME = re.compile(AGENT_KEY_NAME_PATTERN)
_PRINCIPAL_ID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
# What the template sets (build_management reads exactly these).
ENVIRONMENT = (
    "USER_POOL_ID",
    "OAUTH_BASE_URL",
    "PUBLIC_BASE_URL",
    "SIGNIN_TABLE",
    "AUDIT_BUS_NAME",
    "CLIENT_IDLE_DAYS",
    "ALLOWED_REDIRECT_URIS",
    "APP_CLIENT_QUOTA",
)


@dataclass
class Management:
    cognito: Any  # a CognitoDirectory
    table: SigninTable
    oauth_base_url: str  # the user pool's domain (authorize and token endpoints)
    public_base_url: str | None = None
    events_client: Any = None
    audit_bus: str | None = None
    idle_days: int = REGISTERED_CLIENT_IDLE_DAYS
    # The https redirect URIs registration accepts (loopback ones always are).
    allowed_redirect_uris: frozenset[str] = frozenset(DEFAULT_ALLOWED_REDIRECT_URIS)
    # The pool's app-client quota; registered clients stop APP_CLIENTS_RESERVED below it.
    app_client_quota: int = USER_POOL_APP_CLIENT_QUOTA
    clock: Callable[[], float] = time.time
    _actions: dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = field(init=False)

    def __post_init__(self) -> None:
        self._actions = {
            "create_agent_client": self._create_agent_client,
            "delete_agent_client": self._delete_agent_client,
            "sweep_clients": lambda _event: self.sweep_clients(),
        }

    @property
    def registered_ceiling(self) -> int:
        """How many registered clients may live at once."""
        return max(0, self.app_client_quota - APP_CLIENTS_RESERVED)

    def route(self, event: Mapping[str, Any], context: Any = None) -> dict[str, Any]:
        if "requestContext" in event:
            return self._http(event)
        action = event.get("action")
        if not isinstance(action, str) or action not in self._actions:
            raise ValueError(f"unknown management action {action!r}")
        return self._actions[action](event)

    # -- HTTP: discovery and registration ---------------------------------------

    def _http(self, event: Mapping[str, Any]) -> dict[str, Any]:
        route = event.get("routeKey")
        try:
            if route == METADATA_ROUTE:
                return json_response(
                    200,
                    server_metadata(base_url(event, self.public_base_url), self.oauth_base_url),
                    {"cache-control": "public, max-age=3600"},
                )
            if route == REGISTER_ROUTE:
                return self._register(event)
            return json_response(404, {"message": "Not Found"})
        except ServiceError as error:
            status, body, headers = http_answer(error)
            return json_response(status, body, headers)

    def _register(self, event: Mapping[str, Any]) -> dict[str, Any]:
        request = parse_registration(request_body(event), self.allowed_redirect_uris)
        context = event.get("requestContext", {})
        source = str(context.get("http", {}).get("sourceIp", "unknown"))
        now = self.clock()
        # A source's own limit first, counting its every well-formed attempt: a source
        # over it is refused before it can touch the total.
        if self.table.hit(source_bucket(source), HOUR, now) > REGISTRATIONS_PER_SOURCE_PER_HOUR:
            raise _slow_down(now, "too many registrations from this address")
        # The total counts registrations that succeed (taken now, given back on failure).
        if not self.table.take(TOTAL_BUCKET, HOUR, now, REGISTRATIONS_PER_HOUR):
            raise _slow_down(now, "too many registrations; try again later")
        number = uuid.uuid4().hex[:12]
        if not self.table.reserve(number, now, self.registered_ceiling):
            self.table.give_back(TOTAL_BUCKET, HOUR, now)
            logger.warning("registration refused: %d registered clients", self.registered_ceiling)
            raise OAuthError(
                503,
                "temporarily_unavailable",
                f"the server holds as many registered clients as it may "
                f"({self.registered_ceiling}); unused ones are removed within the hour",
                {"retry-after": str(CLIENT_SWEEP_EVERY_S)},
            )
        try:
            client_id = self._create_registered(number, request, source, context, now)
        except BaseException:
            self.table.give_back(TOTAL_BUCKET, HOUR, now)
            raise
        logger.info("registered client %s (%s) for %s", client_id, request.client_name, source)
        registered: dict[str, Any] = {
            "client_id": client_id,
            "client_id_issued_at": int(now),
            "redirect_uris": request.redirect_uris,
            "grant_types": list(GRANT_TYPES),
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            "scope": " ".join(request.scopes),
        }
        if request.client_name:
            registered["client_name"] = request.client_name
        return json_response(201, registered, {"cache-control": "no-store"})

    def _create_registered(
        self,
        number: str,
        request: ClientRequest,
        source: str,
        context: Mapping[str, Any],
        now: float,
    ) -> str:
        """The app client of registration ``number`` (its place held), recorded and
        audited; on any failure nothing is left but a 4xx/503 to answer."""
        try:
            client_id: str = self.cognito.create_public_client(
                cognito_client_name(request.client_name, number),
                request.redirect_uris,
                request.scopes,
            )
        except Exception as exc:
            self.table.release(number)
            raise _cognito_refusal(exc) from exc
        record = ClientRecord(
            client_id=client_id,
            created_at=int(now),
            last_used=None,
            name=request.client_name or "",
            redirect_uris=request.redirect_uris,
            scopes=request.scopes,
        )
        recorded = False
        try:
            self.table.add_client(number, record)
            recorded = True
            self._audit(
                "ClientRegistered",
                {
                    "client_id": client_id,
                    "client_name": request.client_name,
                    "redirect_uris": request.redirect_uris,
                    "refused_redirect_uris": request.refused_uris,
                    "scopes": request.scopes,
                    "source_ip": source,
                    "request_id": context.get("requestId"),
                },
                now,
            )
        except Exception:
            # No client without its record and its audit event: undo, let it retry.
            logger.exception("registration of %s not recorded; deleting it again", client_id)
            self.cognito.delete_app_client(client_id)
            if recorded:
                self.table.remove_client(client_id)
            else:
                self.table.release(number)
            raise OAuthError(
                503, "temporarily_unavailable", "registration failed; try again"
            ) from None
        return client_id

    # -- actions: agent keys for the admin API, the sweep ------------------------

    def _create_agent_client(self, event: Mapping[str, Any]) -> dict[str, Any]:
        """An agent key's app client for ``workspace``, named ``{workspace}.{name}``
        here (not by the caller), recorded as made by ``created_by`` for it."""
        workspace, name = event.get("workspace"), event.get("name")
        scopes, created_by = event.get("scopes"), event.get("created_by")
        if not isinstance(workspace, str) or not SLUG.fullmatch(workspace):
            raise ValueError("create_agent_client needs the workspace's slug")
        if not isinstance(name, str) or not _KEY_NAME.fullmatch(name):
            raise ValueError("an agent key's name is 1-64 letters, digits, '_', '.', '-'")
        problem = agent_key_scope_problem(scopes)
        if problem is not None:
            raise ValueError(problem)
        if not isinstance(created_by, str) or not _PRINCIPAL_ID.fullmatch(created_by):
            raise ValueError("create_agent_client needs the creating admin's principal id")
        assert isinstance(scopes, list)
        client_id, secret = self.cognito.create_key_client(f"{workspace}.{name}", scopes)
        try:
            self.table.add_agent_client(
                AgentClientRecord(
                    client_id=client_id,
                    workspace=workspace,
                    created_by=created_by,
                    name=name,
                    scopes=list(scopes),
                    created_at=int(self.clock()),
                )
            )
        except Exception:
            # A client nobody recorded could never be deleted through this function.
            self.cognito.delete_app_client(client_id)
            raise
        logger.info("agent client %s made for %s by %s", client_id, workspace, created_by)
        return {"client_id": client_id, "client_secret": secret}

    def _delete_agent_client(self, event: Mapping[str, Any]) -> dict[str, Any]:
        """Delete an agent key's app client this function made for ``workspace``.
        Any other client id (the people client, a registered client, another
        workspace's key, one that is gone) answers ``deleted: false`` and is left
        alone."""
        workspace, client_id = event.get("workspace"), event.get("client_id")
        if not isinstance(workspace, str) or not SLUG.fullmatch(workspace):
            raise ValueError("delete_agent_client needs the workspace's slug")
        if not isinstance(client_id, str) or not client_id:
            raise ValueError("delete_agent_client needs a client_id")
        record = self.table.agent_client(client_id)
        if record is None or record.workspace != workspace:
            logger.warning("refused to delete client %s for %s: not its key", client_id, workspace)
            return {"deleted": False}
        existed = bool(self.cognito.delete_app_client(client_id))
        self.table.remove_agent_client(client_id)
        return {"deleted": existed}

    def sweep_clients(self) -> dict[str, Any]:
        """Delete registered clients whose last use is ``idle_days`` old, and those no
        member used within the grace period after they registered (an abandoned
        sign-in, or a client of someone who is no member); give back places held by
        registrations that died midway; count records the ceiling does not yet."""
        now = self.clock()
        idle_cutoff = now - self.idle_days * 86_400
        unused_cutoff = now - REGISTERED_CLIENT_UNUSED_GRACE_S
        removed: list[str] = []
        kept = 0
        for number, created_at in list(self.table.reservations()):
            if created_at < now - REGISTRATION_RESERVATION_TTL_S and self.table.release(number):
                logger.warning("gave back the place of registration %s (never finished)", number)
        for record in list(self.table.clients()):
            cutoff = unused_cutoff if record.last_used is None else idle_cutoff
            if record.last_activity >= cutoff:
                kept += 1
                if not record.counted:
                    self.table.count_client(record.client_id)
                continue
            existed = self.cognito.delete_app_client(record.client_id)
            self.table.remove_client(record.client_id)
            removed.append(record.client_id)
            try:
                self._audit(
                    "ClientRemoved",
                    {
                        "client_id": record.client_id,
                        "client_name": record.name or None,
                        "reason": (
                            "never used"
                            if record.last_used is None
                            else f"unused for {self.idle_days} days"
                        ),
                        "last_used": _iso(record.last_used) if record.last_used else None,
                        "existed": existed,
                    },
                    now,
                )
            except Exception:  # the deletion stands; the log keeps the record
                logger.exception("removal of client %s not audited", record.client_id)
        if removed:
            logger.info("removed %d unused registered clients", len(removed))
        return {"removed": removed, "kept": kept, "live": self.table.live_registered()}

    def _audit(self, detail_type: str, detail: dict[str, Any], now: float) -> None:
        if self.events_client is None or not self.audit_bus:
            logger.info("audit %s %s", detail_type, json.dumps(detail))
            return
        response = self.events_client.put_events(
            Entries=[
                {
                    "Source": AUDIT_SOURCE,
                    "DetailType": detail_type,
                    "Detail": json.dumps({**detail, "time": _iso(now)}),
                    "EventBusName": self.audit_bus,
                }
            ]
        )
        if response.get("FailedEntryCount"):
            raise RuntimeError(f"audit event not accepted: {response['Entries']}")


def _iso(epoch: float) -> str:
    return (
        datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    )


def _slow_down(now: float, message: str) -> OAuthError:
    retry = HOUR - int(now) % HOUR
    return OAuthError(429, "temporarily_unavailable", message, {"retry-after": str(retry)})


def _cognito_refusal(exc: Exception) -> OAuthError:
    code = getattr(exc, "response", {}).get("Error", {}).get("Code", "")
    if code == "LimitExceededException":
        # The pool's app-client quota (docs/deploy.md), below which the ceiling should
        # have stopped registration: the quota is lower than configured, or agent keys
        # took more than their reserved room.
        logger.error("the user pool's app client quota is reached")
        return OAuthError(503, "temporarily_unavailable", "no more clients can be registered now")
    if code == "InvalidParameterException":
        return OAuthError(400, "invalid_client_metadata", "the user pool refused the client")
    logger.error("CreateUserPoolClient failed: %s", exc)
    return OAuthError(503, "temporarily_unavailable", "registration failed; try again")


def build_management(env: Mapping[str, str] = os.environ) -> Management:
    """From the template's environment: ``USER_POOL_ID``, ``OAUTH_BASE_URL``,
    ``SIGNIN_TABLE``, ``PUBLIC_BASE_URL``, ``AUDIT_BUS_NAME``, ``CLIENT_IDLE_DAYS``,
    ``ALLOWED_REDIRECT_URIS`` (unset: the default allow-list) and ``APP_CLIENT_QUOTA``."""
    import boto3

    from memory_server.admin.identity import CognitoDirectory

    return Management(
        cognito=CognitoDirectory(boto3.client("cognito-idp"), env["USER_POOL_ID"]),
        table=SigninTable(boto3.client("dynamodb"), env["SIGNIN_TABLE"]),
        oauth_base_url=env["OAUTH_BASE_URL"].rstrip("/"),
        public_base_url=env.get("PUBLIC_BASE_URL") or None,
        events_client=boto3.client("events") if env.get("AUDIT_BUS_NAME") else None,
        audit_bus=env.get("AUDIT_BUS_NAME") or None,
        idle_days=int(env.get("CLIENT_IDLE_DAYS") or REGISTERED_CLIENT_IDLE_DAYS),
        allowed_redirect_uris=allowed_redirect_uris(env.get("ALLOWED_REDIRECT_URIS")),
        app_client_quota=int(env.get("APP_CLIENT_QUOTA") or USER_POOL_APP_CLIENT_QUOTA),
    )
