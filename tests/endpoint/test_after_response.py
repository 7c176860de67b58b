"""Audit events are published after the response (docs/contract.md §5).

The response never waits for EventBridge: the post-commit hook hands publishing to
the runner of :mod:`memory_server.operations.after_response`, which runs it once the handler
has returned (a worker thread locally; in Lambda an internal extension, emulated
here by a fake Extensions API). The outbox stays the source of truth: a function
killed right after its response loses no event, the sweeper publishes it, and
every change keeps exactly one ``event_id``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import psycopg
import pytest
from memory_server.domain.grants import ALL_GRANTS, GRANT_SCOPES
from memory_server.edge.service import McpService, Settings
from memory_server.operations import audit_events as audit
from memory_server.operations.after_response import (
    AfterResponse,
    Inline,
    LambdaExtension,
    Worker,
)

from tests.endpoint.conftest import event, tool_call

ROOT = Path(__file__).resolve().parents[2]
SCOPES = [GRANT_SCOPES[g] for g in ALL_GRANTS]
SLOW_S = 1.0


class RecordingSink:
    """An event sink that records what it was given; optionally slow or failing."""

    def __init__(self, delay_s: float = 0.0, fail_every: int = 0) -> None:
        self.delay_s = delay_s
        self.fail_every = fail_every
        self.entries: list[dict[str, Any]] = []
        self.started: float | None = None
        self.finished: float | None = None
        self.calls = 0
        self.lock = threading.Lock()

    def put(self, entries: Sequence[dict[str, Any]]) -> list[bool]:
        self.started = time.monotonic()
        time.sleep(self.delay_s)
        with self.lock:
            self.calls += 1
            failing = self.fail_every and self.calls % self.fail_every == 0
            if not failing:
                self.entries += entries
        self.finished = time.monotonic()
        return [not failing] * len(entries)

    def event_ids(self) -> list[tuple[tuple[str, int], int]]:
        details = [json.loads(e["Detail"]) for e in self.entries]
        return [((d["record_id"], d["revision"]), d["event_id"]) for d in details]


class FakeEvents:
    """Stands in for the boto3 EventBridge client: the service wraps it in its sink."""

    def __init__(self, sink: RecordingSink) -> None:
        self.sink = sink

    def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        ok = self.sink.put(Entries)
        return {"Entries": [{"EventId": "x"} if good else {"ErrorCode": "E"} for good in ok]}


def service_with(database: Any, sink: RecordingSink, runner: Any) -> McpService:
    settings = Settings(database_url="unused", cursor_secret=b"c" * 32, audit_bus="bus")
    return McpService(settings, database, FakeEvents(sink), after_response=AfterResponse(runner))


def write_call(slug: str, sub: str, path: str, request_id: str | None = None) -> dict[str, Any]:
    body = tool_call("memory_write", uri=path, content="hello", expected_revision=0)
    made = event(slug, sub=sub, scopes=SCOPES, body=body)
    if request_id is not None:
        made["requestContext"]["requestId"] = request_id
    return made


def member(world: Any) -> tuple[str, str]:
    ws = world.workspace()
    return ws.slug, ws.person("alice").subject


def outbox(owner: psycopg.Connection[Any], slug: str) -> list[tuple[int, Any]]:
    return owner.execute(
        "SELECT a.id, a.published_at FROM memory.audit_outbox a "
        "JOIN memory.workspaces w ON w.id = a.workspace_id "
        "WHERE w.slug = %s AND a.operation = 'create' ORDER BY a.id",
        (slug,),
    ).fetchall()


def sweep_all(cluster: Any, sink: RecordingSink) -> None:
    """The sweeper, until nothing is left (other tests leave rows unpublished too: a
    run takes the oldest 500)."""
    with psycopg.connect(cluster.auditor_url) as auditor:
        for _ in range(1000):
            if audit.sweep(auditor, sink, min_age=timedelta(0)) == (0, 0):
                return
    raise AssertionError("the sweeper never finished")


class Context:
    def __init__(self, request_id: str) -> None:
        self.aws_request_id = request_id

    def get_remaining_time_in_millis(self) -> int:
        return 10_000


# -- the response does not wait ----------------------------------------------------------


def test_the_response_returns_before_a_slow_sink_finishes(world: Any, database: Any) -> None:
    slug, sub = member(world)
    sink = RecordingSink(delay_s=SLOW_S)
    worker = Worker()
    service = service_with(database, sink, worker)
    started = time.monotonic()
    response = service.invoke(write_call(slug, sub, "memory://workspace/notes/slow.md"))
    returned = time.monotonic()
    assert response["statusCode"] == 200
    assert json.loads(response["body"])["result"]["isError"] is False
    assert returned - started < SLOW_S / 2, f"the response took {returned - started:.2f}s"
    assert sink.finished is None, "the sink finished before the response"
    assert worker.wait_idle(10)
    assert sink.finished is not None and sink.finished > returned + SLOW_S / 2
    ((_, published_at),) = outbox(world.owner, slug)
    assert published_at is not None  # published (and marked) after the response


def test_inline_publishing_is_what_the_response_used_to_wait_for(world: Any, database: Any) -> None:
    """The same change with the inline runner: the response waits for the sink, so the
    test above can tell the difference."""
    slug, sub = member(world)
    sink = RecordingSink(delay_s=SLOW_S)
    service = service_with(database, sink, Inline())
    started = time.monotonic()
    service.invoke(write_call(slug, sub, "memory://workspace/notes/inline.md"))
    assert time.monotonic() - started >= SLOW_S
    assert sink.finished is not None


class FakeExtensionsApi:
    """The Lambda Extensions API as an internal extension sees it: register, then each
    ``next`` blocks until the next invocation (sent by :meth:`invoke`)."""

    def __init__(self, refuse_registration: bool = False, drop_polls: int = 0) -> None:
        self.events: list[dict[str, Any]] = []
        self.next_calls: list[float] = []
        self.cond = threading.Condition()
        self.drop_polls = drop_polls  # long polls to break (as a restore might)
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                assert self.path == "/2020-01-01/extension/register"
                assert self.headers["Lambda-Extension-Name"]
                status = 403 if refuse_registration else 200
                self.send_response(status)
                self.send_header("Lambda-Extension-Identifier", "ext-1")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def do_GET(self) -> None:
                assert self.path == "/2020-01-01/extension/event/next"
                assert self.headers["Lambda-Extension-Identifier"] == "ext-1"
                with api.cond:
                    if api.drop_polls:
                        api.drop_polls -= 1
                        api.next_calls.append(time.monotonic())
                        api.cond.notify_all()
                        api.cond.wait_for(lambda: bool(api.events))
                        self.close_connection = True  # no answer: the poll breaks
                        return
                    api.next_calls.append(time.monotonic())
                    api.cond.notify_all()
                    api.cond.wait_for(lambda: bool(api.events))
                    body = json.dumps(api.events.pop(0)).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.address = f"127.0.0.1:{self.server.server_address[1]}"

    def invoke(self, request_id: str) -> None:
        with self.cond:
            deadline_ms = int((time.time() + 10) * 1000)
            self.events.append(
                {"eventType": "INVOKE", "requestId": request_id, "deadlineMs": deadline_ms}
            )
            self.cond.notify_all()

    def wait_next_calls(self, count: int, timeout_s: float = 10) -> list[float]:
        with self.cond:
            assert self.cond.wait_for(lambda: len(self.next_calls) >= count, timeout_s)
            return list(self.next_calls)

    def close(self) -> None:
        self.server.shutdown()


@pytest.fixture
def extensions_api() -> Iterator[FakeExtensionsApi]:
    api = FakeExtensionsApi()
    yield api
    api.close()


def test_in_lambda_the_extension_publishes_after_the_response_then_releases_the_invocation(
    world: Any, database: Any, extensions_api: FakeExtensionsApi
) -> None:
    """Lambda returns the response when the handler returns, and ends the invocation
    when every extension has asked for its next event: the extension thread asks only
    once the slow sink has finished."""
    slug, sub = member(world)
    runner = LambdaExtension.register(extensions_api.address)
    assert isinstance(runner, LambdaExtension)
    extensions_api.wait_next_calls(1)  # init done: the extension waits for an event
    sink = RecordingSink(delay_s=SLOW_S)
    service = service_with(database, sink, runner)

    extensions_api.invoke("req-1")
    started = time.monotonic()
    response = service.invoke(
        write_call(slug, sub, "memory://workspace/notes/ext.md", "api-1"), Context("req-1")
    )
    returned = time.monotonic()
    assert response["statusCode"] == 200
    assert returned - started < SLOW_S / 2, "the handler waited for the sink"
    next_calls = extensions_api.wait_next_calls(2)
    assert sink.finished is not None and sink.finished > returned
    assert next_calls[1] >= sink.finished, "the invocation ended before the events were out"
    ((_, published_at),) = outbox(world.owner, slug)
    assert published_at is not None

    # An invocation that changes nothing is released at once.
    extensions_api.invoke("req-2")
    read = event(slug, sub=sub, scopes=SCOPES, body={"jsonrpc": "2.0", "id": 2, "method": "ping"})
    service.invoke(read, Context("req-2"))
    released = extensions_api.wait_next_calls(3)[2]
    assert released - time.monotonic() < 0.5


def test_a_broken_long_poll_is_asked_again(world: Any, database: Any) -> None:
    """A SnapStart restore may break the connection of the poll the extension had
    open when the snapshot was taken: the extension asks again and publishes."""
    slug, sub = member(world)
    api = FakeExtensionsApi(drop_polls=1)
    try:
        runner = LambdaExtension.register(api.address)
        api.wait_next_calls(1)
        sink = RecordingSink()
        service = service_with(database, sink, runner)
        api.invoke("req-1")
        service.invoke(
            write_call(slug, sub, "memory://workspace/notes/restored.md"), Context("req-1")
        )
        api.wait_next_calls(3)  # the broken poll, its retry, and the one after publishing
        assert len(sink.entries) == 1
        assert isinstance(runner, LambdaExtension) and runner._alive
    finally:
        api.close()


def test_without_an_extensions_api_publishing_falls_back_to_inline() -> None:
    api = FakeExtensionsApi(refuse_registration=True)
    try:
        assert isinstance(LambdaExtension.register(api.address), Inline)
    finally:
        api.close()


# -- nothing is lost, one event id per change ----------------------------------------------

KILLED_SCRIPT = """
import json, sys, time
from memory_server.operations.after_response import AfterResponse, Worker
from memory_server.data.pool import Database
from memory_server.edge.service import McpService, Settings
from tests.endpoint.conftest import event

