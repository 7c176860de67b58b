"""The migration custom resource against real PostgreSQL, answering a real ResponseURL.

Two databases:

- the session cluster (``cluster``), whose administrator is a superuser. Role passwords
  are cluster-wide and other tests use them, so the fake Secrets Manager hands out
  exactly ``cluster.passwords``: re-bootstrapping changes nothing;
- a private server whose "master" is, like Aurora's, a CREATEROLE user without
  SUPERUSER: the first run there creates everything (``migrate.bootstrap``'s
  non-superuser path).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import psycopg
import pytest
from memory_server.data import migrate
from memory_server.data.provision import with_database, with_role
from memory_server.domain.grants import sorted_grants
from memory_server.edge import aws_config
from psycopg.conninfo import conninfo_to_dict

from tests.conftest import ROOT, Cluster
from tests.infra.conftest import load_function

MIGRATIONS = ROOT / "infra" / "migrations"
ALL_MIGRATIONS = [m.name for m in migrate.load_migrations(MIGRATIONS)]
# What a first run applies: the migrations, then the current-state files next to them.
ALL_FILES = ALL_MIGRATIONS + [f.name for f in migrate.load_schema_files(ROOT / "infra" / "schema")]


app = load_function("migrations")


# -- CloudFormation's side -----------------------------------------------------------


@dataclass
class ResponseCatcher:
    """A local stand-in for the pre-signed S3 URL: records each PUT."""

    base_url: str
    received: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)

    def take(self) -> list[dict[str, Any]]:
        out, self.received[:] = list(self.received), []
        return out


@pytest.fixture(scope="module")
def catcher() -> Iterator[ResponseCatcher]:
    state = ResponseCatcher("")

    class Handler(BaseHTTPRequestHandler):
        def do_PUT(self) -> None:
            body = self.rfile.read(int(self.headers["content-length"]))
            state.headers.append(dict(self.headers))
            state.received.append({"path": self.path, **json.loads(body)})
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    yield state
    server.shutdown()
    server.server_close()


def cfn_event(
    catcher: ResponseCatcher, request_type: str, physical_id: str | None = None
) -> dict[str, Any]:
    request_id = str(uuid.uuid4())
    event = {
        "RequestType": request_type,
        "ResponseURL": f"{catcher.base_url}/response/{request_id}?X-Amz-Signature=x",
        "StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/memory-server-dev/abc",
        "RequestId": request_id,
        "ResourceType": "Custom::DatabaseMigrations",
        "LogicalResourceId": "DatabaseMigrations",
        "ResourceProperties": {"ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:x"},
    }
    if physical_id is not None:
        event["PhysicalResourceId"] = physical_id
    return event


class LambdaContext:
    def __init__(self, remaining_ms: int = 600_000) -> None:
        self.deadline = time.monotonic() + remaining_ms / 1000

    def get_remaining_time_in_millis(self) -> int:
        return int((self.deadline - time.monotonic()) * 1000)


class FakeSecrets:
    """``secretsmanager.get_secret_value`` over a dict of ARN -> JSON."""

    def __init__(self, values: dict[str, dict[str, str]]) -> None:
        self.values = values
        self.calls: list[str] = []

    def get_secret_value(self, SecretId: str) -> dict[str, str]:  # boto3's parameter name
        self.calls.append(SecretId)
        return {"SecretString": json.dumps(self.values[SecretId])}


def role_secrets(passwords: dict[str, str]) -> FakeSecrets:
    return FakeSecrets(
        {
            "arn:owner": {"username": migrate.OWNER_ROLE, "password": passwords["owner"]},
            "arn:runtime": {"username": migrate.RUNTIME_ROLE, "password": passwords["runtime"]},
            "arn:auditor": {"username": migrate.AUDITOR_ROLE, "password": passwords["auditor"]},
        }
    )


def function_env(admin_url: str, migrations: Path = MIGRATIONS) -> dict[str, str]:
    return {
        "DATABASE_ADMIN_URL": admin_url,
        "OWNER_SECRET_ARN": "arn:owner",
        "RUNTIME_SECRET_ARN": "arn:runtime",
        "AUDITOR_SECRET_ARN": "arn:auditor",
        "MIGRATIONS_DIR": str(migrations),
    }


def applied(owner_url: str) -> list[str]:
    with psycopg.connect(owner_url) as owner:
        return [r[0] for r in owner.execute("SELECT name FROM memory.schema_migrations ORDER BY 1")]


# -- against the session cluster -----------------------------------------------------


def test_create_and_rerun_succeed_and_leave_the_schema_as_it_was(
    cluster: Cluster, catcher: ResponseCatcher
) -> None:
    env = function_env(cluster.admin_url)
    before = applied(cluster.owner_url)
    assert before == ALL_MIGRATIONS

    sent = app.handle_custom_resource(
        cfn_event(catcher, "Create"),
        LambdaContext(),
        env=env,
        secrets=role_secrets(cluster.passwords),
    )
    (response,) = catcher.take()
    assert response == {"path": response["path"], **sent}
    assert response["Status"] == "SUCCESS", response["Reason"]
    assert response["PhysicalResourceId"] == app.PHYSICAL_ID
    assert response["Data"] == {"Applied": "", "AppliedCount": "0"}  # already applied
    assert response["LogicalResourceId"] == "DatabaseMigrations"
    assert catcher.headers[-1].get("content-type", "") == ""  # the URL is signed without one

    update = cfn_event(catcher, "Update", physical_id=app.PHYSICAL_ID)
    app.handle_custom_resource(
        update, LambdaContext(), env=env, secrets=role_secrets(cluster.passwords)
    )
    (response,) = catcher.take()
    assert (response["Status"], response["PhysicalResourceId"]) == ("SUCCESS", app.PHYSICAL_ID)
    assert response["RequestId"] == update["RequestId"]
    assert applied(cluster.owner_url) == before
    # The roles kept their passwords: every other test's connections still work.
    for url in (cluster.runtime_url, cluster.auditor_url, cluster.owner_url):
        with psycopg.connect(url) as conn:
            conn.execute("SELECT 1")


def test_a_failing_migration_reports_failed_and_changes_nothing(
    cluster: Cluster, catcher: ResponseCatcher, tmp_path: Path
) -> None:
    folder = tmp_path / "migrations"
    shutil.copytree(MIGRATIONS, folder)
    shutil.copytree(migrate.schema_dir(MIGRATIONS), migrate.schema_dir(folder))
    (folder / "9998_good.sql").write_text("CREATE TABLE memory.deploy_probe_good (id int);")
    (folder / "9999_bad.sql").write_text(
        "CREATE TABLE memory.deploy_probe_bad (id int); SELECT 1/0;"
    )

    app.handle_custom_resource(
        cfn_event(catcher, "Update", physical_id=app.PHYSICAL_ID),
        LambdaContext(),
        env=function_env(cluster.admin_url, folder),
        secrets=role_secrets(cluster.passwords),
    )
    (response,) = catcher.take()
    assert response["Status"] == "FAILED"
    assert "9999_bad.sql" in response["Reason"] and "division by zero" in response["Reason"]
    assert response["PhysicalResourceId"] == app.PHYSICAL_ID
    assert applied(cluster.owner_url) == ALL_MIGRATIONS
    with psycopg.connect(cluster.owner_url) as owner:
        assert owner.execute(
            "SELECT to_regclass('memory.deploy_probe_good'), to_regclass('memory.deploy_probe_bad')"
        ).fetchone() == (None, None)


def test_an_earlier_releases_update_over_a_newer_schema_succeeds_and_changes_nothing(
    cluster: Cluster, catcher: ResponseCatcher, tmp_path: Path
) -> None:
    # A stack rollback after this release migrated: the earlier release's files lack
    # the newest migration. Failing would leave the stack in UPDATE_ROLLBACK_FAILED.
    folder = tmp_path / "earlier" / "migrations"
    shutil.copytree(MIGRATIONS, folder)
    shutil.copytree(migrate.schema_dir(MIGRATIONS), migrate.schema_dir(folder))
    sorted(folder.iterdir())[-1].unlink()
    (migrate.schema_dir(folder) / "99_earlier.sql").write_text("SELECT 1;")
    with psycopg.connect(cluster.owner_url) as owner:
        files_before = owner.execute("SELECT * FROM memory.schema_files ORDER BY 1").fetchall()

    app.handle_custom_resource(
        cfn_event(catcher, "Update", physical_id=app.PHYSICAL_ID),
        LambdaContext(),
        env=function_env(cluster.admin_url, folder),
        secrets=role_secrets(cluster.passwords),
    )
    (response,) = catcher.take()
    assert response["Status"] == "SUCCESS"
    assert response["Reason"].startswith("schema kept: the database schema is at version")
    assert applied(cluster.owner_url) == ALL_MIGRATIONS
    with psycopg.connect(cluster.owner_url) as owner:
        assert owner.execute("SELECT * FROM memory.schema_files ORDER BY 1").fetchall() == (
            files_before
        )


def test_create_failure_still_names_a_physical_id_and_delete_is_a_no_op(
    cluster: Cluster, catcher: ResponseCatcher
) -> None:
    # A secret wired to the wrong role must not hand one role another's password.
    wrong = role_secrets(cluster.passwords)
    wrong.values["arn:runtime"] = wrong.values["arn:owner"]
    app.handle_custom_resource(
        cfn_event(catcher, "Create"),
        LambdaContext(),
        env=function_env(cluster.admin_url),
        secrets=wrong,
    )
    (response,) = catcher.take()
    assert response["Status"] == "FAILED" and "memory_owner" in response["Reason"]
    assert response["PhysicalResourceId"] == app.PHYSICAL_ID  # so the rollback's Delete matches

    # Delete after that failed Create (and on stack deletion): success without the
    # database, so nothing is needed, not even its configuration.
    app.handle_custom_resource(
        cfn_event(catcher, "Delete", physical_id=app.PHYSICAL_ID), LambdaContext(), env={}
    )
    (response,) = catcher.take()
    assert (response["Status"], response["PhysicalResourceId"]) == ("SUCCESS", app.PHYSICAL_ID)
    assert applied(cluster.owner_url) == ALL_MIGRATIONS


@pytest.mark.slow
def test_the_watchdog_answers_before_lambda_times_out(
    cluster: Cluster, catcher: ResponseCatcher, monkeypatch: pytest.MonkeyPatch
) -> None:
    def slow(config: Any, deadline: float) -> list[str]:
        time.sleep(1.5)
        return []

    monkeypatch.setattr(app, "run_migrations", slow)
    # 11 s left and a 10 s margin: the watchdog fires after about one second.
    app.handle_custom_resource(
        cfn_event(catcher, "Create"),
        LambdaContext(remaining_ms=11_000),
        env=function_env(cluster.admin_url),
        secrets=role_secrets(cluster.passwords),
    )
    responses = catcher.take()
    assert [(r["Status"], r["Reason"]) for r in responses] == [("FAILED", "migration timed out")]


def test_the_response_url_must_be_https_outside_loopback() -> None:
    with pytest.raises(ValueError, match="https"):
        app.put_response("http://example.com/x", b"{}")


def test_operator_tasks_run_as_the_owner(cluster: Cluster) -> None:
    env = function_env(cluster.admin_url)
    fake = role_secrets(cluster.passwords)
    slug = f"deploy-{uuid.uuid4().hex[:10]}"
    made = app.handle_operator(
        {"operator": "create_workspace", "workspace": slug}, env=env, secrets=fake
    )
    alice = app.handle_operator(
        {
            "operator": "add_member",
            "workspace": slug,
            "kind": "person",
            "subject": f"sub-{slug}",
            "handle": "alice",
            "grants": ["read", "write:personal", "admin"],
        },
        env=env,
        secrets=fake,
    )
    bot = app.handle_operator(
        {
            "operator": "add_member",
            "workspace": slug,
            "kind": "service",
            "subject": f"client-{slug}",
            "handle": "ci-bot",
            "grants": ["read"],
        },
        env=env,
        secrets=fake,
    )
    app.handle_operator(
        {
            "operator": "register_context",
            "workspace": slug,
            "context": "channel:leads",
            "members": [f"sub-{slug}"],
        },
        env=env,
        secrets=fake,
    )
    app.handle_operator(
        {"operator": "set_memory_enabled", "workspace": slug, "enabled": True},
        env=env,
        secrets=fake,
    )
    with psycopg.connect(cluster.owner_url) as owner:
        assert owner.execute(
            "SELECT id::text, memory_enabled FROM memory.workspaces WHERE slug = %s", (slug,)
        ).fetchone() == (made["workspace_id"], True)
        rows = owner.execute(
            "SELECT p.handle, m.grants, m.personal_namespace FROM memory.memberships m "
            "JOIN memory.principals p ON p.id = m.principal_id WHERE m.workspace_id = %s "
            "ORDER BY p.handle",
            (made["workspace_id"],),
        ).fetchall()
        assert rows == [
            ("alice", sorted_grants(["read", "write:personal", "admin"]), True),
            ("ci-bot", ["read"], False),  # a service gets no personal namespace by default
        ]
        assert owner.execute(
            "SELECT principal_id::text FROM memory.context_members WHERE workspace_id = %s",
            (made["workspace_id"],),
        ).fetchall() == [(alice["principal_id"],)]
    assert bot["principal_id"] != alice["principal_id"]
    with pytest.raises(ValueError, match="no workspace"):
        app.handle_operator(
            {"operator": "set_memory_enabled", "workspace": "nope-" + slug, "enabled": True},
            env=env,
            secrets=fake,
        )
    with pytest.raises(ValueError, match="unknown operator task"):
        app.handle_operator({"operator": "drop_everything"}, env=env, secrets=fake)
    # Issue 33: no member joins with a handle a member holds, spelt however (here a
    # service named in fullwidth letters beside the person alice); nothing is added.
    with pytest.raises(ValueError, match="add_member: handle: taken by another member"):
        app.handle_operator(
            {
                "operator": "add_member",
                "workspace": slug,
                "kind": "service",
                "subject": f"twin-{slug}",
                "handle": "\uff21lice",
                "grants": ["read"],
            },
            env=env,
            secrets=fake,
        )
    with psycopg.connect(cluster.owner_url) as owner:
        assert owner.execute(
            "SELECT count(*) FROM memory.memberships WHERE workspace_id = %s",
            (made["workspace_id"],),
        ).fetchone() == (2,)


def test_create_workspace_keeps_an_existing_workspaces_memory_feature(cluster: Cluster) -> None:
    """Re-running create_workspace (it is idempotent) without memory_enabled must not
    turn the feature off under the workspace's members."""
    env = function_env(cluster.admin_url)
    fake = role_secrets(cluster.passwords)
    slug = f"keep-{uuid.uuid4().hex[:10]}"

    def enabled() -> bool:
        with psycopg.connect(cluster.owner_url) as owner:
            row = owner.execute(
                "SELECT memory_enabled FROM memory.workspaces WHERE slug = %s", (slug,)
            ).fetchone()
        assert row is not None
        return bool(row[0])

    app.handle_operator(
        {"operator": "create_workspace", "workspace": slug, "memory_enabled": True},
        env=env,
        secrets=fake,
    )
    assert enabled()
    again = app.handle_operator(
        {"operator": "create_workspace", "workspace": slug}, env=env, secrets=fake
    )
    assert again["ok"] and enabled()
    app.handle_operator(
        {"operator": "create_workspace", "workspace": slug, "memory_enabled": False},
        env=env,
        secrets=fake,
    )
    assert not enabled()  # named: applied
    made = app.handle_operator(
        {"operator": "add_identity", "kind": "person", "subject": f"sub-{slug}", "handle": "ann"},
        env=env,
        secrets=fake,
    )
    with psycopg.connect(cluster.owner_url) as owner:
        assert owner.execute(
            "SELECT handle FROM memory.principals WHERE id = %s", (made["principal_id"],)
        ).fetchone() == ("ann",)


