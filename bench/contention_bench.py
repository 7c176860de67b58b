"""What a busy second core costs one client's writes on the local stack.

Run as ``python -m bench.contention_bench`` (docs/performance.md, "What a busy core
costs the writes"). It starts a ``make dev`` stack as :mod:`bench.stack_bench` does
(the same ``--root``, ``--code-root`` and ``--records``), then, round after round,
times one client's one-line creates over HTTP (the stack benchmark's
``memory_write (create)``) beside each of these, in turn:

- ``quiet``: the embedding worker paused (``SIGSTOP``), nothing else running;
- ``spinner``: the worker paused and a busy loop of this benchmark's own at the
  worker's priority (nice 10; ``spinner-19`` at nice 19): a process that keeps one
  core busy with no memory traffic, no database session and no embedding;
- ``worker``: the embedding worker running, as ``make dev`` runs it, embedding each
  create after it (the stack benchmark's condition).

Each round also times reads beside nothing (worker paused), for the ratio the
issue's target names (create p95 ≤ 2× read p95). Between conditions the worker
catches up and the stack goes quiet. Results go to
``bench/results/contention-latest.json`` and a table to standard output.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .stack_bench import (
    PATH_ARGS,
    QUEUED,
    ROOT,
    Client,
    Stack,
    child_pids,
    load,
    percentiles,
    proc_stat,
    progress,
    read_targets,
    running_stack,
    wait_embedded,
    wait_quiet,
)

CONDITIONS = ("quiet", "spinner", "spinner-19", "worker")
SPIN = """import os, sys
os.nice(int(sys.argv[1]))
x = 1
while True:
    x = (x * 48271) % 2147483647
"""


def worker_pid(stack: Stack) -> int:
    """The stack's embedding worker (a child of the stack's process)."""
    assert stack.process is not None
    for pid in child_pids(stack.process.pid):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"memory_local.embedding_worker" in command:
            return pid
    raise RuntimeError("the stack runs no embedding worker (EMBEDDER=off?)")


@contextmanager
def beside(condition: str, worker: int) -> Iterator[None]:
    """The worker paused unless ``condition`` is ``worker``; a spinner if asked for."""
    spinner = None
    if condition != "worker":
        os.kill(worker, signal.SIGSTOP)
    if condition.startswith("spinner"):
        niceness = condition.partition("-")[2] or "10"
        spinner = subprocess.Popen([sys.executable, "-c", SPIN, niceness])
        time.sleep(0.5)  # let it start spinning before the first call
    try:
        yield
    finally:
        if spinner is not None:
            spinner.kill()  # our own child, by its PID
            spinner.wait()
        if condition != "worker":
            os.kill(worker, signal.SIGCONT)


def timed(calls: Iterator[tuple[str, dict[str, Any]]], client: Client) -> dict[str, Any]:
    samples: list[float] = []
    started = time.perf_counter()
    for tool, arguments in calls:
        began = time.perf_counter()
        client.call(tool, arguments)
        samples.append((time.perf_counter() - began) * 1000)
    wall = time.perf_counter() - started
    return {"calls": len(samples), "calls_per_s": len(samples) / wall, **percentiles(samples)}


def queued(stack: Stack) -> int:
    with stack.owner() as owner:
        row = owner.execute(QUEUED).fetchone()
    return int(row[0]) if row else 0


def paused(pid: int) -> bool:
    """Whether the process is stopped (state ``T``: the SIGSTOP took)."""
    return proc_stat(pid)[0] == "T"


def measure(stack: Stack, rounds: int, calls: int, seed: int) -> list[dict[str, Any]]:
    worker = worker_pid(stack)
    rng = random.Random(seed)
    client = Client(stack.url, stack.token)
    run = uuid.uuid4().hex[:8]
    targets = read_targets(stack, 200)
    if not targets:  # nothing loaded (a stack that held --records already): one note
        targets = [f"memory://workspace/notes/bench/{run}/read.md"]
        client.call(
            "memory_write", {"uri": targets[0], "content": "# Read\n", "expected_revision": 0}
        )
    made = 0
    results = []
    try:
        for index in range(rounds):
            entry: dict[str, Any] = {"round": index + 1}
            wait_embedded(stack)
            wait_quiet(stack)
            with beside("quiet", worker):
                reads = (("memory_read", {"uri": rng.choice(targets)}) for _ in range(calls))
                entry["read"] = timed(reads, client)
            for condition in CONDITIONS:
                wait_embedded(stack)
                wait_quiet(stack)

                def creates() -> Iterator[tuple[str, dict[str, Any]]]:
                    nonlocal made
                    for _ in range(calls):
                        made += 1
                        yield (
                            "memory_write",
                            {
                                "uri": f"memory://workspace/notes/bench/{run}/n{made:06d}.md",
                                "content": f"# Note {made}\n\nA note about item {made}.\n",
                                "expected_revision": 0,
                            },
                        )

                with beside(condition, worker):
                    created = timed(creates(), client)
                    created["queued_at_end"] = queued(stack)
                    created["worker_paused"] = paused(worker)
                created["p95_over_read_p95"] = created["p95"] / entry["read"]["p95"]
                entry[condition] = created
                progress(
                    f"round {index + 1} {condition:<10} p50 {created['p50']:5.2f} "
                    f"p95 {created['p95']:5.2f} ms, {created['calls_per_s']:.0f}/s, "
                    f"{created['p95_over_read_p95']:.2f}x read p95 {entry['read']['p95']:.2f}"
                )
            results.append(entry)
    finally:
        client.close()
    return results


def table(rounds: list[dict[str, Any]]) -> str:
    lines = [
        "| round | read p95 | " + " | ".join(f"{c} create p95 (×read)" for c in CONDITIONS) + " |",
        "|---" * (2 + len(CONDITIONS)) + "|",
    ]
    for entry in rounds:
        cells = [f"{entry[c]['p95']:.2f} ({entry[c]['p95_over_read_p95']:.2f})" for c in CONDITIONS]
        lines.append(
            f"| {entry['round']} | {entry['read']['p95']:.2f} | " + " | ".join(cells) + " |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=str(ROOT / ".tmp" / "stack-bench"))
    parser.add_argument("--code-root", default=str(ROOT))
    parser.add_argument("--port", type=int, default=8797)
    parser.add_argument("--records", type=int, default=1000, help="loaded first if fewer")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=500, help="per condition and round")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--output", default=str(ROOT / "bench" / "results" / "contention-latest.json")
    )
    args = parser.parse_args()
    # What running_stack reads from stack_bench's own arguments.
    args.endpoint_file, args.audit_tap, args.async_commit = None, False, False
    results: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "load_average": os.getloadavg(),
        "args": {
            key: os.path.relpath(value, ROOT) if key in PATH_ARGS and value else value
            for key, value in vars(args).items()
        },
        "cpus": os.cpu_count(),
    }
    with running_stack(args) as stack:
        load(stack, args.records, 4, args.seed, 5000)
        wait_embedded(stack)
        results["rounds"] = measure(stack, args.rounds, args.calls, args.seed)
    results["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(results, indent=2) + "\n")
    print(table(results["rounds"]))


if __name__ == "__main__":
    main()