class Stuck:  # EventBridge that never answers: the process dies first
    def put_events(self, Entries):
        print("publishing", flush=True)
        time.sleep(60)

url, slug, sub, scopes = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split()
settings = Settings(database_url=url, cursor_secret=b"c" * 32, audit_bus="b")
service = McpService(settings, Database(url), Stuck(), after_response=AfterResponse(Worker()))
body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "memory_write",
        "arguments": {"uri": "memory://workspace/notes/killed.md", "content": "x",
                      "expected_revision": 0}}}
response = service.invoke(event(slug, sub=sub, scopes=scopes, body=body))
print(json.dumps(response), flush=True)
time.sleep(60)
"""


def test_a_function_killed_right_after_its_response_loses_no_event(
    world: Any, cluster: Any
) -> None:
    slug, sub = member(world)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    process = subprocess.Popen(
        [sys.executable, "-c", KILLED_SCRIPT, cluster.runtime_url, slug, sub, " ".join(SCOPES)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    try:
        assert process.stdout is not None
        response = json.loads(process.stdout.readline())
        assert response["statusCode"] == 200  # the client has its answer
        assert process.stdout.readline().strip() == "publishing"  # mid-publish...
    finally:
        process.kill()  # ...the function dies
        process.wait(10)
    ((event_id, published_at),) = outbox(world.owner, slug)
    assert published_at is None

    sink = RecordingSink()
    deadline = time.monotonic() + 10  # until the server notices the dead connection
    while outbox(world.owner, slug)[0][1] is None and time.monotonic() < deadline:
        sweep_all(cluster, sink)
        time.sleep(0.1)
    mine = [json.loads(e["Detail"]) for e in sink.entries]
    mine = [d for d in mine if d["workspace"] == slug and d["operation"] == "create"]
    assert [d["event_id"] for d in mine] == [event_id]
    assert outbox(world.owner, slug)[0][1] is not None


def test_every_change_keeps_one_event_id_when_publishing_fails_and_is_retried(
    world: Any, database: Any, cluster: Any
) -> None:
    """Every third PutEvents fails after the response; the sweeper publishes those
    rows. Each change reaches the sink under exactly one event id, and the event ids
    are the outbox rows' ids."""
    slug, sub = member(world)
    sink = RecordingSink(fail_every=3)
    worker = Worker()
    service = service_with(database, sink, worker)
    for i in range(12):
        response = service.invoke(write_call(slug, sub, f"memory://workspace/notes/n{i}.md"))
        assert response["statusCode"] == 200
    assert worker.wait_idle(10)
    sweep_all(cluster, sink)
    rows = outbox(world.owner, slug)
    assert all(published for _, published in rows)
    events = [
        (json.loads(e["Detail"])["record_id"], json.loads(e["Detail"])["event_id"])
        for e in sink.entries
        if json.loads(e["Detail"])["workspace"] == slug
        and json.loads(e["Detail"])["operation"] == "create"
    ]
    ids_per_change: dict[str, set[int]] = {}
    for record_id, event_id in events:
        ids_per_change.setdefault(record_id, set()).add(event_id)
    assert len(ids_per_change) == 12
    assert all(len(ids) == 1 for ids in ids_per_change.values())
    assert sorted(i for ids in ids_per_change.values() for i in ids) == [i for i, _ in rows]
    assert Counter(e for _, e in events) == Counter({i: 1 for i, _ in rows})


