"""``make dev``: the whole service on one machine, with one command.

Embedded PostgreSQL (data under ``.dev/``, so memories survive a restart), moto on
loopback for Cognito, DynamoDB and EventBridge (a child process of its own), the API
Gateway emulator on ``127.0.0.1:8787`` (``PORT`` overrides) in front of the same
Lambda handlers (the MCP function, the Lambda authorizer, the management function,
the authorization function), the local stand-in for the user pool's sign-in and
token endpoints, the demo tenants, and the audit sweeper (with the purge of expired
records) and the registered clients' sweep on timers. Ctrl-C (or SIGTERM, any number
of them) stops everything; a PostgreSQL that an earlier run left running on the same
data folder is stopped before this one starts. ``ALLOWED_REDIRECT_URIS`` sets
registration's https allow-list, as the template's ``AllowedRedirectUris`` does.

Nothing here grows with the requests served. The handler's audit events are
published after each response by a child process with a bounded queue
(``publishing.ProcessPublisher``). The audit tap (an
SQS queue on the bus, so tests can read published events back) is off unless
``MEMORY_AUDIT_TAP=1``: emulated SQS costs more CPU per event than the whole
request; when on, it is drained every second into a bounded ring
(``LocalAws.read_audit_events``). Either way the audit trail of a workspace is the
admin API's ``GET /w/{workspace}/admin/audit``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import signal
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

import psycopg
from botocore.exceptions import ClientError
from memory_server.admin import operators
from memory_server.admin.identity import LambdaDirectory
from memory_server.data import embeddings as embedding_data
from memory_server.data import migrate
from memory_server.data.provision import Passwords, Provisioned, provision
from memory_server.domain.embedding import EmbeddingSpaceMismatch, require_space
from memory_server.domain.limits import AUDIT_SWEEP_MIN_AGE_S, CLIENT_SWEEP_EVERY_S
from memory_server.edge.runtime import embedder_from_env
from memory_server.gateway.origins import OriginPolicy
from memory_server.operations.audit_events import EventBridgeSink, purge_expired, sweep
from memory_server.signin.authorization import Authorization, build_authorization
from memory_server.signin.authorizer import build_authorizer
from memory_server.signin.management import Management, build_management

from . import demo
from .aws import LocalAws
from .embedding_worker import EmbeddingWorker
from .gateway import ApiGateway
from .lambdas import LocalLambda
from .postgres import EmbeddedPostgres
from .publishing import ProcessPublisher
from .tokens import LocalIssuer

ROOT = Path(__file__).resolve().parents[2]
DATABASE = "memory"
MANAGEMENT_FUNCTION = "ManagementFunction"
MOTO_SEED = 20261129  # same ids, secrets and subs on every start (see LocalAws)
SWEEP_EVERY_S = 15.0
# Expired records are purged within this (docs/contract.md: 15 s under make dev).
PURGE_EVERY_S = 5.0
TAP_DRAIN_EVERY_S = 1.0
EXPIRE_EVERY_S = 600.0  # DynamoDB's TTL, emulated (idempotency records)
SWITCH_INTERVAL_S = 0.0005  # see main()
IDLE_WAKE_S = 0.5  # see main()
# DNS-rebinding protection for a loopback server (docs/contract.md §1): the names and
# origins every route answers (the gateway), and the MCP and admin handlers check too.
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")
LOOPBACK_ORIGINS = ("http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*")
AWS_NICENESS = 10  # the AWS emulation's scheduling priority, lowered (see start)


def _credentials(path: Path) -> dict[str, str]:
    if path.exists():
        return dict(json.loads(path.read_text()))
    values = {name: secrets.token_urlsafe(24) for name in ("owner", "runtime", "auditor")}
    values["cursor_secret"] = secrets.token_urlsafe(48)
    path.write_text(json.dumps(values, indent=2))
    path.chmod(0o600)
    return values


def _starting(event: dict[str, Any], context: Any) -> Any:
    raise RuntimeError("the dev stack is still starting")


# make dev's embedder: all-MiniLM-L6-v2 on CPU (docs/store.md, "Embeddings: the local model").
LOCAL_EMBEDDER = "python:memory_local.embedder:LocalEmbedder"


def load_handler_module(function: str = "mcp") -> ModuleType:
    """``functions/{function}/app.py``, the Lambda handler itself (the MCP one reads
    os.environ)."""
    spec = importlib.util.spec_from_file_location(
        f"{function}_app", ROOT / "functions" / function / "app.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@dataclass
class DevStack:
    root: Path
    port: int = 8787
    admin_url: str | None = None  # an existing server (DATABASE_URL); else embedded
    moto_seed: int | None = MOTO_SEED
    quiet: bool = False
    audit_tap: bool = True  # an SQS queue on the audit bus (read_audit_events); see above
    # False: commits do not wait for the WAL flush (MEMORY_DEV_ASYNC_COMMIT=1). On a slow
    # or shared disk the flush is most of a write's time; a crash may then lose the
    # last fraction of a second of changes (never corrupt them).
    synchronous_commit: bool = True
    # Role passwords are cluster-wide: a stack sharing a server must reuse its own.
    credentials: dict[str, str] | None = None
    postgres: EmbeddedPostgres | None = None
    aws: LocalAws | None = None
    gateway: ApiGateway | None = None
    app: ModuleType | None = None
    management: Management | None = None
    authorization: Authorization | None = None
    lambdas: LocalLambda | None = None  # what the MCP function invokes (the management one)
    publisher: ProcessPublisher | None = None  # the handler's audit publishing (publishing.py)
    embedding_worker: EmbeddingWorker | None = None  # the writes' embedding (embedding_worker.py)
    roles: Provisioned | None = None  # the database's role URLs, once started
    info: dict[str, Any] = field(default_factory=dict)
    # How often the registered clients' sweep runs (the template's SweepClients schedule).
    client_sweep_every_s: float = CLIENT_SWEEP_EVERY_S
    # Hybrid recall's embedder (runtime.embedder_from_env): None takes EMBEDDER from the
    # environment, else the local model; "off" for words alone.
    embedder: str | None = None
    _stop_sweeper: threading.Event = field(default_factory=threading.Event)

    def _say(self, message: str) -> None:
        if not self.quiet:
            print(f"[dev] {message}", flush=True)

    def start(self) -> dict[str, Any]:
        self.root.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        admin_url = self.admin_url
        if admin_url is None:
            data = self.root / "postgres"
            shown = data.relative_to(Path.cwd()) if data.is_relative_to(Path.cwd()) else data
            self._say(f"starting PostgreSQL (data in {shown})")
            self.postgres = EmbeddedPostgres(
                self.root / "postgres", durable=True, synchronous_commit=self.synchronous_commit
            )
            admin_url = self.postgres.start()
            if self.postgres.stopped_stale is not None:
                self._say(
                    f"stopped a PostgreSQL an earlier run left running (pid "
                    f"{self.postgres.stopped_stale}) before starting"
                )
        creds = self.credentials or _credentials(self.root / "credentials.json")
        self.roles = roles = provision(
            admin_url,
            Passwords(creds["owner"], creds["runtime"], creds["auditor"]),
            database=DATABASE,
        )
        owner_url, runtime_url = roles.owner_url, roles.runtime_url
        self._say(f"schema ready ({len(roles.applied)} migration and schema files applied now)")

        self._say("starting AWS emulation (Cognito, DynamoDB, EventBridge)")
        # Moto in its own process: in this one it would compete with the handler for
        # the interpreter lock. And at a lower priority: an emulated PutEvents costs
        # more CPU than a write (docs/performance.md), and it runs after the response,
        # so it should take the CPU the requests leave, not delay the next one.
        self.aws = LocalAws(
            seed=self.moto_seed,
            audit_tap=self.audit_tap,
            own_process=True,
            niceness=AWS_NICENESS,
        )
        self.aws.start()
        provisioned = self.aws.provision()
        issuer = LocalIssuer(self.root / "signing-key.pem", provisioned.issuer)
        # Listening first, so the port (PORT, or any free one) is known before the
        # handlers read their base URL; requests wait for the handlers below.
        self.gateway = ApiGateway(
            _starting,
            issuer=issuer,
            aws=self.aws,
            authorizer=_starting,
            port=self.port,
            quiet=self.quiet,
            origins=OriginPolicy(LOOPBACK_ORIGINS, LOOPBACK_HOSTS),
        ).start()
        base_url = self.gateway.url
        self.port = int(urlsplit(base_url).port or self.port)
        os.environ.update(
            {
                **self.aws.env(),
                "DATABASE_URL": runtime_url,
                "CURSOR_SECRET": creds["cursor_secret"],
                "PUBLIC_BASE_URL": base_url,
                "ALLOWED_HOSTS": ",".join(LOOPBACK_HOSTS),
                "ALLOWED_ORIGINS": ",".join(LOOPBACK_ORIGINS),
                "IDEMPOTENCY_TABLE": provisioned.table_name,
                "AUDIT_BUS_NAME": provisioned.bus_name,
                "SIGNIN_TABLE": provisioned.signin_table,
                "DB_POOL_SIZE": "16",
                "EMBEDDER": self.embedder or os.environ.get("EMBEDDER") or LOCAL_EMBEDDER,
                "POWERTOOLS_TRACE_DISABLED": "true",
                "POWERTOOLS_METRICS_DISABLED": "true",
                "POWERTOOLS_LOG_LEVEL": "WARNING",
            }
        )
        self._forget_other_space(owner_url)
        self.app = load_handler_module()
        self.start_publisher()
        # The other functions, built by their own code from the environment the
        # template gives them; the user pool's endpoints are this gateway's.
        # ALLOWED_REDIRECT_URIS (the template's AllowedRedirectUris) passes through:
        # unset, registration takes the default allow-list.
        allowlist = os.environ.get("ALLOWED_REDIRECT_URIS")
        self.management = build_management(
            {
                "USER_POOL_ID": provisioned.user_pool_id,
                "OAUTH_BASE_URL": base_url,
                "PUBLIC_BASE_URL": base_url,
                "SIGNIN_TABLE": provisioned.signin_table,
                "AUDIT_BUS_NAME": provisioned.bus_name,
                **({"ALLOWED_REDIRECT_URIS": allowlist} if allowlist is not None else {}),
            }
        )
        # A consent key per start (Secrets Manager's in AWS): a restart only voids the
        # consent pages open at that moment.
        # Metadata-document clients sign in through one app client whose callback is
        # the front door's (the template's DocumentClient).
        document_client_id = self.aws.ensure_document_client([f"{base_url}/authorize/callback"])
        self.authorization = build_authorization(
            {
                "USER_POOL_ID": provisioned.user_pool_id,
                "OAUTH_BASE_URL": base_url,
                "PUBLIC_BASE_URL": base_url,
                "CONSENT_SECRET": secrets.token_urlsafe(48),
                "SIGNIN_TABLE": provisioned.signin_table,
                "DOCUMENT_CLIENT_ID": document_client_id,
                **({"ALLOWED_REDIRECT_URIS": allowlist} if allowlist is not None else {}),
            }
        )
        authorizer = build_authorizer(
            {
                "AUTH_ISSUER": provisioned.issuer,
                "JWKS_URL": f"{base_url}/.well-known/jwks.json",
                "PUBLIC_BASE_URL": base_url,
            }
        )
        # The admin API reaches the management function as in AWS: LambdaDirectory,
        # here over an in-process stand-in for lambda:InvokeFunction.
        self.lambdas = LocalLambda({MANAGEMENT_FUNCTION: self.management.route})
        self.app.service.admin.directory = LambdaDirectory(self.lambdas, MANAGEMENT_FUNCTION)
        with psycopg.connect(owner_url, autocommit=True) as owner:
            seeded = demo.seed(owner, self.aws, issuer, self.app.service.store)
        with psycopg.connect(owner_url, autocommit=True) as owner:
            self._retire_lost_agent_keys(owner)
        if self.app.service.embedder is not None:
            # The writes' embedding (and the backfill) in a child at the emulation's
            # priority: the handler's process keeps only the questions' embedding.
            self.app.service.post_commit.embedder = None
            self.embedding_worker = EmbeddingWorker(owner_url, AWS_NICENESS, self.quiet)
        self.gateway.handler = self.app.handler
        self.gateway.management = self.management.route
        self.gateway.authorization = self.authorization.route
        self.gateway.authorizer_handler = authorizer.authorize
        # The web console (functions/console), with its own public app client whose
        # callbacks are its address here under each loopback name (the template's
        # ConsoleClient has the deployed one).
        console_urls = [
            f"http://{host}:{self.port}/console/" for host in ("127.0.0.1", "localhost")
        ]
        console_client_id = self.aws.ensure_console_client(console_urls)
        console = load_handler_module("console").build_console(
            {"CONSOLE_CLIENT_ID": console_client_id, "OAUTH_BASE_URL": base_url}
        )
        self.gateway.console = console.route
        sink = EventBridgeSink(self.aws.client("events"), provisioned.bus_name)
        threading.Thread(target=self._sweeper, args=(roles.auditor_url, sink), daemon=True).start()
        if self.audit_tap:
            threading.Thread(target=self._drain_tap, daemon=True).start()

        self.info = {
            "url": self.gateway.mcp_url("acme"),
            "tokens": seeded.tokens,
            "database_url": owner_url,
            "runtime_role": migrate.RUNTIME_ROLE,
            "workspaces": {slug: self.gateway.mcp_url(slug) for slug in demo.WORKSPACES},
            "token_endpoint": f"{base_url}/oauth2/token",
            "authorization_endpoint": f"{base_url}/authorize",
            "registration_endpoint": f"{base_url}/register",
            "authorization_server": base_url,
            "jwks_uri": f"{base_url}/.well-known/jwks.json",
            "issuer": provisioned.issuer,
            "aws_endpoint_url": self.aws.endpoint_url,
            "api_url": self.gateway.url,
            "user_pool_id": provisioned.user_pool_id,
            "console_url": f"{base_url}/console/",
            "console_client_id": console_client_id,
        }
        endpoint_file = self.root / "endpoint.json"
        endpoint_file.write_text(json.dumps(self.info, indent=2) + "\n")
        endpoint_file.chmod(0o600)
        self._say(f"ready in {time.monotonic() - started:.1f}s")
        return self.info

    def _forget_other_space(self, owner_url: str) -> None:
        """When the stored vectors are of another model or dimension than EMBEDDER's
        (the handler refuses to start on them: ``runtime.require_embeddings``), delete
        them: the stack serves at once, by words and by the meaning of what is embedded
        again, and the embedding worker's backfill at start embeds every record again
        (with progress), as ``memoryctl embeddings backfill`` would. A deployment keeps
        the refusal: there the re-embedding is an operator's step (docs/deploy.md)."""
        embedder = embedder_from_env(os.environ)
        if embedder is None:
            return
        with psycopg.connect(owner_url, autocommit=True) as owner:
            try:
                require_space(embedder, embedding_data.spaces(owner))
            except EmbeddingSpaceMismatch as mismatch:
                shown = ", ".join(f"{m} ({d})" for m, d in mismatch.stored)
                gone = embedding_data.forget_other_spaces(
                    owner, embedder.model, embedder.dimensions
                )
                self._say(
                    f"stored vectors are of {shown}: {gone:,} deleted; every record is "
                    f"embedded again with {embedder.model} while the stack serves"
                )

    def start_publisher(self) -> ProcessPublisher:
        """Hand the handler's audit publishing to a new child process (the previous
        one, if any, is closed): in this process it competed with the requests for
        the interpreter lock (memory_local.publishing). At the AWS emulation's
        priority."""
        assert self.app is not None
        if self.publisher is not None:
            self.publisher.close()
        self.publisher = ProcessPublisher(niceness=AWS_NICENESS)
        self.app.service.after_response.runner = self.publisher
        return self.publisher

    def _retire_lost_agent_keys(self, owner: psycopg.Connection[Any]) -> None:
        """Retire agent keys whose app client is gone from the emulated pool.

        Moto keeps no state across restarts, so keys created through the admin API
        in an earlier run are gone from the pool: they are retired (revoked and
        audited) rather than left looking live. Then moto's generator is reseeded
        at random, so a new key never gets an id an earlier run already used.
        """
        assert self.aws is not None
        retired = 0
        for _slug, client_id in operators.live_agent_keys(owner):
            try:
                self.aws.describe_client(client_id)
            except ClientError:
                retired += operators.retire_agent_key(owner, client_id, "app client gone")
        if retired:
            self._say(f"{retired} agent key(s) from an earlier run retired (moto keeps no state)")
        if self.moto_seed is not None:
            reseed = urllib.request.Request(  # noqa: S310 - our own loopback moto server
                f"{self.aws.endpoint_url}/moto-api/seed?a={secrets.randbits(31)}", method="POST"
            )
            with urllib.request.urlopen(reseed, timeout=10) as response:  # noqa: S310
                response.read()

    def _sweeper(self, auditor_url: str, sink: EventBridgeSink) -> None:
        expired_at = swept_at = clients_swept_at = time.monotonic()
        while not self._stop_sweeper.wait(PURGE_EVERY_S):
            try:
                with psycopg.connect(auditor_url) as auditor:
                    purge_expired(auditor)
                    if time.monotonic() - swept_at >= SWEEP_EVERY_S:
                        swept_at = time.monotonic()
                        sweep(auditor, sink, min_age=timedelta(seconds=AUDIT_SWEEP_MIN_AGE_S))
                if time.monotonic() - expired_at >= EXPIRE_EVERY_S and self.aws is not None:
                    expired_at = time.monotonic()
                    self.aws.expire_idempotency_records()
            except Exception as exc:  # keep sweeping; report why
                print(f"[dev] audit sweep failed: {exc}", file=sys.stderr)
            if time.monotonic() - clients_swept_at >= self.client_sweep_every_s:
                clients_swept_at = time.monotonic()
                try:
                    self.sweep_clients()
                except Exception as exc:  # the next run tries again, as in AWS
                    print(f"[dev] registered clients' sweep failed: {exc}", file=sys.stderr)

    def sweep_clients(self) -> dict[str, Any]:
        """The management function's client sweep, as its schedule invokes it in AWS
        (``SweepClients``): here every ``CLIENT_SWEEP_EVERY_S`` from the sweeper thread."""
        assert self.management is not None
        return self.management.route({"action": "sweep_clients"})

    def _drain_tap(self) -> None:
        """Keep the emulated audit queue short (see ``LocalAws.read_audit_events``)."""
        while not self._stop_sweeper.wait(TAP_DRAIN_EVERY_S):
            try:
                assert self.aws is not None
                self.aws.drain_audit_tap()
            except Exception as exc:  # keep draining; report why
                print(f"[dev] audit tap drain failed: {exc}", file=sys.stderr)

    def wait_published(self, timeout_s: float = 10.0) -> bool:
        """Wait until the handler has run the audit publishing it owes after its
        responses (tests read the tap right after a call)."""
        assert self.app is not None
        return bool(self.app.service.after_response.wait_idle(timeout_s))

    def stop(self) -> None:
        self._stop_sweeper.set()
        if self.gateway is not None:
            self.gateway.stop()
        if self.publisher is not None:
            self.publisher.close()
        if self.embedding_worker is not None:
            self.embedding_worker.close()
        if self.app is not None:
            self.app.service.db.close()
        if self.aws is not None:
            self.aws.stop()
        if self.postgres is not None:
            self.postgres.stop()


