"""The web console (functions/console) in a real browser: Debian's Chromium driven by
Playwright, against the local stack, signing in as a person does (authorization code +
PKCE through the product's /authorize and the local sign-in page). The same tests
write the screenshots shown in docs/console.md."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import httpx2
import pytest
from playwright.sync_api import Browser, Page, Playwright, expect, sync_playwright

from tests.tls import TLS

ROOT = Path(__file__).resolve().parents[2]
# The screenshots of docs/console.md are refreshed on purpose (CONSOLE_SCREENSHOTS=docs/console);
# an ordinary run writes them under .tmp/, leaving the working tree as it was.
SHOTS = ROOT / os.environ.get("CONSOLE_SCREENSHOTS", ".tmp/console-screenshots")
FIRST_SCREEN_BUDGET = 150 * 1024  # bytes, compressed (docs/console.md)
PROTOCOL = "2026-07-28"


@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    chromium = shutil.which("chromium")
    assert chromium, "Debian's chromium is needed: apt-get install -y chromium (make install)"
    browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
    yield browser
    browser.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(20_000)
    yield page
    context.close()


def sign_in(page: Page, stack: Any, who: str, *, read_only: bool = False) -> None:
    page.goto(stack.info["console_url"])
    if read_only:
        page.get_by_label("Read-only session").check()
    page.get_by_role("button", name="Sign in").click()
    # The local sign-in page (the user pool's stand-in): choose who you are.
    page.get_by_role("button", name=who, exact=True).click()
    page.wait_for_url(stack.info["console_url"])
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()


def open_workspace(page: Page, workspace: str = "acme", context: str = "workspace") -> None:
    page.get_by_label("Workspace", exact=True).fill(workspace)
    page.get_by_label("Listening context").fill(context)
    page.get_by_role("button", name="Open").click()
    expect(page.locator("#grants")).to_be_visible()


def mcp(stack: Any, who: str, tool: str, **arguments: Any) -> dict[str, Any]:
    """A tool call over HTTP as ``who`` (a demo token), outside the browser."""
    return mcp_with(stack, stack.info["tokens"][who], tool, **arguments)


def mcp_with(stack: Any, token: str, tool: str, **arguments: Any) -> dict[str, Any]:
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": tool,
            "arguments": arguments,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": PROTOCOL,
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
    answer = httpx2.post(
        stack.info["workspaces"]["acme"],
        json=message,
        headers={
            "Authorization": f"Bearer {token}",
            "MCP-Protocol-Version": PROTOCOL,
            "Mcp-Method": "tools/call",
            "Mcp-Name": tool,
        },
        timeout=30,
        verify=TLS,
    )
    assert answer.status_code == 200, answer.text
    return dict(answer.json()["result"]["structuredContent"])


def shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def open_record(page: Page, uri: str) -> None:
    """The record from the Browse list, filtered to its namespace, kind and folder: the
    list shows 50 records a page, and other tests' records share acme on the stack."""
    namespace, kind, *folders, _name = uri.removeprefix("memory://").split("/")
    page.locator("#browse-namespace").select_option(namespace)
    page.locator("#browse-kind").select_option(kind)
    page.locator("#browse-folder").fill("/".join(folders))
    page.get_by_role("button", name="List").click()
    page.locator(f"button[data-uri='{uri}']").click()
    expect(page.locator("#record-uri")).to_have_text(uri)


def test_sign_in_keeps_tokens_in_session_storage_and_the_first_screen_is_small(
    stack, page: Page
) -> None:  # type: ignore[no-untyped-def]
    loaded: dict[str, bytes] = {}

    def keep(response: Any) -> None:
        if "/console/" in response.url and response.status == 200:
            loaded[response.url] = response.body()

    page.on("response", keep)
    page.goto(stack.info["console_url"])
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()
    page.remove_listener("response", keep)
    shot(page, "sign-in")
    # Everything the first screen loads, compressed as the console serves it.
    names = {url.rsplit("/console/", 1)[1] for url in loaded}
    assert {"", "console.css", "js/main.js", "js/api.js", "js/memory.js"} <= names
    compressed = sum(len(gzip.compress(body, mtime=0)) for body in loaded.values())
    print(f"first screen: {len(loaded)} files, {compressed} bytes compressed")
    assert compressed < FIRST_SCREEN_BUDGET

    sign_in(page, stack, "alice")
    open_workspace(page)
    expect(page.locator("#who")).to_have_text("Signed in as alice")
    storage = page.evaluate(
        "() => ({session: sessionStorage.getItem('console.tokens'), local: localStorage.length})"
    )
    tokens = json.loads(storage["session"])
    assert tokens["access_token"] and storage["local"] == 0
    assert page.context.cookies() == []  # nothing in cookies
    # The code is gone from the address bar once redeemed.
    assert "code=" not in page.url
    shot(page, "my-memory")

    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()
    assert page.evaluate("() => sessionStorage.length") == 0


