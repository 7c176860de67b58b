"""End-to-end benchmark of the local stack over HTTP, with kept-alive clients.

Run as ``python -m bench.stack_bench`` (docs/performance.md, "The whole stack").
What it measures is what an MCP host sees: JSON-RPC ``tools/call`` requests over
HTTP/1.1 connections that stay open between calls (as MCP clients keep them),
through the API Gateway emulator, the Lambda handler and PostgreSQL of ``make dev``.

- **Stack.** By default it starts its own ``make dev`` stack in a child process
  (``python -m memory_local.dev`` with ``MEMORY_DEV_DIR`` under ``.tmp/``, kept
  between runs, so a loaded corpus is reused); ``--endpoint-file .dev/endpoint.json``
  measures a stack that is already running instead.
- **Records.** For each count of ``--records`` (ascending) the ``acme`` workspace is
  filled up to that many records *through the endpoint* (``memory_write`` creates,
  ``--load-clients`` at a time), so the audit outbox, the EventBridge emulation and
  its tap see every one of them, as a long-running ``make dev`` would. The loading
  rate is reported per window: a rate that falls as records accumulate is a slope.
- **Tools.** Then, per count, for 1, 4 and 16 concurrent clients (``--clients``),
  each tool is called for ``--seconds`` (or ``--calls`` calls, whichever comes
  first): p50/p95/p99 of the call as the client saw it, and calls per second.
- **Audit delay.** For the changes of each measurement, how long after its
  transaction began each audit event was marked published (``published_at -
  occurred_at`` in the outbox, both database clock), p50/p95/p99/max, and how many
  were still unpublished when the measurement ended.

Results go to ``bench/results/stack-latest.json`` and a Markdown table to standard
output; progress to standard error.
"""

from __future__ import annotations

import argparse
import functools
import http.client
import itertools
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg

from .corpus import TYPICAL_TERM, TextGenerator
from .paraphrase_set import load_paraphrase_set
from .recall_set import generate as recall_set

ROOT = Path(__file__).resolve().parents[1]
WORKSPACE = "acme"
WHO = "alice"  # every grant in acme (docs/contract.md §8)
LOAD_FOLDER = "bench/load"
PROTOCOL_VERSION = "2025-11-25"
TOOLS = (
    "memory_read",
    "memory_search",
    "memory_search (question)",
    "memory_list",
    "memory_brief",
    "memory_write (create)",
    "memory_write (replace)",
    "memory_remember",
    "memory_move",
    "memory_delete",
)
PINNED = 10  # pinned records made before each measurement (about 900 bytes each)
QUEUED = "SELECT count(*) FROM memory.embedding_queue"  # records waiting to be embedded
PATH_ARGS = {"endpoint_file", "root", "code_root", "output"}  # kept relative in results
CHANGES = {
    "memory_write (create)",
    "memory_write (replace)",
    "memory_remember",
    "memory_move",
    "memory_delete",
}


def percentiles(samples: list[float]) -> dict[str, float]:
    if not samples:
        return {"p50": float("nan"), "p95": float("nan"), "p99": float("nan")}
    ordered = sorted(samples)

    def at(p: float) -> float:
        return ordered[min(len(ordered) - 1, int(p * len(ordered)))]

    return {"p50": at(0.50), "p95": at(0.95), "p99": at(0.99)}


