"""Authorizer benchmark: token verification warm and cold, and the result cache's effect.

Run as ``python -m bench.authorizer_bench`` (see docs/cost.md). Needs nothing but the
development environment: the local issuer stands in for the user pool. The authorizer
makes no AWS call, so no AWS stand-in runs.

- **warm**: ``TokenAuthorizer.authorize`` (the deployed code: bearer parsing, RS256
  signature against the cached key set, claims, route scope, context) on a valid token,
  many times in one process; and the same for refusals (a bad signature);
- **cold start**: a fresh interpreter imports ``functions/authorizer/app.py`` (building
  the authorizer and fetching the key set over HTTP) and decides its first request;
  several runs, medians;
- **cache**: the same requests through the API Gateway emulator (over loopback HTTP,
  an echo handler behind it) with the template's result cache and without: latency per
  request, and how many times the authorizer ran.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx2
from memory_local.aws import cognito_issuer
from memory_local.gateway import ApiGateway
from memory_local.tokens import LocalIssuer
from memory_server.domain.errors import TokenRefused
from memory_server.domain.limits import AUTHORIZER_CACHE_TTL_S
from memory_server.signin.authorizer import MCP_ROUTE_KEY, TokenAuthorizer
from memory_server.signin.verify import KeySet

from .timing import cold_starts, percentiles, save_results

ROOT = Path(__file__).resolve().parents[1]
BENCH_POOL = "us-east-1_Bench0001"  # the tokens' issuer: a pool id of Cognito's shape
# The cold start's first request (bench.timing.cold_starts).
COLD_START_REQUEST = """
response = app.handler(json.loads(sys.argv[2]), None)
"""


def authorizer_event(token: str) -> dict[str, Any]:
    return {
        "version": "2.0",
        "type": "REQUEST",
        "routeKey": MCP_ROUTE_KEY,
        "rawPath": "/w/acme/mcp",
        "identitySource": [f"Bearer {token}", MCP_ROUTE_KEY],
        "headers": {"authorization": f"Bearer {token}"},
        "pathParameters": {"workspace": "acme"},
        "requestContext": {"domainName": "api.example.com", "http": {"method": "POST"}},
    }


def warm(issuer: LocalIssuer, iterations: int) -> dict[str, Any]:
    authorizer = TokenAuthorizer(issuer.issuer, KeySet(issuer.jwks))
    token = issuer.issue_access_token(
        sub="bench-person", client_id="bench-client", scopes=["memory/read"], username="b"
    )
    forged = token[:-8] + ("AAAAAAAA" if not token.endswith("AAAAAAAA") else "BBBBBBBB")
    good, bad = authorizer_event(token), authorizer_event(forged)
    for _ in range(200):  # warm the key set and the interpreter's caches
        authorizer.authorize(good)
    allowed: list[float] = []
    refused: list[float] = []
    for _ in range(iterations):
        started = time.perf_counter()
        authorizer.authorize(good)
        allowed.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        with contextlib.suppress(TokenRefused):
            authorizer.authorize(bad)
        refused.append((time.perf_counter() - started) * 1000)
    return {"allowed_ms": percentiles(allowed), "refused_ms": percentiles(refused)}


def cold(issuer: LocalIssuer, jwks_url: str, runs: int) -> dict[str, Any]:
    env = {
        **os.environ,
        "AUTH_ISSUER": issuer.issuer,
        "JWKS_URL": jwks_url,
        "PYTHONPATH": os.pathsep.join(
            [str(ROOT / "layers" / "core"), os.environ.get("PYTHONPATH", "")]
        ),
    }
    token = issuer.issue_access_token(
        sub="bench-person", client_id="bench-client", scopes=["memory/read"], username="b"
    )
    result = cold_starts(
        ROOT / "functions" / "authorizer" / "app.py",
        authorizer_event(token),
        env,
        runs,
        module="authorizer_app",
        request=COLD_START_REQUEST,
        accepted='response["isAuthorized"] is True',
    )
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    interpreter = (time.perf_counter() - started) * 1000
    return {**result, "bare_interpreter_ms": interpreter, "runs": runs}


def cache(issuer: LocalIssuer, requests: int) -> dict[str, Any]:
    token = issuer.issue_access_token(
        sub="bench-person", client_id="bench-client", scopes=["memory/read"], username="b"
    )
    out: dict[str, Any] = {}
    for label, ttl in (("cached", AUTHORIZER_CACHE_TTL_S), ("uncached", 0)):
        with (
            ApiGateway(
                lambda event, context: {"statusCode": 204},
                issuer=issuer,
                authorizer_ttl_s=ttl,
                quiet=True,
            ) as gateway,
            httpx2.Client(headers={"Authorization": f"Bearer {token}"}) as http,
        ):
            url = gateway.mcp_url("acme")
            for _ in range(20):
                http.post(url)
            gateway.authorizer.clear()
            before = gateway.authorizer.invocations
            samples = []
            for _ in range(requests):
                started = time.perf_counter()
                assert http.post(url).status_code == 204
                samples.append((time.perf_counter() - started) * 1000)
            out[label] = {
                "request_ms": percentiles(samples),
                "authorizer_invocations": gateway.authorizer.invocations - before,
                "requests": requests,
                "ttl_s": ttl,
            }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--iterations", type=int, default=5000)
    parser.add_argument("--cold-runs", type=int, default=7)
    parser.add_argument("--requests", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        issuer = LocalIssuer(Path(tmp) / "key.pem", cognito_issuer("us-east-1", BENCH_POOL))
        results: dict[str, Any] = {
            "machine": f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}"
        }
        results["warm"] = warm(issuer, args.iterations)
        with ApiGateway(lambda e, c: {"statusCode": 204}, issuer=issuer, quiet=True) as keys:
            results["cold_start"] = cold(
                issuer, f"{keys.url}/.well-known/jwks.json", args.cold_runs
            )
        results["cache"] = cache(issuer, args.requests)
    save_results("authorizer", results)


if __name__ == "__main__":
    main()
