"""Database connection settings that exist only in AWS: IAM authentication to RDS Proxy.

In AWS the functions reach PostgreSQL through RDS Proxy with ``IAMAuth: REQUIRED``.
``DATABASE_URL`` then carries host, port, database and role but no password, and
``DB_IAM_AUTH=true`` asks for a token instead: an RDS IAM token is a SigV4-signed
string valid for 15 minutes, computed locally from the function's role credentials
(no network call, no secret to fetch). It is needed only when a connection is opened;
an open connection outlives its token. So the conninfo is a *callable* that signs a
fresh token per connection, which ``psycopg_pool.ConnectionPool`` accepts in place of
a string: every reconnect (proxy idle timeout, SnapStart restore, pool growth) gets a
valid token, never one baked into a snapshot or left over from cold start.

Without ``DB_IAM_AUTH`` (local development, tests) the URL is returned unchanged.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

# Environment variables this module reads, beyond ``runtime.ENVIRONMENT``; the
# template sets them and a test checks the names.
ENVIRONMENT = ("DB_IAM_AUTH",)

# Signs a token for (host, port, user).
TokenSigner = Callable[[str, int, str], str]
Conninfo = str | Callable[[], str]

_TRUE = frozenset({"1", "true", "yes", "on"})
_ENCRYPTED = frozenset({"require", "verify-ca", "verify-full"})


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
    sslmode = str(params.get("sslmode") or "require")
    if sslmode not in _ENCRYPTED:
        # The token is a bearer credential for 15 minutes: never send it in clear text.
        raise ConfigurationError(f"IAM auth needs TLS; sslmode={sslmode} is not allowed")
    port = int(params.get("port") or 5432)
    sign = signer or rds_token_signer

    def conninfo() -> str:
        return make_conninfo(url, password=sign(str(host), port, str(user)), sslmode=sslmode)

    return conninfo


def events_client() -> Any:
    """An EventBridge client whose ``PutEvents`` gives up within seconds: publishing
    after the response is bounded (limits: ``EVENTS_*``), and what does not make it
    waits in the outbox for the sweeper."""
    import boto3
    from botocore.config import Config

    from .limits import EVENTS_CONNECT_TIMEOUT_S, EVENTS_MAX_ATTEMPTS, EVENTS_READ_TIMEOUT_S

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