def progress(message: str) -> None:
    print(f"[stack-bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# -- one kept-alive MCP client ---------------------------------------------------------


class ToolError(Exception):
    pass


class Client:
    """One HTTP/1.1 connection kept open across calls, as an MCP host keeps it.

    Each request goes out in one write, with ``TCP_NODELAY``, so what is measured is
    the server's side of the connection (``http.client`` sends the headers and the
    body in two writes, which the client's own Nagle algorithm can hold back).
    """

    def __init__(self, url: str, token: str) -> None:
        parts = urlsplit(url)
        self.host, self.port, self.path = (
            parts.hostname or "127.0.0.1",
            parts.port or 80,
            parts.path,
        )
        self.token = token
        self.sock: socket.socket | None = None
        self.ids = itertools.count(1)

    def _connect(self) -> socket.socket:
        sock = socket.create_connection((self.host, self.port), timeout=60)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": next(self.ids),
                "method": "tools/call",
                "params": {"name": tool, "arguments": arguments},
            }
        ).encode()
        head = (
            f"POST {self.path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            f"Authorization: Bearer {self.token}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\n"
            f"MCP-Protocol-Version: {PROTOCOL_VERSION}\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode()
        for attempt in (1, 2):
            if self.sock is None:
                self.sock = self._connect()
            try:
                self.sock.sendall(head + body)
                # One response per request, nothing sent before the next request: a
                # fresh reader per response cannot read past its end.
                response = http.client.HTTPResponse(self.sock, method="POST")
                response.begin()
                payload = response.read()
                if response.will_close:
                    self.close()
                break
            except (ConnectionError, http.client.HTTPException):
                self.close()  # the server closed an idle connection: reconnect once
                if attempt == 2:
                    raise
        if response.status != 200:
            raise ToolError(f"HTTP {response.status}: {payload[:200]!r}")
        result = json.loads(payload)["result"]
        if result.get("isError"):
            raise ToolError(json.dumps(result["structuredContent"])[:300])
        return dict(result["structuredContent"])

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None


# -- the stack -------------------------------------------------------------------------


def proc_stat(pid: int) -> list[str]:
    """The fields of /proc/PID/stat after the command's name (state first, then the
    parent's PID, ...); OSError if the process is gone."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _cpu_of(pid: int) -> float:
    """User + system CPU seconds of a process (all its threads) so far; 0 if gone."""
    try:
        fields = proc_stat(pid)
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def child_pids(parent: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int(proc_stat(int(entry.name))[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == parent:
                found.append(int(entry.name))
    return found


@dataclass
class Stack:
    info: dict[str, Any]
    process: subprocess.Popen[bytes] | None = None
    root: Path | None = None

    def cpu(self) -> tuple[float, float, float] | None:
        """CPU seconds so far of the stack's process, of its PostgreSQL (postmaster
        and backends) and of its other child processes (the AWS emulation and the
        audit publisher); None for a stack this benchmark did not start (Linux only)."""
        if self.process is None or self.root is None:
            return None
        pidfile = self.root / "postgres" / "data" / "postmaster.pid"
        try:
            postmaster = int(pidfile.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None
        database = _cpu_of(postmaster) + sum(_cpu_of(pid) for pid in child_pids(postmaster))
        others = sum(_cpu_of(pid) for pid in child_pids(self.process.pid) if pid != postmaster)
        return _cpu_of(self.process.pid), database, others

    @property
    def url(self) -> str:
        return str(self.info["workspaces"][WORKSPACE])

    @property
    def token(self) -> str:
        return str(self.info["tokens"][WHO])

    def owner(self) -> psycopg.Connection[Any]:
        return psycopg.connect(self.info["database_url"], autocommit=True)


@contextmanager
def running_stack(args: argparse.Namespace) -> Iterator[Stack]:
    if args.endpoint_file:
        yield Stack(json.loads(Path(args.endpoint_file).read_text()))
        return
    root = Path(args.root).resolve()
    root.mkdir(parents=True, exist_ok=True)
    endpoint = root / "endpoint.json"
    endpoint.unlink(missing_ok=True)
    code = Path(args.code_root).resolve()
    env = {**os.environ, "MEMORY_DEV_DIR": str(root), "PORT": str(args.port)}
    env["MEMORY_AUDIT_TAP"] = "1" if args.audit_tap else ""
    env["MEMORY_DEV_ASYNC_COMMIT"] = "1" if args.async_commit else ""
    # The stack runs the code under --code-root (another checkout: before/after).
    env["PYTHONPATH"] = os.pathsep.join(
        [str(code / "layers" / "core"), str(code / "local"), str(code / "cli"), str(code)]
    )
    log = (root / "stack.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "memory_local.dev"], env=env, stdout=log, stderr=log, cwd=code
    )
    try:
        started = time.monotonic()
        while not endpoint.exists():
            if process.poll() is not None:
                raise RuntimeError(f"the stack exited; see {root / 'stack.log'}")
            if time.monotonic() - started > 300:
                raise RuntimeError("the stack did not start within 300 s")
            time.sleep(0.5)
        time.sleep(0.5)  # the file is written last; let the writer finish
        progress(f"stack ready in {time.monotonic() - started:.1f}s (pid {process.pid})")
        yield Stack(json.loads(endpoint.read_text()), process, root)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


# -- loading ----------------------------------------------------------------------------


def record_count(stack: Stack) -> int:
    with stack.owner() as owner:
        row = owner.execute(
            "SELECT count(*) FROM memory.memories m JOIN memory.workspaces w "
            "ON w.id = m.workspace_id WHERE w.slug = %s",
            (WORKSPACE,),
        ).fetchone()
    return int(row[0]) if row else 0


def load(stack: Stack, target: int, clients: int, seed: int, window: int) -> list[dict[str, Any]]:
    """Create records through the endpoint until the workspace holds ``target``."""
    have = record_count(stack)
    if have >= target:
        progress(f"{have:,} records already (target {target:,})")
        return []
    with stack.owner() as owner:
        row = owner.execute(
            "SELECT count(*) FROM memory.memories WHERE path LIKE %s", (f"{LOAD_FOLDER}/%",)
        ).fetchone()
    next_index = itertools.count(int(row[0]) if row else 0)
    remaining = target - have
    lock = threading.Lock()
    done = 0
    windows: list[dict[str, Any]] = []
    window_started = time.monotonic()
    window_latencies: list[float] = []
    errors = 0

    def worker(k: int) -> None:
        nonlocal done, window_started, window_latencies, errors
        client = Client(stack.url, stack.token)
        text = TextGenerator(random.Random(seed * 1000 + k))
        try:
            while True:
                with lock:
                    if done >= remaining:
                        return
                    index = next(next_index)
                document = text.document()
                started = time.perf_counter()
                try:
                    client.call(
                        "memory_write",
                        {
                            "uri": f"memory://workspace/notes/{LOAD_FOLDER}/r{index:07d}.md",
                            "content": document.body,
                            "expected_revision": 0,
                        },
                    )
                except ToolError:
                    with lock:
                        errors += 1  # a path taken by an earlier, interrupted load
                    continue
                elapsed = (time.perf_counter() - started) * 1000
                with lock:
                    done += 1
                    window_latencies.append(elapsed)
                    if done % window == 0 or done == remaining:
                        now = time.monotonic()
                        rate = len(window_latencies) / (now - window_started)
                        entry = {
                            "records": have + done,
                            "writes_per_s": rate,
                            **percentiles(window_latencies),
                        }
                        windows.append(entry)
                        progress(
                            f"loaded {have + done:,}/{target:,}: {rate:,.0f} writes/s, "
                            f"p50 {entry['p50']:.1f} ms, p95 {entry['p95']:.1f} ms"
                        )
                        window_started, window_latencies = now, []
        finally:
            client.close()

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        progress(f"{errors} creates found their path taken (skipped)")
    return windows


# -- measuring ---------------------------------------------------------------------------


@dataclass
class Plan:
    """Per client: the state a tool's calls need (its own records, revisions)."""

    run: str
    client: int
    read_targets: list[str]
    created: list[str] = field(default_factory=list)
    moved: list[str] = field(default_factory=list)
    replace_uri: str = ""
    replace_revision: int = 0
    remembered: int = 0
    counter: Iterator[int] = field(default_factory=itertools.count)


