"""How long the Lambda handler takes per tool: the input of docs/cost.md.

Run as ``python -m bench.tool_durations``. In process, warm: each tool is called
through ``McpService.invoke`` with an API Gateway v2 event (caller resolution,
JSON-RPC, validation, the store, the response), against an embedded PostgreSQL with
durable commits (its own, under ``.tmp/tool-durations``, unless ``DATABASE_URL``).
For each tool: wall time and CPU time (of the calling thread) per call, p50 and p95,
and, for changes, the publishing that follows the response (one outbox claim and
mark, with an event sink that answers at once: ``PutEvents`` itself is not
measured here).

Lambda gives a 512 MB function about 0.29 of a vCPU (a full one at 1,769 MB), so
the CPU part of a call takes about 3.5 times as long there; the rest (waiting for
PostgreSQL) does not scale with memory. docs/cost.md turns these figures into
billed durations.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memory_local.postgres import admin_server
from memory_server.data.pool import Database
from memory_server.edge.service import McpService, Settings
from memory_server.operations.after_response import AfterResponse

from .corpus import TYPICAL_TERM, TextGenerator
from .endpoint_bench import bench_workspace, event
from .stack_bench import questions

ROOT = Path(__file__).resolve().parents[1]


class Events:
    """Stands in for the EventBridge client: accepts every entry at once."""

    def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        return {"Entries": [{"EventId": "x"} for _ in Entries]}


def tool_call(slug: str, subject: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """An API Gateway event calling ``tool``, as the Lambda authorizer passes it on."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    return event(slug, subject, body)


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50": ordered[len(ordered) // 2],
        "p95": ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))],
    }


class Publishing:
    """Keeps each invocation's post-response jobs; :meth:`run` runs and times them
    after the call has been timed (as Lambda's post-invoke phase follows it)."""

    def __init__(self) -> None:
        self.pending: list[Callable[[], None]] = []
        self.wall: list[float] = []
        self.cpu: list[float] = []

    def hand_off(self, request_id: str | None, jobs: list[Callable[[], None]]) -> None:
        self.pending += jobs

    def run(self, timed: bool = True) -> None:
        jobs, self.pending = self.pending, []
        for job in jobs:
            wall, cpu = time.perf_counter(), time.thread_time()
            job()
            if timed:
                self.cpu.append((time.thread_time() - cpu) * 1000)
                self.wall.append((time.perf_counter() - wall) * 1000)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1000)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--output", default=str(ROOT / "bench" / "results" / "tools.json"))
    args = parser.parse_args()

    with admin_server(ROOT / ".tmp" / "tool-durations", durable=True) as (admin_url, _):
        roles, slug, subject = bench_workspace(admin_url)
        db = Database(roles.runtime_url, max_size=2)
        publishing = Publishing()
        settings = Settings(roles.runtime_url, b"b" * 32, "https://issuer.example", audit_bus="b")
        service = McpService(settings, db, Events(), after_response=AfterResponse(publishing))

        def call(tool: str, **arguments: Any) -> dict[str, Any]:
            response = service.invoke(tool_call(slug, subject, tool, arguments))
            result = json.loads(response["body"])["result"]
            assert not result["isError"], result
            return dict(result["structuredContent"])

        text = TextGenerator(random.Random(7))
        for i in range(args.records):
            call(
                "memory_write",
                uri=f"memory://workspace/notes/seed/r{i:06d}.md",
                content=text.document().body,
                expected_revision=0,
            )
            publishing.run(timed=False)

        counter = itertools.count()
        created: list[str] = []
        moved: list[str] = []
        status = f"memory://workspace/notes/bench/status-{uuid.uuid4().hex[:6]}.md"
        revision = [call("memory_write", uri=status, content="# s\n", expected_revision=0)]
        reads = [
            f"memory://workspace/notes/seed/r{i:06d}.md" for i in range(min(200, args.records))
        ]

        def create() -> None:
            uri = f"memory://workspace/notes/bench/n{next(counter):06d}.md"
            created.append(uri)
            call("memory_write", uri=uri, content="# Note\n\nText.\n", expected_revision=0)

        def replace() -> None:
            made = call(
                "memory_write",
                uri=status,
                content=f"# s\n{next(counter)}\n",
                expected_revision=revision[-1]["revision"],
            )
            revision.append(made)

        def move() -> None:
            uri = created.pop()
            target = uri.replace("/bench/n", "/bench/moved-n")
            moved.append(target)
            call("memory_move", uri=uri, new_uri=target, expected_revision=1)

        asked = itertools.cycle(questions())
        n = next(counter)
        cases: dict[str, Callable[[], Any]] = {
            "memory_read": lambda: call("memory_read", uri=random.choice(reads)),
            "memory_search": lambda: call("memory_search", query=TYPICAL_TERM),
            "memory_search (question)": lambda: call("memory_search", query=next(asked)),
            "memory_list": lambda: call(
                "memory_list", prefix="memory://workspace/notes/", limit=20
            ),
            "memory_brief": lambda: call("memory_brief"),
            "memory_write (create)": create,
            "memory_write (replace)": replace,
            "memory_remember": lambda: call(
                "memory_remember",
                uri=f"memory://workspace/memories/bench/facts-{n}-{next(counter) // 50}.md",
                fact=f"fact {next(counter)}",
                idempotency_key=f"k-{uuid.uuid4().hex}",
            ),
            "memory_move": move,
            "memory_delete": lambda: call("memory_delete", uri=moved.pop(), expected_revision=2),
        }
        results: dict[str, Any] = {"records": args.records, "calls": args.calls}
        for tool, run in cases.items():
            if tool not in ("memory_move", "memory_delete"):  # those use up records
                for _ in range(20):
                    run()
                    publishing.run(timed=False)
            publishing.wall.clear()
            publishing.cpu.clear()
            wall, cpu = [], []
            for _ in range(args.calls):
                started, began = time.perf_counter(), time.thread_time()
                run()
                cpu.append((time.thread_time() - began) * 1000)
                wall.append((time.perf_counter() - started) * 1000)
                publishing.run()  # after the response, as the post-invoke phase
            entry = {"wall": percentiles(wall), "cpu": percentiles(cpu)}
            if publishing.wall:
                entry["publish_wall"] = percentiles(publishing.wall)
                entry["publish_cpu"] = percentiles(publishing.cpu)
            results[tool] = entry
            print(
                f"{tool:<24} wall p50 {entry['wall']['p50']:6.2f} p95 {entry['wall']['p95']:6.2f}"
                f"  cpu p50 {entry['cpu']['p50']:6.2f}"
                + (
                    f"  publish wall p50 {entry['publish_wall']['p50']:5.2f}"
                    f" cpu {entry['publish_cpu']['p50']:5.2f}"
                    if publishing.wall
                    else ""
                ),
                flush=True,
            )
        db.close()
    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
