"""``ManagementFunction``: the only code that writes to the user pool.

Outside the VPC, with its own role (create and delete app clients in the pool, its
table, the audit bus), it answers three kinds of event:

- HTTP API events (payload 2.0) on two public routes: ``GET
  /.well-known/oauth-authorization-server`` (RFC 8414 metadata) and ``POST /register``
  (RFC 7591 registration: loopback redirects or the operator's allowed https ones,
  rate-limited per source and in total, audited on the audit bus, recorded in the
  sign-in table);
- direct invocations from the MCP function's admin API (``LambdaDirectory``):
  ``{"action": "create_agent_client", "name", "scopes"}`` and ``{"action":
  "delete_agent_client", "client_id"}``;
- the schedule's ``{"action": "sweep_clients"}``: registered clients unused for
  ``CLIENT_IDLE_DAYS``, or never used a day after registering, are deleted from the
  pool (and audited).

An HTTP request can never reach the direct actions: API Gateway's events always carry
``requestContext``, and only an event without it is read as an action.
"""

from __future__ import annotations

import json
import logging
import os
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from memory_server.domain.errors import OAuthError, ServiceError, http_answer
from memory_server.domain.grants import SCOPE_GRANTS
from memory_server.domain.limits import (
    REGISTERED_CLIENT_IDLE_DAYS,
    REGISTERED_CLIENT_UNUSED_GRACE_S,
    REGISTRATIONS_PER_HOUR,
    REGISTRATIONS_PER_SOURCE_PER_HOUR,
)
from memory_server.gateway.events import base_url, json_response, request_body
from memory_server.signin.registration import (
    DEFAULT_ALLOWED_REDIRECT_URIS,
    GRANT_TYPES,
    METADATA_PATH,
    REGISTER_PATH,
    allowed_redirect_uris,
    cognito_client_name,
    parse_registration,
    server_metadata,
)
from memory_server.signin.registry import ClientRecord, SigninTable, source_bucket

logger = logging.getLogger(__name__)

# The audit bus's source (memory_server.operations.audit_events.SOURCE).
AUDIT_SOURCE = "memory-server"
METADATA_ROUTE = f"GET {METADATA_PATH}"
REGISTER_ROUTE = f"POST {REGISTER_PATH}"
HOUR = 3600  # seconds
# What the template sets (build_management reads exactly these).
ENVIRONMENT = (
    "USER_POOL_ID",
    "OAUTH_BASE_URL",
    "PUBLIC_BASE_URL",
    "SIGNIN_TABLE",
    "AUDIT_BUS_NAME",
    "CLIENT_IDLE_DAYS",
    "ALLOWED_REDIRECT_URIS",
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
    clock: Callable[[], float] = time.time
    _actions: dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = field(init=False)

    def __post_init__(self) -> None:
        self._actions = {
            "create_agent_client": self._create_agent_client,
            "delete_agent_client": self._delete_agent_client,
            "sweep_clients": lambda _event: self.sweep_clients(),
        }

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
        # Counted before anything is created, refused attempts included.
        if self.table.hit(source_bucket(source), HOUR, now) > REGISTRATIONS_PER_SOURCE_PER_HOUR:
            raise _slow_down(now, "too many registrations from this address")
        if self.table.hit("all", HOUR, now) > REGISTRATIONS_PER_HOUR:
            raise _slow_down(now, "too many registrations; try again later")

        number = uuid.uuid4().hex[:12]
        try:
            client_id = self.cognito.create_public_client(
                cognito_client_name(request.client_name, number),
                request.redirect_uris,
                request.scopes,
            )
        except Exception as exc:
            raise _cognito_refusal(exc) from exc
        record = ClientRecord(
            client_id=client_id,
            created_at=int(now),
            last_used=None,
            name=request.client_name or "",
            redirect_uris=request.redirect_uris,
            scopes=request.scopes,
        )
        try:
            self.table.add_client(record)
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
            self.cognito.delete_agent_client(client_id)
            self.table.remove_client(client_id)
            raise OAuthError(
                503, "temporarily_unavailable", "registration failed; try again"
            ) from None
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

    # -- actions: agent keys for the admin API, the sweep ------------------------

    def _create_agent_client(self, event: Mapping[str, Any]) -> dict[str, Any]:
        name, scopes = event.get("name"), event.get("scopes")
        if not isinstance(name, str) or not isinstance(scopes, list):
            raise ValueError("create_agent_client needs a name and a list of scopes")
        if not scopes or not all(s in SCOPE_GRANTS for s in scopes):
            raise ValueError("an agent key's scopes are memory/* scopes")
        client_id, secret = self.cognito.create_agent_client(name, scopes)
        return {"client_id": client_id, "client_secret": secret}

    def _delete_agent_client(self, event: Mapping[str, Any]) -> dict[str, Any]:
        client_id = event.get("client_id")
        if not isinstance(client_id, str) or not client_id:
            raise ValueError("delete_agent_client needs a client_id")
        return {"deleted": bool(self.cognito.delete_agent_client(client_id))}

    def sweep_clients(self) -> dict[str, Any]:
        """Delete registered clients whose last use is ``idle_days`` old, and those
        never used a day after they registered (an abandoned sign-in)."""
        now = self.clock()
        idle_cutoff = now - self.idle_days * 86_400
        unused_cutoff = now - REGISTERED_CLIENT_UNUSED_GRACE_S
        removed: list[str] = []
        kept = 0
        for record in self.table.clients():
            cutoff = unused_cutoff if record.last_used is None else idle_cutoff
            if record.last_activity >= cutoff:
                kept += 1
                continue
            existed = self.cognito.delete_agent_client(record.client_id)
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
        return {"removed": removed, "kept": kept}

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
        # The pool's app-client quota (docs/deploy.md): nothing to do but wait for the
        # sweep or ask for more.
        logger.error("the user pool's app client quota is reached")
        return OAuthError(503, "temporarily_unavailable", "no more clients can be registered now")
    if code == "InvalidParameterException":
        return OAuthError(400, "invalid_client_metadata", "the user pool refused the client")
    logger.error("CreateUserPoolClient failed: %s", exc)
    return OAuthError(503, "temporarily_unavailable", "registration failed; try again")


def build_management(env: Mapping[str, str] = os.environ) -> Management:
    """From the template's environment: ``USER_POOL_ID``, ``OAUTH_BASE_URL``,
    ``SIGNIN_TABLE``, ``PUBLIC_BASE_URL``, ``AUDIT_BUS_NAME``, ``CLIENT_IDLE_DAYS``,
    ``ALLOWED_REDIRECT_URIS`` (unset: the default allow-list)."""
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
    )
