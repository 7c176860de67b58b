"""The benchmark commands the docs give still run (figures are not checked here:
targets live in the benchmarks themselves, docs/performance.md)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from memory_local.postgres import free_port

from bench.contention_bench import CONDITIONS
from bench.stack_bench import TOOLS

ROOT = Path(__file__).resolve().parents[2]


def run_bench(module: str, output: Path, *args: str) -> dict[str, Any]:
    """``python -m bench.<module> ARGS --output OUTPUT`` on its own embedded PostgreSQL
    (DATABASE_URL left out); its JSON report."""
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    done = subprocess.run(
        [sys.executable, "-m", f"bench.{module}", *args, "--output", str(output)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return dict(json.loads(output.read_text()))


def test_tool_durations_runs_every_tool_through_the_handler(tmp_path: Path) -> None:
    results = run_bench("tool_durations", tmp_path / "tools.json", "--records", "5", "--calls", "3")
    tools = set(TOOLS)  # the tools the stack bench times, named alike
    assert tools <= set(results), sorted(results)
    for tool in tools:
        assert results[tool]["wall"]["p50"] > 0, tool
    for change in ("memory_write (create)", "memory_remember", "memory_delete"):
        assert results[change]["publish_wall"]["p50"] > 0, change


def test_provenance_bench_times_both_forms_of_each_statement(tmp_path: Path) -> None:
    report = run_bench(
        "provenance_bench",
        tmp_path / "provenance.json",
        *("--records", "4", "--iterations", "6", "--warmup", "2"),
    )
    for statement in ("read_by_path", "history"):
        assert {form: r["n"] for form, r in report["results"][statement].items()} == {
            "before": 6,
            "after": 6,
        }
        after = "\n".join(report["plans"][statement]["after"])
        assert "principal_provenance" in after
        assert "principal_provenance" not in "\n".join(report["plans"][statement]["before"])


def test_hybrid_bench_writes_its_distractors_beside_each_set(tmp_path: Path) -> None:
    report = run_bench(
        "hybrid_bench",
        tmp_path / "hybrid.json",
        *("--questions", "4", "--distractors", "12", "--weights", "0.3"),
    )
    assert report["command"].endswith("--distractors 12")
    assert [run["set"] for run in report["runs"]] == ["recall", "paraphrase"]
    for run in report["runs"]:
        # Each set's records and the 12 corpus notes beside them, all embedded.
        assert run["distractors"] == 12
        assert run["records_embedded"] == run["memories"] + 12, run
        assert run["left_in_queue"] == 0
        assert set(run["systems"]) == {"lexical", "hybrid w=0.3"}


def test_contention_bench_pauses_the_worker_in_every_condition_but_its_own(
    tmp_path: Path,
) -> None:
    # Its make dev under the repository's .tmp, as the test database: the embedded
    # server may run as another user, who cannot enter pytest's folders.
    stack = ROOT / ".tmp" / f"contention-bench-{os.getpid()}"
    shutil.rmtree(stack, ignore_errors=True)
    try:
        report = run_bench(
            "contention_bench",
            tmp_path / "contention.json",
            *("--root", str(stack), "--port", str(free_port())),
            *("--records", "3", "--rounds", "1", "--calls", "4"),
        )
    finally:
        shutil.rmtree(stack, ignore_errors=True)
    (measured,) = report["rounds"]
    assert measured["read"]["calls"] == 4
    for condition in CONDITIONS:
        assert measured[condition]["calls"] == 4, condition
        assert measured[condition]["worker_paused"] is (condition != "worker"), condition
        if condition != "worker":  # nothing embedded them while it was paused
            assert measured[condition]["queued_at_end"] == 4, condition
    assert report["args"]["root"] == os.path.relpath(stack, ROOT)
