"""Database migrations as a CloudFormation custom resource, plus operator tasks.

Custom resource (the event has ``RequestType``):

- Create / Update: ``provision.provision`` with the cluster's master credentials:
  bootstrap the roles (``migrate.bootstrap``, which also handles a master user that
  is not a superuser, as on Aurora), then ``migrate.migrate`` as ``memory_owner``
  over the SQL files of the ``MigrationsLayer`` (``infra/`` shipped as a layer, so
  the build needs no Makefile and the files are the repository's own: the numbered
  migrations in ``/opt/migrations``, the current-state files in ``/opt/schema``).
  Both steps are idempotent, so a re-run applies nothing and only re-sets the role
  passwords.
- Delete: success without touching the database. The schema holds tenants' data;
  it goes only with the cluster (whose deletion policy takes a snapshot).

The outcome always reaches CloudFormation through the pre-signed ``ResponseURL``
(SUCCESS or FAILED with the reason, and a stable PhysicalResourceId), including when
the function is about to time out, so a failed migration rolls the stack back instead
of leaving it waiting for an hour.

Operator tasks (the event has ``operator``): invoked by hand (``aws lambda invoke``)
by whoever holds ``lambda:InvokeFunction`` on this function; they run as the owner
role through ``memory_server.admin.operators``, so they are audited like every
operator change. See ``docs/deploy.md``.

Configuration (environment): ``MIGRATIONS_DIR`` (the schema files are the ``schema``
folder next to it); ``OWNER_SECRET_ARN``,
``RUNTIME_SECRET_ARN``, ``AUDITOR_SECRET_ARN`` (Secrets Manager JSON with ``username``
and ``password``); the administrator either as ``MASTER_SECRET_ARN`` plus ``DB_HOST``,
``DB_PORT``, ``DB_NAME`` (AWS), or as ``DATABASE_ADMIN_URL`` (tests and local runs).

In AWS the master credentials, and the role passwords this function sets, travel only
over TLS that verifies the cluster: ``sslmode=verify-full`` (``DB_SSLMODE`` may say
so, and nothing weaker is accepted) against the Amazon RDS roots shipped in the layer
(``aws_config.cluster_root_certificates``), the host checked against the certificate.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg
from memory_server.admin import operators
from memory_server.data import migrate
from memory_server.data.provision import Passwords, provision, with_role
from memory_server.domain.errors import AdminError
from memory_server.domain.limits import (
    CFN_REASON_MAX_CHARS,
    EMBED_TASK_RECORDS,
    MIGRATIONS_CONNECT_TIMEOUT_S,
    MIGRATIONS_TIMEOUT_MARGIN_S,
)
from memory_server.edge import aws_config
from memory_server.edge.runtime import embedder_from_env
from memory_server.operations.embeddings import backfill
from psycopg.conninfo import make_conninfo

logger = logging.getLogger()
logger.setLevel(logging.INFO)

PHYSICAL_ID = "memory-server-schema"  # one schema per stack; stable across updates
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})

Sender = Callable[[str, bytes], None]


# -- configuration --------------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    admin_conninfo: str
    owner_conninfo: str
    passwords: Passwords
    migrations_dir: Path


def _secret(secrets: Any, arn: str, expected_user: str | None = None) -> dict[str, str]:
    value = json.loads(secrets.get_secret_value(SecretId=arn)["SecretString"])
    if expected_user is not None and value.get("username") != expected_user:
        # A secret wired to the wrong role would silently give a role another's password.
        raise RuntimeError(f"secret {arn} is for {value.get('username')!r}, not {expected_user}")
    return {"username": str(value["username"]), "password": str(value["password"])}


def load_config(env: Mapping[str, str], secrets: Any = None) -> Config:
    if secrets is None:
        import boto3

        secrets = boto3.client("secretsmanager")
    passwords = Passwords(
        owner=_secret(secrets, env["OWNER_SECRET_ARN"], migrate.OWNER_ROLE)["password"],
        runtime=_secret(secrets, env["RUNTIME_SECRET_ARN"], migrate.RUNTIME_ROLE)["password"],
        auditor=_secret(secrets, env["AUDITOR_SECRET_ARN"], migrate.AUDITOR_ROLE)["password"],
    )
    if env.get("DATABASE_ADMIN_URL"):
        admin = make_conninfo(env["DATABASE_ADMIN_URL"])
    else:
        sslmode = env.get("DB_SSLMODE") or aws_config.VERIFIED
        if sslmode != aws_config.VERIFIED:
            # The master password, and the role passwords set over this connection,
            # go only to a server whose certificate and name were checked.
            raise aws_config.ConfigurationError(
                f"the cluster connection needs TLS that verifies the server; "
                f"sslmode={sslmode} is not allowed (use {aws_config.VERIFIED})"
            )
        master = _secret(secrets, env["MASTER_SECRET_ARN"])
        admin = make_conninfo(
            host=env["DB_HOST"],
            port=env.get("DB_PORT", "5432"),
            dbname=env["DB_NAME"],
            user=master["username"],
            password=master["password"],
            sslmode=sslmode,
            sslrootcert=aws_config.cluster_root_certificates(),
        )
    owner = with_role(admin, migrate.OWNER_ROLE, passwords.owner)
    return Config(admin, owner, passwords, Path(env.get("MIGRATIONS_DIR", "/opt/migrations")))


def _connect(conninfo: str, deadline: float, **kwargs: Any) -> psycopg.Connection[Any]:
    """Connect, retrying while a paused cluster resumes, until the deadline (a
    certificate that does not verify is final)."""
    delay = 1.0
    while True:
        try:
            return psycopg.connect(conninfo, connect_timeout=MIGRATIONS_CONNECT_TIMEOUT_S, **kwargs)
        except psycopg.OperationalError as exc:
            # A certificate that did not verify will not on the next try either.
            untrusted = "certificate" in str(exc)
            if untrusted or time.monotonic() + delay + MIGRATIONS_CONNECT_TIMEOUT_S > deadline:
                raise
            logger.warning("database not reachable yet; retrying in %.0f s", delay)
            time.sleep(delay)
            delay = min(delay * 2, 10.0)


def run_migrations(config: Config, deadline: float) -> list[str]:
    """Bootstrap and migrate the cluster's own database (it exists: the cluster made it)."""

    def connect(conninfo: str, **kwargs: Any) -> psycopg.Connection[Any]:
        return _connect(conninfo, deadline, **kwargs)

    done = provision(
        config.admin_conninfo,
        config.passwords,
        migrations_dir=config.migrations_dir,
        connect=connect,
    )
    return done.applied