# -- against an Aurora-like administrator --------------------------------------------


@dataclass(frozen=True)
class AuroraLike:
    master_url: str  # CREATEROLE CREATEDB, not SUPERUSER, owns the database
    superuser_url: str
    passwords: dict[str, str]

    def as_role(self, role: str) -> str:
        from urllib.parse import urlsplit

        parts = urlsplit(self.master_url)
        return with_role(
            self.master_url,
            role,
            self.passwords[role.removeprefix("memory_")],
            parts.path.lstrip("/"),
        )


@pytest.fixture(scope="module")
def aurora_like() -> Iterator[AuroraLike]:
    if os.environ.get("DATABASE_URL"):
        pytest.skip("needs a private server: the memory_* roles are cluster-wide")
    from memory_local.postgres import EmbeddedPostgres, EmbeddedPostgresError

    server = EmbeddedPostgres(ROOT / ".tmp" / f"pytest-aurora-{os.getpid()}", durable=False)
    try:
        superuser_url = server.start()
    except EmbeddedPostgresError as exc:  # pragma: no cover - no binaries here
        pytest.skip(str(exc))
    try:
        master_password = secrets.token_urlsafe(16)
        with psycopg.connect(superuser_url, autocommit=True) as admin:
            # What RDS gives the master user: CREATEROLE and CREATEDB, no SUPERUSER,
            # BYPASSRLS or REPLICATION, and ownership of the database it created.
            admin.execute(
                f"CREATE ROLE aurora_master LOGIN CREATEROLE CREATEDB PASSWORD '{master_password}'"
            )
            admin.execute("CREATE DATABASE memory OWNER aurora_master")
        # Aurora lets its master user (rds_superuser) create pgvector; a plain
        # CREATEROLE user may not, so the extension is made here as Aurora's would be.
        with psycopg.connect(with_database(superuser_url, "memory"), autocommit=True) as admin:
            admin.execute("CREATE EXTENSION vector SCHEMA public")
        master_url = with_role(superuser_url, "aurora_master", master_password, "memory")
        passwords = {k: secrets.token_urlsafe(16) for k in ("owner", "runtime", "auditor")}
        yield AuroraLike(master_url, superuser_url, passwords)
    finally:
        server.destroy()


