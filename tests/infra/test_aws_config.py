"""IAM authentication to RDS Proxy: a fresh token per connection, never in clear text."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from memory_server.data.pool import Database
from memory_server.edge import aws_config
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from tests.conftest import Cluster

PROXY_URL = "postgresql://memory_runtime@proxy.example.internal:5432/memory?sslmode=verify-full"


class Signer:
    def __init__(self, token: Callable[[int], str] = lambda n: f"token-{n}") -> None:
        self.calls: list[tuple[str, int, str]] = []
        self.token = token

    def __call__(self, host: str, port: int, user: str) -> str:
        self.calls.append((host, port, user))
        return self.token(len(self.calls))


def test_without_iam_auth_the_url_is_used_as_is() -> None:
    url = "postgresql://u:p@localhost/db"
    assert aws_config.database_conninfo({"DATABASE_URL": url}) == url
    assert aws_config.database_conninfo({"DATABASE_URL": url, "DB_IAM_AUTH": "false"}) == url
    assert aws_config.resolve(url) == url


def test_with_iam_auth_each_connection_signs_a_new_token() -> None:
    signer = Signer()
    conninfo = aws_config.database_conninfo(
        {"DATABASE_URL": PROXY_URL, "DB_IAM_AUTH": "true"}, signer=signer
    )
    assert callable(conninfo)
    first, second = conninfo_to_dict(conninfo()), conninfo_to_dict(conninfo())
    assert (first["password"], second["password"]) == ("token-1", "token-2")
    assert first["host"] == "proxy.example.internal" and first["user"] == "memory_runtime"
    assert first["dbname"] == "memory" and first["sslmode"] == "verify-full"
    assert signer.calls == [("proxy.example.internal", 5432, "memory_runtime")] * 2


def test_iam_auth_verifies_the_proxy_and_refuses_anything_less() -> None:
    """The token only travels over TLS that checks the proxy's certificate and name
    (verify-full) against the Amazon roots shipped in the layer."""
    url = "postgresql://memory_runtime@proxy.example.internal/memory"
    conninfo = aws_config.database_conninfo(
        {"DATABASE_URL": url, "DB_IAM_AUTH": "1"}, signer=Signer()
    )
    params = conninfo_to_dict(aws_config.resolve(conninfo))
    assert params["sslmode"] == "verify-full"
    bundle = Path(str(params["sslrootcert"]))
    assert bundle == Path(aws_config.proxy_root_certificates()) and bundle.is_file()
    pem = bundle.read_text()
    assert pem.count("-----BEGIN CERTIFICATE-----") == 4
    assert all(f"# Amazon Root CA {n}\n" in pem for n in range(1, 5))
    own = aws_config.database_conninfo(
        {"DATABASE_URL": url + "?sslrootcert=/opt/rds/global-bundle.pem", "DB_IAM_AUTH": "1"},
        signer=Signer(),
    )
    assert conninfo_to_dict(aws_config.resolve(own))["sslrootcert"] == (
        "/opt/rds/global-bundle.pem"
    )
    for bad in ("?sslmode=disable", "?sslmode=prefer", "?sslmode=require", "?sslmode=verify-ca"):
        with pytest.raises(aws_config.ConfigurationError, match="verify-full"):
            aws_config.database_conninfo({"DATABASE_URL": url + bad, "DB_IAM_AUTH": "true"})
    with pytest.raises(aws_config.ConfigurationError, match="password"):
        aws_config.database_conninfo(
            {"DATABASE_URL": "postgresql://u:p@h/db", "DB_IAM_AUTH": "true"}
        )
    with pytest.raises(aws_config.ConfigurationError, match="user"):
        aws_config.database_conninfo({"DATABASE_URL": "postgresql://h/db", "DB_IAM_AUTH": "true"})


def test_the_pool_takes_the_callable_and_reconnects_with_a_fresh_token(cluster: Cluster) -> None:
    """The proposed runtime change: ``Database(aws_config.database_conninfo(env))``.

    The test server has no TLS and no IAM: the "token" is the runtime role's password and
    the TLS requirement is lifted for this connection only.
    """
    parts = urlsplit(cluster.runtime_url)
    host = f"{parts.hostname}:{parts.port}" if parts.port else str(parts.hostname)
    url = urlunsplit((parts.scheme, f"{parts.username}@{host}", parts.path, "", ""))
    signer = Signer(lambda n: cluster.passwords["runtime"])
    conninfo = aws_config.database_conninfo(
        {"DATABASE_URL": url, "DB_IAM_AUTH": "true"}, signer=signer
    )
    assert callable(conninfo)

    def without_tls() -> str:
        return make_conninfo(conninfo(), sslmode="disable")

    db = Database(without_tls, min_size=1, max_size=1)  # type: ignore[arg-type]
    try:
        with db.pool.connection() as conn:
            assert conn.execute("SELECT current_user").fetchone() == {
                "current_user": "memory_runtime"
            }
            conn.close()  # as after a SnapStart restore or a proxy idle timeout
        with db.pool.connection() as conn:  # checked on checkout, replaced, re-signed
            assert conn.execute("SELECT 1 AS one").fetchone() == {"one": 1}
        assert len(signer.calls) >= 2
    finally:
        db.close()


def test_the_cursor_key_comes_from_secrets_manager_once() -> None:
    """With CURSOR_SECRET_ARN the key is read from Secrets Manager (moto), once per
    process and version; it is never in the function's environment."""
    import boto3
    from moto import mock_aws

    with mock_aws():
        client = boto3.client("secretsmanager", region_name="us-east-1")
        arn = client.create_secret(Name="cursor", SecretString="k" * 64)["ARN"]
        env = {"CURSOR_SECRET_ARN": arn}
        calls: list[dict[str, str]] = []

        class Counting:
            def get_secret_value(self, **request: str) -> dict[str, str]:
                calls.append(request)
                return dict(client.get_secret_value(**request))

        assert aws_config.cursor_secret(env, client=Counting()) == "k" * 64
        assert aws_config.cursor_secret(env, client=Counting()) == "k" * 64
        assert calls == [{"SecretId": arn}]
        rotated = client.put_secret_value(SecretId=arn, SecretString="r" * 64)["VersionId"]
        pinned = {**env, "CURSOR_SECRET_VERSION_ID": rotated}
        assert aws_config.cursor_secret(pinned, client=Counting()) == "r" * 64
        assert calls[-1] == {"SecretId": arn, "VersionId": rotated}
    assert aws_config.cursor_secret({"CURSOR_SECRET": "local" * 8}) == "local" * 8


def test_the_consent_key_comes_from_secrets_manager() -> None:
    """The authorization endpoint's key (CONSENT_SECRET_ARN), read as the cursor key is."""
    import boto3
    from moto import mock_aws

    with mock_aws():
        client = boto3.client("secretsmanager", region_name="us-east-1")
        arn = client.create_secret(Name="consent", SecretString="c" * 64)["ARN"]
        assert aws_config.consent_secret({"CONSENT_SECRET_ARN": arn}, client=client) == "c" * 64
    assert aws_config.consent_secret({"CONSENT_SECRET": "local" * 8}) == "local" * 8
