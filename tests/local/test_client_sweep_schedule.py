"""``make dev`` runs the registered clients' sweep on a schedule, as the template's
``SweepClients`` does in AWS (issue 23, item 3: unused clients go locally too). What the
sweep does is ``tests/signin/`` and ``tests/e2e/test_registration_limits.py``; here, that
the stack's sweeper thread calls it, through the management function's own event, and
keeps calling it whatever fails."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from memory_local import dev
from memory_local.dev import DevStack
from memory_server.domain.limits import CLIENT_SWEEP_EVERY_S


class Management:
    """The management function's entry point; its first sweep fails."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.swept_again = threading.Event()

    def route(self, event: dict[str, Any], context: Any = None) -> dict[str, Any]:
        self.events.append(event)
        if len(self.events) == 1:
            raise RuntimeError("the table is throttled")
        self.swept_again.set()
        return {"removed": [], "kept": 0, "live": 0}


def test_the_sweeper_thread_runs_the_client_sweep_and_survives_failures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert DevStack(tmp_path).client_sweep_every_s == CLIENT_SWEEP_EVERY_S
    monkeypatch.setattr(dev, "SWEEP_EVERY_S", 0.01)
    monkeypatch.setattr(dev, "PURGE_EVERY_S", 0.01)  # the loop's period: not 5 s a run
    stack = DevStack(tmp_path, client_sweep_every_s=0.0)
    management = Management()
    stack.management = management  # type: ignore[assignment]
    # No database: the audit sweep fails on every run, and must not stop this one.
    nowhere = "postgresql://127.0.0.1:1/none?connect_timeout=2"
    thread = threading.Thread(target=stack._sweeper, args=(nowhere, None), daemon=True)
    thread.start()
    try:
        assert management.swept_again.wait(30), "the client sweep did not run again"
    finally:
        stack._stop_sweeper.set()
        thread.join(10)
    assert not thread.is_alive()
    assert management.events[:2] == [{"action": "sweep_clients"}] * 2