def test_first_run_and_rerun_with_a_non_superuser_master(
    aurora_like: AuroraLike, catcher: ResponseCatcher
) -> None:
    env = function_env(aurora_like.master_url)
    app.handle_custom_resource(
        cfn_event(catcher, "Create"),
        LambdaContext(),
        env=env,
        secrets=role_secrets(aurora_like.passwords),
    )
    (response,) = catcher.take()
    assert response["Status"] == "SUCCESS", response["Reason"]
    assert response["Data"] == {
        "Applied": ",".join(ALL_FILES),
        "AppliedCount": str(len(ALL_FILES)),
    }

    # Re-running the bootstrap as a non-superuser master works (it may not touch
    # privileged attributes, so it verifies them instead).
    with psycopg.connect(aurora_like.master_url, autocommit=True) as master:
        migrate.bootstrap(
            master,
            owner_password=aurora_like.passwords["owner"],
            runtime_password=aurora_like.passwords["runtime"],
            auditor_password=aurora_like.passwords["auditor"],
        )
    app.handle_custom_resource(
        cfn_event(catcher, "Update", physical_id=app.PHYSICAL_ID),
        LambdaContext(),
        env=env,
        secrets=role_secrets(aurora_like.passwords),
    )
    (response,) = catcher.take()
    assert response["Status"] == "SUCCESS", response["Reason"]
    assert response["Data"]["Applied"] == ""

    # The schema is consistent and the roles are what docs/store.md says.
    assert applied(aurora_like.as_role(migrate.OWNER_ROLE)) == ALL_MIGRATIONS
    with psycopg.connect(aurora_like.superuser_url.rsplit("/", 1)[0] + "/memory") as su:
        roles = su.execute(
            "SELECT rolname, rolsuper, rolcreatedb, rolcreaterole, rolbypassrls, rolreplication, "
            "pg_has_role(rolname, 'memory_owner', 'MEMBER') FROM pg_roles "
            "WHERE rolname LIKE 'memory\\_%' ORDER BY 1"
        ).fetchall()
        assert roles == [
            ("memory_auditor", False, False, False, False, False, False),
            ("memory_owner", False, False, False, False, False, True),
            ("memory_runtime", False, False, False, False, False, False),
        ]
        owner = su.execute(
            "SELECT nspowner::regrole::text FROM pg_namespace WHERE nspname = 'memory'"
        )
        assert owner.fetchone() == ("memory_owner",)
    with psycopg.connect(aurora_like.as_role(migrate.RUNTIME_ROLE)) as runtime_conn:
        # Under RLS with no request settings, the runtime role sees nothing, and it
        # cannot create objects in the schema.
        assert runtime_conn.execute("SELECT count(*) FROM memory.workspaces").fetchone() == (0,)
        assert runtime_conn.execute(
            "SELECT has_schema_privilege('memory', 'CREATE')"
        ).fetchone() == (False,)


