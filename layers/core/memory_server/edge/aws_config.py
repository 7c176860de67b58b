"""Settings that exist only in AWS: IAM authentication to RDS Proxy, over TLS that
verifies the proxy, and the cursor-signing key from Secrets Manager.

In AWS the functions reach PostgreSQL through RDS Proxy with ``IAMAuth: REQUIRED``.
``DATABASE_URL`` then carries host, port, database and role but no password, and
``DB_IAM_AUTH=true`` asks for a token instead: an RDS IAM token is a SigV4-signed
string valid for 15 minutes, computed locally from the function's role credentials
(no network call, no secret to fetch). It is needed only when a connection is opened;
an open connection outlives its token. So the conninfo is a *callable* that signs a
fresh token per connection, which ``psycopg_pool.ConnectionPool`` accepts in place of
a string: every reconnect (proxy idle timeout, SnapStart restore, pool growth) gets a
valid token, never one baked into a snapshot or left over from cold start.

The token is a bearer credential, so it only travels over TLS that verifies the
server: ``sslmode=verify-full`` (no weaker mode is accepted) against
``certs/amazon-root-ca.pem``, the Amazon Trust Services roots that RDS Proxy's
certificates chain to, unless the URL names its own ``sslrootcert`` (for a direct
connection to a cluster, the RDS bundle from
https://truststore.pki.rds.amazonaws.com/global/global-bundle.pem).

Without ``DB_IAM_AUTH`` (local development, tests) the URL is returned unchanged.

The cursor key: ``CURSOR_SECRET_ARN`` (and optionally ``CURSOR_SECRET_VERSION_ID``)
names a Secrets Manager secret read once per process (at init, so SnapStart keeps
it and no request waits for it); without it, ``CURSOR_SECRET`` (local runs, tests).
The consent key of the authorization endpoint (``signin.authorization``) the same
way: ``CONSENT_SECRET_ARN``, else ``CONSENT_SECRET``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from functools import cache
from importlib.resources import files
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

# Environment variables this module reads, beyond ``runtime.ENVIRONMENT``; the
# template sets them and a test checks the names.
ENVIRONMENT = ("DB_IAM_AUTH", "CURSOR_SECRET_ARN", "CURSOR_SECRET_VERSION_ID")

# Signs a token for (host, port, user).
TokenSigner = Callable[[str, int, str], str]
Conninfo = str | Callable[[], str]

_TRUE = frozenset({"1", "true", "yes", "on"})
VERIFIED = "verify-full"
_SECRETS: dict[tuple[str, str | None], str] = {}


def proxy_root_certificates() -> str:
    """The path of the shipped CA file for RDS Proxy (Amazon Trust Services roots)."""
    return str(files(__package__) / "certs" / "amazon-root-ca.pem")


def cluster_root_certificates() -> str:
    """The path of the shipped CA file for a direct connection to an Aurora or RDS
    cluster (the Amazon RDS roots of every Region, from AWS's global bundle)."""
    return str(files(__package__) / "certs" / "rds-global-bundle.pem")


class ConfigurationError(RuntimeError):
    pass


def iam_auth_enabled(env: Mapping[str, str] = os.environ) -> bool:
    return env.get("DB_IAM_AUTH", "").strip().lower() in _TRUE


@cache
def _rds_client() -> Any:
    import boto3  # only in AWS; the region comes from AWS_REGION, set by Lambda

    return boto3.client("rds")


def rds_token_signer(host: str, port: int, user: str) -> str:
    """``generate_db_auth_token``: local SigV4 signing with the role's credentials.

    The client is created on first use and kept: botocore refreshes the role's
    temporary credentials itself, including after a SnapStart restore.
    """
    return str(_rds_client().generate_db_auth_token(DBHostname=host, Port=port, DBUsername=user))


def database_conninfo(
    env: Mapping[str, str] = os.environ, *, signer: TokenSigner | None = None
) -> Conninfo:
    """``DATABASE_URL`` as is, or (with ``DB_IAM_AUTH``) a callable adding a fresh token."""
    url = env["DATABASE_URL"]
    if not iam_auth_enabled(env):
        return url
    params = conninfo_to_dict(url)
    host, user = params.get("host"), params.get("user")
    if not host or not user:
        raise ConfigurationError("DATABASE_URL must name the host and the user for IAM auth")
    if params.get("password"):
        raise ConfigurationError("DATABASE_URL must not carry a password when DB_IAM_AUTH is on")
    sslmode = str(params.get("sslmode") or VERIFIED)
    if sslmode != VERIFIED:
        # The token is a bearer credential for 15 minutes: never sent in clear text,
        # nor to a server whose certificate and name were not checked.
        raise ConfigurationError(
            f"IAM auth needs TLS that verifies the server; sslmode={sslmode} is not "
            f"allowed (use {VERIFIED})"
        )
    rootcert = str(params.get("sslrootcert") or proxy_root_certificates())
    port = int(params.get("port") or 5432)
    sign = signer or rds_token_signer

    def conninfo() -> str:
        return make_conninfo(
            url,
            password=sign(str(host), port, str(user)),
            sslmode=sslmode,
            sslrootcert=rootcert,
        )

    return conninfo


def cursor_secret(env: Mapping[str, str] = os.environ, *, client: Any = None) -> str:
    """The key that signs cursors: from Secrets Manager when ``CURSOR_SECRET_ARN`` is
    set (read once per process and version), else ``CURSOR_SECRET``."""
    return _secret(env, "CURSOR_SECRET", client)


def consent_secret(env: Mapping[str, str] = os.environ, *, client: Any = None) -> str:
    """The key that signs consent tokens: from Secrets Manager when
    ``CONSENT_SECRET_ARN`` is set (read once per process), else ``CONSENT_SECRET``."""
    return _secret(env, "CONSENT_SECRET", client)


def _secret(env: Mapping[str, str], name: str, client: Any) -> str:
    arn = env.get(f"{name}_ARN")
    if not arn:
        return env.get(name, "")
    version = env.get(f"{name}_VERSION_ID") or None
    if (arn, version) not in _SECRETS:
        if client is None:
            import boto3  # only in AWS

            client = boto3.client("secretsmanager")
        request = {"SecretId": arn, **({"VersionId": version} if version else {})}
        _SECRETS[arn, version] = str(client.get_secret_value(**request)["SecretString"])
    return _SECRETS[arn, version]


def events_client() -> Any:
    """An EventBridge client whose ``PutEvents`` gives up within seconds: publishing
    after the response is bounded (limits: ``EVENTS_*``), and what does not make it
    waits in the outbox for the sweeper."""
    import boto3
    from botocore.config import Config

    from memory_server.domain.limits import (
        EVENTS_CONNECT_TIMEOUT_S,
        EVENTS_MAX_ATTEMPTS,
        EVENTS_READ_TIMEOUT_S,
    )

    config = Config(
        connect_timeout=EVENTS_CONNECT_TIMEOUT_S,
        read_timeout=EVENTS_READ_TIMEOUT_S,
        retries={"total_max_attempts": EVENTS_MAX_ATTEMPTS, "mode": "standard"},
    )
    return boto3.client("events", config=config)


def resolve(conninfo: Conninfo) -> str:
    return conninfo() if callable(conninfo) else conninfo


def connect(
    env: Mapping[str, str] = os.environ, *, signer: TokenSigner | None = None, **kwargs: Any
) -> psycopg.Connection[Any]:
    """One connection (for functions that do not keep a pool, like the sweeper)."""
    return psycopg.connect(resolve(database_conninfo(env, signer=signer)), **kwargs)