# -- the runners themselves --------------------------------------------------------------


def test_a_full_worker_queue_leaves_work_to_the_sweeper() -> None:
    started, release = threading.Event(), threading.Event()
    ran: list[int] = []
    worker = Worker(capacity=2, linger_s=0)
    after = AfterResponse(worker)

    def job(i: int) -> None:
        started.set()
        release.wait(5)
        ran.append(i)

    for i in range(5):
        with after.invocation(f"r{i}"):
            after.submit(lambda i=i: job(i))
        if i == 0:
            assert started.wait(5)  # the first is running
    # One running, two queued, two dropped (their rows wait for the sweeper).
    assert worker.dropped == 2
    release.set()
    assert worker.wait_idle(5)
    assert ran == [0, 1, 2]


def test_jobs_run_once_the_invocation_has_returned() -> None:
    order: list[str] = []
    after = AfterResponse(Inline())
    with after.invocation("r"):
        after.submit(lambda: order.append("job"))
        order.append("handler")
    assert order == ["handler", "job"]
    after.submit(lambda: order.append("outside"))  # no invocation: at once
    assert order[-1] == "outside"


def test_a_failing_job_does_not_stop_the_others() -> None:
    ran: list[str] = []
    after = AfterResponse(Inline())

    def boom() -> None:
        raise RuntimeError("boom")

    with after.invocation():
        after.submit(boom)
        after.submit(lambda: ran.append("second"))
    assert ran == ["second"]