def client_instructions(info: dict[str, Any], endpoint_file: str) -> str:
    url, token = info["url"], info["tokens"]["alice"]
    servers = {
        "mcpServers": {
            "memory": {"type": "http", "url": url, "headers": {"Authorization": f"Bearer {token}"}}
        }
    }
    return "\n".join(
        [
            "",
            f"MCP endpoint      {url}",
            f"web console       {info['console_url']}  (sign in as alice, bob or carol)",
            f"tokens            {endpoint_file} (tokens.alice, tokens.bob, tokens['ci-bot'], …)",
            f'inspect database  psql "$(jq -r .database_url {endpoint_file})"',
            "",
            "Sign-in: give a client the URL alone; it registers itself and opens a local",
            "sign-in page (pick alice, bob or carol). Or pass a token from the file.",
            "",
            "MCP Inspector:",
            "  npx @modelcontextprotocol/inspector  # transport: Streamable HTTP, URL above,",
            "  # Connect signs in; or header Authorization: Bearer <token>",
            "  # optional header Memory-Context: channel:general",
            "",
            "Claude Code (signs in on /mcp -> Authenticate):",
            f"  claude mcp add --transport http memory {url}",
            "Claude Code with a token:",
            f"  claude mcp add --transport http memory {url} \\",
            f'    --header "Authorization: Bearer {token}"',
            "",
            "Claude Desktop / any mcpServers config:",
            json.dumps(servers, indent=2),
            "",
            "Ctrl-C stops everything; memories are kept in .dev/.",
        ]
    )


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