# -- TLS to the cluster ----------------------------------------------------------------


@dataclass
class Impostor:
    """A server on loopback that speaks PostgreSQL's TLS opening with a certificate of
    its own CA (for ``localhost`` only), then asks for the password in clear text and
    records what it is told: what a network attacker answering for the cluster sees."""

    port: int
    ca_file: Path
    handshakes: int = 0
    passwords: list[str] = field(default_factory=list)


def _self_signed(tmp_path: Path) -> tuple[Path, Path, Path]:
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    def name(common: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])

    now = datetime.datetime.now(datetime.UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(name("impostor CA"))
        .issuer_name(name("impostor CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    cert = (
        x509.CertificateBuilder()
        .subject_name(name("localhost"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    paths = (tmp_path / "ca.pem", tmp_path / "server.pem", tmp_path / "server.key")
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return paths


@pytest.fixture
def impostor(tmp_path: Path) -> Iterator[Impostor]:
    import socket
    import socketserver
    import ssl
    import struct

    ca_file, cert_file, key_file = _self_signed(tmp_path)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert_file, key_file)
    state = Impostor(0, ca_file)

    def read(sock: socket.socket, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("closed")
            data += chunk
        return data

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            sock: socket.socket = self.request
            try:
                while True:  # SSLRequest (80877103); GSSENCRequest (80877104) gets "N"
                    length, code = struct.unpack("!ii", read(sock, 8))
                    if code == 80877104:
                        sock.sendall(b"N")
                        continue
                    assert (length, code) == (8, 80877103)
                    sock.sendall(b"S")
                    break
                conn = tls.wrap_socket(sock, server_side=True)
                state.handshakes += 1
                (length,) = struct.unpack("!i", read(conn, 4))
                read(conn, length - 4)  # the startup message: user, database
                conn.sendall(b"R" + struct.pack("!ii", 8, 3))  # cleartext password, please
                kind, length = struct.unpack("!ci", read(conn, 5))
                assert kind == b"p"
                state.passwords.append(read(conn, length - 4).rstrip(b"\0").decode())
                error = b"SFATAL\0C28P01\0Mnot the cluster\0\0"
                conn.sendall(b"E" + struct.pack("!i", len(error) + 4) + error)
            except (ConnectionError, ssl.SSLError, OSError):
                pass  # the client gave up, as it should when the certificate is wrong

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()


def aws_env(host: str, port: int, **extra: str) -> dict[str, str]:
    return {
        "MASTER_SECRET_ARN": "arn:master",
        "DB_HOST": host,
        "DB_PORT": str(port),
        "DB_NAME": "memory",
        "OWNER_SECRET_ARN": "arn:owner",
        "RUNTIME_SECRET_ARN": "arn:runtime",
        "AUDITOR_SECRET_ARN": "arn:auditor",
        **extra,
    }


def master_secrets() -> FakeSecrets:
    fake = role_secrets({"owner": "o-pw", "runtime": "r-pw", "auditor": "a-pw"})
    fake.values["arn:master"] = {"username": "master", "password": "the-master-password"}
    return fake


def test_the_master_password_goes_only_to_a_cluster_whose_certificate_verifies(
    impostor: Impostor, catcher: ResponseCatcher, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server answering for the cluster with a certificate that does not chain to the
    Amazon RDS roots gets no password: the custom resource fails instead. The same
    server trusted as a root (the positive control) is sent the password, so the
    refusal was the certificate check; under another name it is refused again (the
    host is checked, verify-full)."""
    config = app.load_config(aws_env("localhost", impostor.port), master_secrets())
    params = conninfo_to_dict(config.admin_conninfo)
    assert params["sslmode"] == "verify-full"
    assert params["sslrootcert"] == aws_config.cluster_root_certificates()
    assert conninfo_to_dict(config.owner_conninfo)["sslrootcert"] == params["sslrootcert"]
    bundle = Path(aws_config.cluster_root_certificates()).read_text()
    assert bundle.count("-----BEGIN CERTIFICATE-----") >= 3 * 20  # three roots per Region
    assert "# Amazon RDS us-east-1 Root CA RSA2048 G1" in bundle

    def run(host: str, remaining_ms: int = 60_000) -> dict[str, Any]:
        started = time.monotonic()
        app.handle_custom_resource(
            cfn_event(catcher, "Create"),
            LambdaContext(remaining_ms=remaining_ms),
            env=aws_env(host, impostor.port),
            secrets=master_secrets(),
        )
        (response,) = catcher.take()
        if "certificate" in response["Reason"]:  # final: not retried until the deadline
            assert time.monotonic() - started < 5
        return response

    refused = run("localhost")
    assert refused["Status"] == "FAILED" and "certificate verify failed" in refused["Reason"]
    assert impostor.passwords == []

    monkeypatch.setattr(aws_config, "cluster_root_certificates", lambda: str(impostor.ca_file))
    wrong_name = run("127.0.0.1")
    assert wrong_name["Status"] == "FAILED" and "does not match host name" in wrong_name["Reason"]
    assert impostor.passwords == []

    trusted = run("localhost", remaining_ms=12_000)  # a refused login is retried: no time
    assert trusted["Status"] == "FAILED" and "not the cluster" in trusted["Reason"]
    assert impostor.passwords == ["the-master-password"]


def test_the_cluster_connection_refuses_anything_weaker_than_verify_full() -> None:
    for weak in ("disable", "allow", "prefer", "require", "verify-ca"):
        with pytest.raises(aws_config.ConfigurationError, match="verify-full"):
            app.load_config(aws_env("db.example", 5432, DB_SSLMODE=weak), master_secrets())
    said = app.load_config(aws_env("db.example", 5432, DB_SSLMODE="verify-full"), master_secrets())
    assert conninfo_to_dict(said.admin_conninfo)["sslmode"] == "verify-full"