@functools.cache
def questions() -> list[str]:
    """Questions in natural language, as agents ask them: the recall and paraphrase
    sets' (bench/recall_set.py, bench/paraphrase_set.py), in their own order. Their
    words are everyday ones, so the corpus holds many of them; what they ask about is
    not in it, and only the cost of asking is measured."""
    return [q.text for q in (*recall_set().questions, *load_paraphrase_set().questions)]


def tool_call(name: str, arguments: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return name, arguments


def next_args(tool: str, plan: Plan, rng: random.Random) -> tuple[str, dict[str, Any]] | None:
    """The tool and arguments of the next call, or None when this client has no more."""
    n = next(plan.counter)
    prefix = f"memory://workspace/notes/bench/{plan.run}"
    if tool == "memory_read":  # a loaded note, or the client's own when none were loaded
        return tool_call(
            "memory_read", {"uri": rng.choice(plan.read_targets or [plan.replace_uri])}
        )
    if tool == "memory_search":
        return tool_call("memory_search", {"query": TYPICAL_TERM})
    if tool == "memory_search (question)":  # an agent's own words, a new one each call
        asked = questions()
        return tool_call("memory_search", {"query": asked[n % len(asked)]})
    if tool == "memory_list":
        return tool_call("memory_list", {"prefix": "memory://workspace/notes/", "limit": 20})
    if tool == "memory_brief":  # the default budget, what a session start asks for
        return tool_call("memory_brief", {})
    if tool == "memory_write (create)":
        uri = f"{prefix}/c{plan.client}/n{n:06d}.md"
        plan.created.append(uri)
        content = f"# Note {n}\n\nA note about item {n}.\n"
        return tool_call("memory_write", {"uri": uri, "content": content, "expected_revision": 0})
    if tool == "memory_write (replace)":
        content = f"# Status\n\nRevision {plan.replace_revision + 1} of the status note.\n"
        return tool_call(
            "memory_write",
            {
                "uri": plan.replace_uri,
                "content": content,
                "expected_revision": plan.replace_revision,
            },
        )
    if tool == "memory_remember":
        plan.remembered += 1
        return tool_call(
            "memory_remember",
            {
                # A new record every 50 facts keeps each record small.
                "uri": f"memory://workspace/memories/bench/{plan.run}/c{plan.client}/"
                f"facts-{plan.remembered // 50}.md",
                "fact": f"fact number {plan.remembered} for client {plan.client}",
                "idempotency_key": f"{plan.run}-{plan.client}-{plan.remembered}",
            },
        )
    if tool == "memory_move":
        if not plan.created:
            return None
        uri = plan.created.pop()
        folder, _, name = uri.rpartition("/")
        moved = f"{folder}/moved-{name}"
        plan.moved.append(moved)
        return tool_call("memory_move", {"uri": uri, "new_uri": moved, "expected_revision": 1})
    if tool == "memory_delete":
        if not plan.moved:
            return None
        return tool_call("memory_delete", {"uri": plan.moved.pop(), "expected_revision": 2})
    raise ValueError(tool)


def run_tool(
    tool: str, plans: list[Plan], connections: list[Client], seconds: float, calls: int
) -> tuple[list[float], list[str], float]:
    """Every client calls ``tool`` until its share of ``calls`` or ``seconds`` is spent;
    the latencies (ms), the failures and the wall time."""
    latencies: list[list[float]] = [[] for _ in plans]
    failures: list[str] = []
    stop_at = time.monotonic() + seconds
    per_client = max(1, calls // len(plans))

    def worker(k: int) -> None:
        rng = random.Random(k)
        plan, client = plans[k], connections[k]
        for _ in range(per_client):
            if time.monotonic() >= stop_at:
                return
            nxt = next_args(tool, plan, rng)
            if nxt is None:
                return
            name, arguments = nxt
            started = time.perf_counter()
            try:
                result = client.call(name, arguments)
            except ToolError as error:
                failures.append(f"{tool}: {error}")
                continue
            latencies[k].append((time.perf_counter() - started) * 1000)
            if tool == "memory_write (replace)":
                plan.replace_revision = int(result["revision"])

    started = time.monotonic()
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(len(plans))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [x for per in latencies for x in per], failures, time.monotonic() - started


def measure(
    stack: Stack, clients: int, seconds: float, calls: int, read_targets: list[str]
) -> dict[str, Any]:
    run = uuid.uuid4().hex[:8]
    plans = [Plan(run, k, read_targets) for k in range(clients)]
    connections = [Client(stack.url, stack.token) for _ in range(clients)]
    # Untimed set-up: the record each client replaces, and warm connections.
    for plan, client in zip(plans, connections, strict=True):
        plan.replace_uri = f"memory://workspace/notes/bench/{run}/c{plan.client}/status.md"
        first = {"uri": plan.replace_uri, "content": "# Status\n", "expected_revision": 0}
        plan.replace_revision = int(client.call("memory_write", first)["revision"])
        client.call("memory_read", {"uri": plan.replace_uri})
    for i in range(PINNED):  # what a briefing leads with: a few pinned facts
        pinned = {
            "uri": f"memory://workspace/memories/bench/{run}/pinned-{i}.md",
            "content": f"# Pinned {i}\n\n" + f"Standing fact {i} of the team. " * 30,
            "expected_revision": 0,
            "pinned": True,
        }
        connections[0].call("memory_write", pinned)
    # The set-up's writes are embedded and published before the first tool is timed:
    # about 0.6 s of the embedding worker's CPU, which fell on the reads before.
    results: dict[str, Any] = {"settled": {**wait_embedded(stack), **wait_quiet(stack)}}
    for tool in TOOLS:
        began_at = time.time()
        cpu_before = stack.cpu()
        samples, failures, wall = run_tool(tool, plans, connections, seconds, calls)
        entry: dict[str, Any] = {
            "calls": len(samples),
            "calls_per_s": len(samples) / wall if wall else 0.0,
            **percentiles(samples),
            "errors": len(failures),
        }
        if tool in CHANGES:
            entry["audit"] = audit_delay(stack, began_at)  # waits for the last events
        cpu_after = stack.cpu()
        if cpu_before and cpu_after and samples:
            # Per call, publishing after the response included (for changes).
            entry["server_cpu_ms"] = (cpu_after[0] - cpu_before[0]) * 1000 / len(samples)
            entry["database_cpu_ms"] = (cpu_after[1] - cpu_before[1]) * 1000 / len(samples)
            entry["aws_cpu_ms"] = (cpu_after[2] - cpu_before[2]) * 1000 / len(samples)
        if failures:
            entry["first_error"] = failures[0]
        results[tool] = entry
        progress(
            f"{clients:>2} clients {tool:<24} p50 {entry['p50']:6.2f} p95 {entry['p95']:6.2f} "
            f"p99 {entry['p99']:6.2f} ms  {entry['calls_per_s']:7.1f}/s  n={entry['calls']}"
            + (f"  errors {len(failures)}" if failures else "")
        )
    for client in connections:
        client.close()
    return results


def audit_delay(stack: Stack, since_epoch: float, settle_s: float = 3.0) -> dict[str, Any]:
    """How late the audit events of changes since ``since_epoch`` were published.

    Waits up to ``settle_s`` for the last ones (publishing follows the response).
    """
    query = (
        "SELECT extract(epoch FROM published_at - occurred_at) * 1000 "
        "FROM memory.audit_outbox WHERE occurred_at >= to_timestamp(%s)"
    )
    deadline = time.monotonic() + settle_s
    with stack.owner() as owner:
        while True:
            rows = [r[0] for r in owner.execute(query, (since_epoch,)).fetchall()]
            pending = sum(1 for r in rows if r is None)
            if not pending or time.monotonic() > deadline:
                break
            time.sleep(0.2)
    delays = [float(r) for r in rows if r is not None]
    return {
        "events": len(rows),
        "unpublished": pending,
        **{f"delay_{k}_ms": v for k, v in percentiles(delays).items()},
        "delay_max_ms": max(delays) if delays else float("nan"),
    }


def wait_embedded(
    stack: Stack, timeout_s: float = 900.0, stalled_s: float = 10.0
) -> dict[str, Any]:
    """Wait until the embedding queue is empty (hybrid recall on: the stack's embedding
    worker drains it after the load), so the measurements search every record by
    meaning as well and no backlog competes with them; or until it has not shrunk
    for ``stalled_s`` (a stack with no embedder, ``EMBEDDER=off``, never drains it).
    What waited and for how long."""
    started = time.monotonic()
    with stack.owner() as owner:
        try:
            first = int(owner.execute(QUEUED).fetchone()[0])  # type: ignore[index]
        except psycopg.errors.UndefinedTable:
            return {"queued": None}
        left = first
        moved = started
        while left and time.monotonic() - started < timeout_s:
            if time.monotonic() - moved > stalled_s:
                break
            time.sleep(0.5)
            now = int(owner.execute(QUEUED).fetchone()[0])  # type: ignore[index]
            if now < left:
                moved = time.monotonic()
            left = now
    waited = time.monotonic() - started
    if first:
        progress(f"embedded {first - left:,} queued records in {waited:.1f}s ({left:,} left)")
    return {"queued": first, "left": left, "waited_s": round(waited, 1)}


def wait_quiet(stack: Stack, timeout_s: float = 60.0, window_s: float = 0.5) -> dict[str, Any]:
    """Wait until the stack's processes together use under a tenth of a core over
    ``window_s`` (the embedding worker and the audit publisher finish what earlier
    writes left them), so that the next tool measured does not share the machine
    with them. How long it took."""
    started = time.monotonic()
    before = stack.cpu()
    if before is None:
        return {"quiet_after_s": None}
    while time.monotonic() - started < timeout_s:
        time.sleep(window_s)
        now = stack.cpu()
        if now is None or sum(now) - sum(before) < 0.1 * window_s:
            break
        before = now
    waited = round(time.monotonic() - started, 1)
    progress(f"the stack was quiet after {waited}s")
    return {"quiet_after_s": waited}


def read_targets(stack: Stack, count: int) -> list[str]:
    with stack.owner() as owner:
        rows = owner.execute(
            "SELECT path FROM memory.memories WHERE path LIKE %s ORDER BY random() LIMIT %s",
            (f"{LOAD_FOLDER}/%", count),
        ).fetchall()
    return [f"memory://workspace/notes/{path}" for (path,) in rows]


# -- report ------------------------------------------------------------------------------


def table(results: dict[str, Any]) -> str:
    lines = []
    for records, by_clients in results["measurements"].items():
        lines.append(f"\n### {int(records):,} records\n")
        lines.append(
            "| tool | clients | p50 ms | p95 ms | p99 ms | calls/s | audit delay p50 / p95 ms "
            "| server CPU ms/call | database CPU ms/call | AWS emulation + publisher CPU ms/call |"
        )
        lines.append("|---|---|---|---|---|---|---|---|---|---|")
        for tool in TOOLS:
            for clients, by_tool in by_clients.items():
                entry = by_tool[tool]
                audit = entry.get("audit")
                delay = (
                    f"{audit['delay_p50_ms']:.0f} / {audit['delay_p95_ms']:.0f}"
                    + (f" ({audit['unpublished']} left)" if audit["unpublished"] else "")
                    if audit
                    else ""
                )
                server = entry.get("server_cpu_ms", float("nan"))
                database = entry.get("database_cpu_ms", float("nan"))
                aws = entry.get("aws_cpu_ms", float("nan"))
                lines.append(
                    f"| {tool} | {clients} | {entry['p50']:.1f} | {entry['p95']:.1f} | "
                    f"{entry['p99']:.1f} | {entry['calls_per_s']:.0f} | {delay} | "
                    f"{server:.1f} | {database:.1f} | {aws:.1f} |"
                )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--endpoint-file", help="measure a running stack (.dev/endpoint.json)")
    parser.add_argument("--root", default=str(ROOT / ".tmp" / "stack-bench"))
    parser.add_argument(
        "--code-root", default=str(ROOT), help="the checkout whose stack is measured"
    )
    parser.add_argument(
        "--audit-tap", action="store_true", help="subscribe the SQS tap (MEMORY_AUDIT_TAP=1)"
    )
    parser.add_argument(
        "--async-commit",
        action="store_true",
        help="commits do not wait for the WAL flush (MEMORY_DEV_ASYNC_COMMIT=1)",
    )
    parser.add_argument("--port", type=int, default=8797)
    parser.add_argument("--records", default="1000,100000")
    parser.add_argument("--clients", default="1,4,16")
    parser.add_argument("--seconds", type=float, default=10.0, help="per tool and concurrency")
    parser.add_argument("--calls", type=int, default=2000, help="per tool and concurrency")
    parser.add_argument("--load-clients", type=int, default=4)
    parser.add_argument("--load-window", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--output", default=str(ROOT / "bench" / "results" / "stack-latest.json"))
    args = parser.parse_args()

    counts = sorted(int(c) for c in args.records.split(","))
    concurrency = [int(c) for c in args.clients.split(",")]
    recorded = {
        key: os.path.relpath(value, ROOT) if key in PATH_ARGS and value else value
        for key, value in vars(args).items()
    }
    results: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "load_average": os.getloadavg(),
        "args": recorded,
        "cpus": os.cpu_count(),
        "load": {},
        "measurements": {},
    }
    with running_stack(args) as stack:
        for count in counts:
            results["load"][count] = load(
                stack, count, args.load_clients, args.seed, args.load_window
            )
            results.setdefault("embedding_wait", {})[count] = wait_embedded(stack)
            targets = read_targets(stack, 200)
            results["measurements"][count] = {}
            for clients in concurrency:
                results["measurements"][count][clients] = measure(
                    stack, clients, args.seconds, args.calls, targets
                )
            results["records_after"] = record_count(stack)
    results["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    results["load_average_after"] = os.getloadavg()
    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(results, indent=2) + "\n")
    print(table(results))
    loads = [w for windows in results["load"].values() for w in windows]
    if loads:
        rates = [w["writes_per_s"] for w in loads]
        print(
            f"\nloading: {len(loads)} windows, writes/s first {rates[0]:.0f}, "
            f"last {rates[-1]:.0f}, median {statistics.median(rates):.0f}"
        )


if __name__ == "__main__":
    main()
