"""Timing the benchmarks share: calls in a loop, percentiles, a Lambda handler's cold
start in a fresh interpreter; and where the results go."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"

# Runs in a fresh interpreter: argv[1] is the handler's app.py, argv[2] the first
# event (JSON). The first request's code (between the two) sets ``response``.
_COLD_START_BEFORE = """
import json, sys, time
t0 = time.perf_counter()
import importlib.util
spec = importlib.util.spec_from_file_location({module!r}, sys.argv[1])
app = importlib.util.module_from_spec(spec); spec.loader.exec_module(app)
t1 = time.perf_counter()
"""
_COLD_START_AFTER = """
t2 = time.perf_counter()
assert {accepted}, response
print(json.dumps({{"init_ms": (t1 - t0) * 1000, "first_request_ms": (t2 - t1) * 1000}}))
"""


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)

    def at(p: float) -> float:
        return ordered[min(len(ordered) - 1, int(p * len(ordered)))]

    return {"p50": at(0.50), "p95": at(0.95), "p99": at(0.99)}


def durations_ms(call: Callable[[], Any], calls: int) -> list[float]:
    """How long each of ``calls`` calls of ``call`` took, in milliseconds."""
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def cold_starts(
    app: Path,
    first_event: Mapping[str, Any],
    env: Mapping[str, str],
    runs: int,
    *,
    module: str,
    request: str,
    accepted: str,
) -> dict[str, float]:
    """Medians over ``runs`` fresh interpreters that import ``app`` (``init_ms``) and
    answer ``first_event`` (``first_request_ms``), and the whole process
    (``process_ms``). ``request`` is the first request's code: it sets ``response``,
    which the expression ``accepted`` must hold true of."""
    script = (
        _COLD_START_BEFORE.format(module=module)
        + request.strip("\n")
        + _COLD_START_AFTER.format(accepted=accepted)
    )
    measured = []
    for _ in range(runs):
        started = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-c", script, str(app), json.dumps(first_event)],
            env=dict(env),
            capture_output=True,
            text=True,
            check=True,
        )
        total = (time.perf_counter() - started) * 1000
        measured.append({**json.loads(out.stdout.strip().splitlines()[-1]), "process_ms": total})
    return {
        key: statistics.median(run[key] for run in measured)
        for key in ("init_ms", "first_request_ms", "process_ms")
    }


def save_results(name: str, results: Mapping[str, Any]) -> None:
    """Prints ``results`` and writes them to ``bench/results/{name}.json``."""
    print(json.dumps(results, indent=2))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(results, indent=2) + "\n")