class _Stop:
    requested = False  # set by the first SIGINT or SIGTERM


def _interrupt(signum: int, frame: object) -> None:
    # SIGINT and SIGTERM stop the stack alike; the first one does, and every later one
    # (a terminal's Ctrl-C and a supervisor's SIGTERM often come together) is ignored,
    # so none can cut the stop short and leave PostgreSQL running. The handler takes
    # no lock: one that set a threading.Event could run while the main thread held
    # that Event's lock, and hang the stack for good (seen once). Handlers run only in
    # the main thread, one at a time, so the flag needs none.
    if _Stop.requested:
        return
    _Stop.requested = True
    raise KeyboardInterrupt


def main() -> None:
    # MEMORY_DEV_DIR: another data directory (a benchmark's own stack, say).
    root = Path(os.environ.get("MEMORY_DEV_DIR") or ROOT / ".dev")
    stack = DevStack(
        root,
        port=int(os.environ.get("PORT", "8787")),
        admin_url=os.environ.get("DATABASE_URL"),
        audit_tap=_flag("MEMORY_AUDIT_TAP"),
        synchronous_commit=not _flag("MEMORY_DEV_ASYNC_COMMIT"),
    )
    # Requests share this interpreter with the sweeper and the gateway's threads: a
    # request whose database answer has arrived must not wait the default 5 ms for
    # the interpreter lock while another thread runs.
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        info = stack.start()
        endpoint_file = root / "endpoint.json"
        shown = (
            endpoint_file.relative_to(ROOT) if endpoint_file.is_relative_to(ROOT) else endpoint_file
        )
        print(client_instructions(info, str(shown)), flush=True)
        # Not signal.pause(): the kernel may hand a signal to any of the stack's
        # threads, and then pause() in the main thread, where Python runs handlers,
        # never returns (seen: a stack that ignored SIGINT and SIGTERM). A short sleep
        # is cut short by a signal that reaches this thread, and otherwise lets the
        # handler run within a second.
        while True:
            time.sleep(IDLE_WAKE_S)
    except KeyboardInterrupt:
        pass
    finally:
        _Stop.requested = True  # also after a failed start: nothing interrupts the stop
        print("\n[dev] stopping", flush=True)
        stack.stop()


if __name__ == "__main__":
    main()