def console_refresh(stack: Any, refresh_token: str) -> httpx2.Response:
    """The console's refresh request, outside the browser (its token endpoint, its client)."""
    config = httpx2.get(stack.info["console_url"] + "config.json", timeout=10, verify=TLS).json()
    return httpx2.post(
        config["token_endpoint"],
        data={
            "grant_type": "refresh_token",
            "refresh_token": refresh_token,
            "client_id": config["client_id"],
        },
        timeout=30,
        verify=TLS,
    )


def test_sign_out_revokes_the_refresh_token(stack, page: Page) -> None:  # type: ignore[no-untyped-def]
    sign_in(page, stack, "bob")
    tokens = json.loads(page.evaluate("() => sessionStorage.getItem('console.tokens')"))
    assert console_refresh(stack, tokens["refresh_token"]).status_code == 200  # good until now
    revocations: list[dict[str, list[str]]] = []
    page.on(
        "request",
        lambda request: (
            revocations.append(parse_qs(request.post_data or ""))
            if request.url.endswith("/revoke")
            else None
        ),
    )

    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()
    assert page.evaluate("() => sessionStorage.length") == 0
    assert [r.get("token") for r in revocations] == [[tokens["refresh_token"]]]
    assert revocations[0]["token_type_hint"] == ["refresh_token"]
    refused = console_refresh(stack, tokens["refresh_token"])
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_grant"


def test_sign_out_forgets_the_tokens_when_revocation_cannot_be_reached(  # type: ignore[no-untyped-def]
    stack, page: Page
) -> None:
    sign_in(page, stack, "carol")
    tokens = json.loads(page.evaluate("() => sessionStorage.getItem('console.tokens')"))
    page.route("**/revoke", lambda route: route.abort("internetdisconnected"))
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()
    assert page.evaluate("() => sessionStorage.length") == 0
    # Nothing reached the endpoint, so the token ends only on its own (docs/console.md).
    assert console_refresh(stack, tokens["refresh_token"]).status_code == 200


def test_console_pages_carry_a_strict_policy_and_cannot_be_framed(stack) -> None:  # type: ignore[no-untyped-def]
    base = stack.info["console_url"]
    for name in ("", "js/main.js", "console.css", "config.json"):
        answer = httpx2.get(
            base + name, headers={"Accept-Encoding": "gzip"}, timeout=10, verify=TLS
        )
        assert answer.status_code == 200
        policy = answer.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "style-src 'self'" in policy
        assert "frame-ancestors 'none'" in policy and "unsafe-inline" not in policy
        assert answer.headers["x-frame-options"] == "DENY"
        assert "set-cookie" not in answer.headers
    assert httpx2.get(base + "../console", timeout=10, verify=TLS).status_code in (200, 301)
    assert httpx2.get(base + "nope.js", timeout=10, verify=TLS).status_code == 404
    # No file of the console builds HTML from strings.
    static = ROOT / "functions" / "console" / "static"
    for path in static.rglob("*.js"):
        text = path.read_text()
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
            assert sink not in text, f"{path.name} uses {sink}"


