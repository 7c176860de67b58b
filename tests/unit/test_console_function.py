"""The console function (functions/console/app.py) without a browser: what it serves,
with which headers, and how it finds its app client."""

from __future__ import annotations

import base64
import gzip
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def app() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "console_app", ROOT / "functions" / "console" / "app.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def get(console: Any, path: str, **headers: str) -> dict[str, Any]:
    event = {"rawPath": path, "headers": headers, "requestContext": {"http": {"method": "GET"}}}
    return dict(console.route(event))


ENV = {"CONSOLE_CLIENT_ID": "abc123", "OAUTH_BASE_URL": "https://pool.auth.example.com"}


def test_serves_the_packaged_files_with_the_policy(app: ModuleType) -> None:
    console = app.build_console(ENV)
    index = get(console, "/console/")
    assert index["statusCode"] == 200 and '<script type="module"' in index["body"]
    policy = index["headers"]["content-security-policy"]
    assert "connect-src 'self' https://pool.auth.example.com" in policy
    assert "frame-ancestors 'none'" in policy and "'unsafe-inline'" not in policy
    assert index["headers"]["x-frame-options"] == "DENY"
    assert get(console, "/console")["headers"]["location"] == "/console/"
    assert get(console, "/console/js/main.js")["headers"]["content-type"].startswith(
        "text/javascript"
    )
    packed = get(console, "/console/console.css", **{"accept-encoding": "gzip, br"})
    assert packed["headers"]["content-encoding"] == "gzip"
    assert gzip.decompress(base64.b64decode(packed["body"])).startswith(b"/*")


def test_answers_nothing_outside_its_files(app: ModuleType) -> None:
    console = app.build_console(ENV)
    for path in ("/console/../functions/console/app.py", "/console/app.py", "/consolex", "/"):
        assert get(console, path)["statusCode"] == 404, path
    post = {"rawPath": "/console/", "requestContext": {"http": {"method": "POST"}}}
    assert console.route(post)["statusCode"] == 405


def test_config_names_the_client_and_the_token_endpoint(app: ModuleType, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    config = json.loads(get(app.build_console(ENV), "/console/config.json")["body"])
    assert config == {
        "client_id": "abc123",
        "token_endpoint": "https://pool.auth.example.com/oauth2/token",
    }
    # Deployed: looked up by name, once.
    asked: list[tuple[str, str]] = []

    def lookup(pool: str, name: str) -> str:
        asked.append((pool, name))
        return "found1"

    monkeypatch.setattr(app, "client_id_by_name", lookup)
    deployed = app.build_console(
        {
            "OAUTH_BASE_URL": "https://pool.auth.example.com",
            "USER_POOL_ID": "eu-west-1_x",
            "CONSOLE_CLIENT_NAME": "stack-console",
        }
    )
    for _ in range(2):
        assert json.loads(get(deployed, "/console/config.json")["body"])["client_id"] == "found1"
    assert asked == [("eu-west-1_x", "stack-console")]