def test_waiting_changes_of_one_caller_are_published_together(world: Any, database: Any) -> None:
    """Locally, the changes whose publishing waits behind a slow one are claimed in
    one transaction and sent in one PutEvents (at most 10 entries a call)."""
    slug, sub = member(world)
    sink = RecordingSink()
    worker = Worker(linger_s=0)
    service = service_with(database, sink, worker)
    release = threading.Event()
    with service.after_response.invocation("blocker"):
        # Held until all six are queued, however slow the machine (set below).
        service.after_response.submit(lambda: release.wait(120))
    for i in range(6):
        service.invoke(write_call(slug, sub, f"memory://workspace/notes/b{i}.md"))
    release.set()
    assert worker.wait_idle(30)
    assert sink.calls == 1 and len(sink.entries) == 6
    assert all(published for _, published in outbox(world.owner, slug))


def test_the_local_worker_lets_a_batch_gather_briefly(world: Any, database: Any) -> None:
    slug, sub = member(world)
    sink = RecordingSink()
    worker = Worker(linger_s=2.0)
    service = service_with(database, sink, worker)
    for i in range(3):
        service.invoke(write_call(slug, sub, f"memory://workspace/notes/l{i}.md"))
    assert worker.wait_idle(10)
    assert sink.calls == 1 and len(sink.entries) == 3