def test_create_edit_with_a_conflict_pin_expire_correct_and_delete(stack, page: Page) -> None:  # type: ignore[no-untyped-def]
    sign_in(page, stack, "alice")
    open_workspace(page)
    name = f"console-{uuid.uuid4().hex[:8]}.md"
    uri = f"memory://me/notes/{name}"
    page.get_by_text("New record").click()
    page.locator("#new-namespace").select_option("me")
    page.locator("#new-kind").select_option("notes")
    page.locator("#new-path").fill(name)
    page.locator("#new-content").fill("# Trip\n- Prefers tea\n- Flies on Mondays\n")
    page.get_by_role("button", name="Create").click()
    expect(page.locator("#record-uri")).to_have_text(uri)
    expect(page.locator("#record-revision")).to_have_text("1")
    # Who wrote it: the handle and its kind.
    expect(page.locator("dl.facts")).to_contain_text("by alice (person)")
    shot(page, "record")

    # Edit, while an agent changes the record underneath: the save conflicts.
    page.get_by_role("button", name="Edit", exact=True).click()
    page.locator("#edit-content").fill("# Trip\n- Prefers tea\n- Flies on Tuesdays\n")
    made = mcp(stack, "alice", "memory_read", uri=uri)
    mcp(
        stack,
        "alice",
        "memory_write",
        uri=uri,
        content="# Trip\n- Prefers tea\n- Flies on Mondays\n- Window seat\n",
        expected_revision=made["revision"],
    )
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#conflict")).to_be_visible()
    expect(page.locator("#conflict-mine")).to_contain_text("Tuesdays")
    expect(page.locator("#conflict-theirs")).to_contain_text("Window seat")
    expect(page.locator("#conflict .diff")).to_contain_text("Window seat")
    expect(page.locator("#conflict")).to_contain_text("(by alice (person),")
    shot(page, "conflict")
    page.get_by_role("button", name="Keep mine").click()
    expect(page.locator("#record-revision")).to_have_text("3")
    assert mcp(stack, "alice", "memory_read", uri=uri)["content"].endswith("Tuesdays\n")

    # Pin, then an expiry set and cleared.
    page.get_by_role("button", name="Pin", exact=True).click()
    expect(page.locator("#record-pinned")).to_have_text("yes")
    later = (datetime.now(UTC) + timedelta(days=3)).strftime("%Y-%m-%dT%H:%M")
    page.locator("#expires").fill(later)
    page.get_by_role("button", name="Set expiry").click()
    expect(page.locator("#record-expires")).not_to_have_text("never")
    read = mcp(stack, "alice", "memory_read", uri=uri)
    assert read["pinned"] is True and read["expires_at"] is not None
    page.get_by_role("button", name="Clear expiry").click()
    expect(page.locator("#record-expires")).to_have_text("never")

    # Correct a fact: the old line is replaced in place (supersede).
    page.locator("#correct-old").select_option("Prefers tea")
    page.locator("#correct-fact").fill("Prefers coffee")
    page.get_by_role("button", name="Add or correct fact").click()
    expect(page.locator(".content").first).to_contain_text("Prefers coffee")
    expect(page.locator(".content").first).not_to_contain_text("Prefers tea")
    expect(page.locator("table.history")).to_contain_text("supersede")
    expect(page.locator("table.history")).to_contain_text("alice (person)")

    # A revision's content and the difference between two.
    page.get_by_role("button", name="View r1").click()
    expect(page.locator("#revision-view")).to_contain_text("Mondays")
    page.locator("#diff-from").select_option("1")
    page.get_by_role("button", name="Compare").click()
    expect(page.locator("#diff-view .add")).to_contain_text(["Prefers coffee"])
    shot(page, "history-diff")

    # Delete, after confirming.
    page.get_by_role("button", name="Delete…").click()
    page.get_by_role("button", name="Delete for good").click()
    expect(page.locator("#deleted")).to_be_visible()
    gone = mcp(stack, "alice", "memory_read", uri=uri)
    assert gone["error"]["code"] == "not_found"


def test_memory_content_is_inert_text(stack, page: Page) -> None:  # type: ignore[no-untyped-def]
    uri = f"memory://me/notes/xss-{uuid.uuid4().hex[:8]}/record.md"  # a folder of its own
    hostile = (
        '# <img src=x onerror="window.__pwned=1">\n'
        "<script>window.__pwned=1</script>\n"
        '- **bold** and <a href="javascript:window.__pwned=1">link</a>\n'
        '<iframe src="https://example.com"></iframe>\n'
    )
    mcp(stack, "alice", "memory_write", uri=uri, content=hostile, expected_revision=0)
    sign_in(page, stack, "alice")
    open_workspace(page)
    open_record(page, uri)
    detail = page.locator("#detail")
    expect(detail.locator(".markdown strong")).to_have_text("bold")  # Markdown rendered
    expect(detail).to_contain_text("<script>window.__pwned=1</script>")  # tags as text
    for tag in ("img", "script", "a", "iframe"):
        assert detail.locator(tag).count() == 0, tag
    page.get_by_role("button", name="Show plain text").click()
    expect(detail.locator("pre.plain")).to_contain_text("<img src=x")
    assert page.evaluate("() => window.__pwned") is None


def test_another_persons_records_never_appear(stack, page: Page) -> None:  # type: ignore[no-untyped-def]
    marker = f"zebra{uuid.uuid4().hex[:8]}"
    uri = f"memory://me/notes/{marker}.md"
    mcp(
        stack, "alice", "memory_write", uri=uri, content=f"alice only {marker}", expected_revision=0
    )
    sign_in(page, stack, "bob")
    open_workspace(page)
    expect(page.locator("#who")).to_have_text("Signed in as bob")
    page.get_by_role("button", name="List").click()
    expect(page.locator("#items")).to_contain_text("preferences.md")  # bob's own
    items = page.locator("#items").inner_text()
    assert marker not in items and "one-on-ones" not in items
    page.locator("#search-query").fill(marker)
    page.get_by_role("button", name="Search", exact=True).click()
    expect(page.locator("#hits")).to_contain_text("No record in view")
    # Bob is no admin of acme: no Workspace view.
    assert page.locator("#tab-workspace").count() == 0


