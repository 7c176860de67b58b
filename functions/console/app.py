"""The console function: the web console's static files at ``/console/``, and nothing else.

A small function outside the VPC, without the core layer: it reads no database and
holds no secret. It serves the files packaged with it (``static/``), one fixed list
read at init, and ``/console/config.json``: the console's public app client id and the
token endpoint. The id is ``CONSOLE_CLIENT_ID`` when set (``make dev``); deployed it is
looked up once per container by the client's name (``CONSOLE_CLIENT_NAME`` in
``USER_POOL_ID``, ``ListUserPoolClients``), because the app client's callback URL names
the API, whose routes name this function: a reference back would be a cycle. Everything the
console shows it fetches itself, in the person's browser, from the MCP endpoint and
the admin API with the person's own token: it has no API of its own.

Every answer carries the console's Content-Security-Policy: scripts, styles, images
and fonts from this origin only, no inline script or style, fetches to this origin
and the token endpoint's, no framing (``frame-ancestors 'none'``), forms nowhere.
Files are gzip-compressed when the browser accepts it.
"""

from __future__ import annotations

import base64
import functools
import gzip
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

STATIC = Path(__file__).resolve().parent / "static"
PREFIX = "/console"
CONFIG = "config.json"
# What the template sets (make dev passes CONSOLE_CLIENT_ID instead of the last two).
ENVIRONMENT = ("OAUTH_BASE_URL", "USER_POOL_ID", "CONSOLE_CLIENT_NAME")
TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".json": "application/json",
    ".ico": "image/x-icon",
}


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def content_security_policy(token_origin: str | None) -> str:
    connect = "'self'" + (f" {token_origin}" if token_origin else "")
    return (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        f"connect-src {connect}; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'"
    )


def client_id_by_name(pool_id: str, name: str) -> str:
    """The app client of the pool named ``name`` (read-only; boto3 is in the runtime)."""
    import boto3  # only deployed, and only when a browser first asks for the config

    cognito = boto3.client("cognito-idp")
    token: str | None = None
    while True:
        page = cognito.list_user_pool_clients(
            UserPoolId=pool_id, MaxResults=60, **({"NextToken": token} if token else {})
        )
        for client in page.get("UserPoolClients", []):
            if client.get("ClientName") == name:
                return str(client["ClientId"])
        token = page.get("NextToken")
        if not token:
            raise LookupError(f"no app client named {name} in the user pool")


@dataclass
class Console:
    files: Mapping[str, bytes]  # the name below /console/ ("" is index.html) -> content
    env: Mapping[str, str]
    policy: str
    _config: bytes | None = None

    @property
    def config(self) -> bytes:
        if self._config is None:
            client_id = self.env.get("CONSOLE_CLIENT_ID") or client_id_by_name(
                self.env["USER_POOL_ID"], self.env["CONSOLE_CLIENT_NAME"]
            )
            oauth_base = self.env["OAUTH_BASE_URL"].rstrip("/")
            self._config = json.dumps(
                {"client_id": client_id, "token_endpoint": f"{oauth_base}/oauth2/token"}
            ).encode()
        return self._config

    def route(self, event: Mapping[str, Any], context: Any = None) -> dict[str, Any]:
        method = event.get("requestContext", {}).get("http", {}).get("method", "GET")
        path = str(event.get("rawPath", ""))
        if method not in ("GET", "HEAD"):
            return self._answer(405, b"", "text/plain", {"allow": "GET, HEAD"})
        if path == PREFIX:
            return self._answer(301, b"", "text/plain", {"location": f"{PREFIX}/"})
        name = path[len(PREFIX) + 1 :] if path.startswith(f"{PREFIX}/") else None
        if name == CONFIG:
            return self._answer(200, self.config, TYPES[".json"], {"cache-control": "no-store"})
        if name is None or name not in self.files:
            return self._answer(404, b"Not Found", "text/plain")
        content_type = TYPES.get(Path(name or "index.html").suffix, "application/octet-stream")
        accepts = str((event.get("headers") or {}).get("accept-encoding", ""))
        return self._answer(200, self.files[name], content_type, {}, gzip_ok="gzip" in accepts)

    def _answer(
        self,
        status: int,
        body: bytes,
        content_type: str,
        extra: Mapping[str, str] | None = None,
        *,
        gzip_ok: bool = False,
    ) -> dict[str, Any]:
        headers = {
            "content-type": content_type,
            "content-security-policy": self.policy,
            "x-frame-options": "DENY",
            "x-content-type-options": "nosniff",
            "referrer-policy": "no-referrer",
            "cross-origin-opener-policy": "same-origin",
            # No build step and no hashed names: the browser asks again each time,
            # and gets the same bytes from a warm function in a millisecond.
            "cache-control": "no-cache",
            **(extra or {}),
        }
        if gzip_ok and body:
            headers["content-encoding"] = "gzip"
            headers["vary"] = "accept-encoding"
            packed = gzip.compress(body, mtime=0)
            return {
                "statusCode": status,
                "headers": headers,
                "body": base64.b64encode(packed).decode(),
                "isBase64Encoded": True,
            }
        return {"statusCode": status, "headers": headers, "body": body.decode()}


def read_files(root: Path = STATIC) -> dict[str, bytes]:
    """Every file under ``root`` by its path below it (``index.html`` also as "")."""
    files = {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }
    files[""] = files["index.html"]
    return files


def build_console(env: Mapping[str, str] = os.environ, root: Path = STATIC) -> Console:
    return Console(
        files=read_files(root),
        env=dict(env),
        policy=content_security_policy(origin_of(env["OAUTH_BASE_URL"])),
    )


@functools.cache
def _console() -> Console:
    return build_console()


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return _console().route(event, context)