# -- CloudFormation response ----------------------------------------------------------


def put_response(url: str, body: bytes) -> None:
    """PUT the response to the pre-signed URL (what ``cfnresponse`` does, with urllib)."""
    parts = urlsplit(url)
    if parts.scheme != "https" and not (parts.scheme == "http" and parts.hostname in _LOOPBACK):
        raise ValueError("ResponseURL must be https (plain http only to loopback, for tests)")
    request = urllib.request.Request(  # noqa: S310 - scheme checked above
        url,
        data=body,
        method="PUT",
        # The URL is signed without a content type: sending one breaks the signature.
        headers={"content-type": "", "content-length": str(len(body))},
    )
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
        response.read()


class Responder:
    """Sends exactly one response, whoever asks first (the handler or the watchdog)."""

    def __init__(self, event: Mapping[str, Any], physical_id: str, send: Sender) -> None:
        self.event = event
        self.physical_id = physical_id
        self.send = send
        self._lock = threading.Lock()
        self.sent: dict[str, Any] | None = None

    def respond(self, status: str, reason: str = "", data: dict[str, Any] | None = None) -> None:
        with self._lock:
            if self.sent is not None:
                return
            body = {
                "Status": status,
                "Reason": (reason or status)[:CFN_REASON_MAX_CHARS],
                "PhysicalResourceId": self.physical_id,
                "StackId": self.event["StackId"],
                "RequestId": self.event["RequestId"],
                "LogicalResourceId": self.event["LogicalResourceId"],
                "NoEcho": False,
                "Data": data or {},
            }
            self.sent = body
            try:
                self.send(self.event["ResponseURL"], json.dumps(body).encode())
            except Exception:
                # Nothing else can tell CloudFormation; leave the trace in the logs.
                logger.exception("could not deliver the %s response to CloudFormation", status)


def _remaining_s(context: Any) -> float:
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    return float(remaining()) / 1000 if remaining else 300.0