def test_a_read_only_member_sees_no_edit_controls_and_a_forged_edit_is_refused(
    stack, page: Page
) -> None:  # type: ignore[no-untyped-def]
    sign_in(page, stack, "alice", read_only=True)
    open_workspace(page)
    expect(page.locator("#grants")).to_have_text("read")
    open_record(page, "memory://workspace/memories/deploys.md")
    for control in ("#edit", "#pin", "#delete", "#move", "#correct", "#create", "#remember"):
        assert page.locator(control).count() == 0, control
    # The same request the edit button would send, forged with the session's token.
    token = json.loads(page.evaluate("() => sessionStorage.getItem('console.tokens')"))
    read = mcp(stack, "alice", "memory_read", uri="memory://workspace/memories/deploys.md")
    forged = mcp_with(
        stack,
        token["access_token"],
        "memory_write",
        uri="memory://workspace/memories/deploys.md",
        content="forged",
        expected_revision=read["revision"],
    )
    assert forged["error"]["code"] == "permission_denied"
    assert mcp(stack, "alice", "memory_read", uri=read["uri"])["revision"] == read["revision"]


def test_an_admin_creates_and_revokes_an_agent_key_and_reads_the_audit_trail_and_chart(
    stack, page: Page
) -> None:  # type: ignore[no-untyped-def]
    sign_in(page, stack, "alice")
    open_workspace(page)
    page.get_by_role("button", name="Workspace").click()
    name = f"console-{uuid.uuid4().hex[:6]}"
    page.locator("#key-name").fill(name)
    page.get_by_role("button", name="Create key").click()
    secret = page.locator("#new-client-secret")
    expect(secret).not_to_be_empty()
    client_id = page.locator("#new-client-id").inner_text()
    assert secret.inner_text() and client_id
    shot(page, "agent-key-secret")
    page.get_by_role("button", name="I have copied it").click()
    assert page.locator("#new-client-secret").count() == 0  # shown once
    row = page.locator(f"#key-list li[data-client-id='{client_id}']")
    row.get_by_role("button", name=f"Revoke {name}").click()
    expect(row).to_have_count(0)

    # The audit trail, filtered by operation; the revoke is there.
    page.get_by_role("button", name="Workspace").click()  # fresh pages
    expect(page.locator("#audit-rows tr").first).to_be_visible()
    page.locator("#filter-operation").select_option("agent_key.revoke")
    expect(page.locator("#audit-rows")).to_contain_text("agent_key.revoke")
    assert "agent_key.create" not in page.locator("#audit-rows").inner_text()
    page.locator("#filter-operation").select_option("")
    page.locator("#filter-writer").fill("alice")
    expect(page.locator("#audit-rows tr").first).to_contain_text("alice (person)")

    # The chart counts what the admin API reports for the last 30 days.
    chart = page.locator("svg.chart")
    expect(chart).to_be_visible()
    since = datetime.now(UTC) - timedelta(days=30)
    events: list[dict[str, Any]] = []
    cursor = None
    while True:
        params = {"limit": "200", **({"cursor": cursor} if cursor else {})}
        answer = httpx2.get(
            stack.info["api_url"] + "/w/acme/admin/audit",
            params=params,
            headers={"Authorization": f"Bearer {stack.info['tokens']['alice']}"},
            timeout=30,
            verify=TLS,
        ).json()
        events += answer["events"]
        cursor = answer["next_cursor"]
        if not cursor or datetime.fromisoformat(events[-1]["time"]) < since:
            break
    today = datetime.now(UTC).date()
    first_day = today - timedelta(days=29)
    expected = sum(1 for e in events if first_day <= datetime.fromisoformat(e["time"]).date())
    # Events written after the chart loaded (none by this page since) would differ.
    assert int(chart.get_attribute("data-total") or "0") == expected
    assert chart.locator("rect").count() >= 1
    revokes = chart.locator("rect[data-operation='agent_key.revoke']")
    assert revokes.count() >= 1
    shot(page, "workspace")


def test_readable_on_a_phone_and_at_200_percent(stack, browser: Browser) -> None:  # type: ignore[no-untyped-def]
    for viewport, scale, name in (
        ({"width": 390, "height": 844}, 1, "phone"),
        ({"width": 640, "height": 450}, 2, None),
    ):
        context = browser.new_context(viewport=viewport, device_scale_factor=scale)
        page = context.new_page()
        page.set_default_timeout(20_000)
        sign_in(page, stack, "alice")
        open_workspace(page)
        open_record(page, "memory://workspace/memories/deploys.md")
        overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"{viewport}: {overflow}px of horizontal scrolling"
        if name:
            shot(page, name)
        # Keyboard alone: on a fresh load Tab reaches the skip link first.
        page.goto(stack.info["console_url"])
        expect(page.locator("#grants")).to_be_visible()
        page.keyboard.press("Tab")
        assert page.evaluate("() => document.activeElement.className") == "skip"
        context.close()