def handle_custom_resource(
    event: Mapping[str, Any],
    context: Any,
    *,
    env: Mapping[str, str],
    secrets: Any = None,
    send: Sender = put_response,
) -> dict[str, Any]:
    request_type = event["RequestType"]
    # Keep the id CloudFormation already knows: a new one on Update means "replaced",
    # and CloudFormation would then send a Delete for the old one.
    physical_id = str(event.get("PhysicalResourceId") or PHYSICAL_ID)
    responder = Responder(event, physical_id, send)
    budget = _remaining_s(context) - MIGRATIONS_TIMEOUT_MARGIN_S
    watchdog = threading.Timer(
        max(budget, 1.0), responder.respond, args=("FAILED", "migration timed out")
    )
    watchdog.daemon = True
    watchdog.start()
    try:
        if request_type == "Delete":
            responder.respond("SUCCESS", "schema kept; it is deleted with the cluster")
        elif request_type in ("Create", "Update"):
            applied = run_migrations(load_config(env, secrets), time.monotonic() + budget)
            logger.info("migrations applied: %s", applied or "none")
            responder.respond(
                "SUCCESS",
                f"applied {len(applied)} migration(s)",
                {"Applied": ",".join(applied), "AppliedCount": str(len(applied))},
            )
        else:
            responder.respond("FAILED", f"unknown RequestType {request_type!r}")
    except migrate.SchemaAhead as exc:
        # An earlier release's Update: a stack rollback after this database was
        # migrated by the release being rolled back. Failing it would leave the stack in
        # UPDATE_ROLLBACK_FAILED; the schema stays as it is (nothing was applied) and
        # the earlier functions refuse to serve it, naming the way out.
        logger.warning("schema kept: %s", exc)
        responder.respond("SUCCESS", f"schema kept: {exc}")
    except Exception as exc:
        logger.exception("%s failed", request_type)
        responder.respond("FAILED", f"{type(exc).__name__}: {exc}")
    finally:
        watchdog.cancel()
    return responder.sent or {}


# -- operator tasks -------------------------------------------------------------------


@contextmanager
def _owner(env: Mapping[str, str], secrets: Any) -> Iterator[psycopg.Connection[Any]]:
    config = load_config(env, secrets)
    with _connect(config.owner_conninfo, time.monotonic() + 120) as conn, conn.transaction():
        yield conn


def handle_operator(
    event: Mapping[str, Any], *, env: Mapping[str, str], secrets: Any = None
) -> dict[str, Any]:
    task = event["operator"]
    if task == "migrate":  # e.g. after changing a role password in Secrets Manager
        applied = run_migrations(load_config(env, secrets), time.monotonic() + 240)
        return {"ok": True, "applied": applied}
    if task == "embed":  # hybrid recall's backlog: also every five minutes (template)
        embedder = embedder_from_env(env)
        if embedder is None:
            return {"ok": True, "embedded": 0, "waiting": None, "embedder": "off"}
        config = load_config(env, secrets)
        stored, waiting = backfill(
            config.owner_conninfo, embedder, limit=int(event.get("limit", EMBED_TASK_RECORDS))
        )
        return {"ok": True, "embedded": stored, "waiting": waiting, "model": embedder.model}
    try:
        with _owner(env, secrets) as owner:
            return _operator_task(owner, task, event)
    except AdminError as refused:  # the invoker sees the reason as the error message
        raise ValueError(f"{task}: {refused.message}") from refused


def _operator_task(
    owner: psycopg.Connection[Any], task: str, event: Mapping[str, Any]
) -> dict[str, Any]:
    if task == "create_workspace":
        # Idempotent: an existing workspace is kept as it is. Its memory feature
        # changes only when the event names memory_enabled (a re-run without it must
        # not turn the feature off under its members); a new one starts off unless
        # the event says otherwise.
        wanted = event.get("memory_enabled")
        workspace = operators.ensure_workspace(
            owner, event["workspace"], memory_enabled=bool(wanted)
        )
        if wanted is not None:
            operators.set_memory_enabled(owner, workspace, bool(wanted))
        return {"ok": True, "workspace_id": str(workspace)}
    if task == "set_memory_enabled":
        workspace = operators.workspace_id(owner, event["workspace"])
        operators.set_memory_enabled(owner, workspace, bool(event["enabled"]))
        return {"ok": True, "workspace_id": str(workspace)}
    if task == "add_identity":  # known to the service, so workspace admins can add it
        principal = operators.ensure_principal(
            owner, event["kind"], event["subject"], event["handle"]
        )
        return {"ok": True, "principal_id": str(principal)}
    if task == "add_member":
        workspace = operators.workspace_id(owner, event["workspace"])
        principal = operators.ensure_principal(
            owner, event["kind"], event["subject"], event["handle"]
        )
        operators.set_membership(
            owner,
            workspace,
            principal,
            event["grants"],
            personal_namespace=event.get("personal_namespace"),
        )
        return {"ok": True, "workspace_id": str(workspace), "principal_id": str(principal)}
    if task == "register_context":
        workspace = operators.workspace_id(owner, event["workspace"])
        members = operators.member_ids(owner, workspace, event.get("members", []))
        operators.register_context(owner, workspace, event["context"], members)
        return {"ok": True, "workspace_id": str(workspace)}
    raise ValueError(f"unknown operator task {task!r}")


# -- entry point ----------------------------------------------------------------------


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    if "RequestType" in event:
        return handle_custom_resource(event, context, env=os.environ)
    if "operator" in event:
        return handle_operator(event, env=os.environ)
    raise ValueError("expected a CloudFormation custom resource event or an operator task")
