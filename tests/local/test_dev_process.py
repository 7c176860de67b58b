"""`make dev` as a process: SIGINT and SIGTERM stop it, however many arrive and in
whatever order, and leave no child behind (its PostgreSQL, its AWS emulation and its
audit publisher); and a `make dev` that finds a PostgreSQL an earlier run left
running on its data folder stops that one and starts."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from memory_local.postgres import free_port

from bench.stack_bench import child_pids

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads processes from /proc"),
]
ROOT = Path(__file__).resolve().parents[2]
START_S = 180.0


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


class Dev:
    """One `python -m memory_local.dev` (what `make dev` runs) on a data folder."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.log_path = root / "dev.log"
        self.env = {**os.environ, "MEMORY_DEV_DIR": str(root), "PORT": str(free_port())}
        self.env.pop("DATABASE_URL", None)  # its own embedded PostgreSQL, as `make dev` runs
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> subprocess.Popen[bytes]:
        (self.root / "endpoint.json").unlink(missing_ok=True)  # written when ready
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "memory_local.dev"], env=self.env, stdout=log, stderr=log
            )
        give_up = time.monotonic() + START_S
        while not (self.root / "endpoint.json").exists():
            assert self.process.poll() is None, self.log()
            assert time.monotonic() < give_up, "the stack did not start"
            time.sleep(0.2)
        return self.process

    def postmaster(self) -> int:
        return int((self.root / "postgres" / "data" / "postmaster.pid").read_text().split()[0])

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


@pytest.fixture
def dev() -> Iterator[Dev]:
    # Under the repository's .tmp, as the test database: the embedded server may run
    # as another user, who must be able to reach its data directory.
    root = ROOT / ".tmp" / f"dev-process-{os.getpid()}"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    stack = Dev(root)
    left: list[int] = []
    try:
        yield stack
    finally:
        if stack.process is not None and stack.process.poll() is None:
            stack.process.kill()
            stack.process.wait()
        pid_file = root / "postgres" / "data" / "postmaster.pid"
        if pid_file.exists():  # a failed test must not leave its PostgreSQL behind
            with_pid = stack.postmaster()
            if _alive(with_pid):
                left.append(with_pid)
                os.kill(with_pid, signal.SIGINT)
                give_up = time.monotonic() + 30
                while _alive(with_pid) and time.monotonic() < give_up:
                    time.sleep(0.1)
        shutil.rmtree(root, ignore_errors=True)


def _stops_cleanly(dev: Dev, signals: tuple[signal.Signals, ...]) -> None:
    """Send ``signals`` back to back; the stack must exit 0 with no child left."""
    process = dev.process
    assert process is not None
    postmaster = dev.postmaster()
    children = child_pids(process.pid)
    # PostgreSQL, moto and the audit publisher (memory_local.publishing)
    assert postmaster in children and len(children) >= 3
    for sent in signals:
        process.send_signal(sent)
    assert process.wait(60) == 0, dev.log()
    give_up = time.monotonic() + 10
    while any(_alive(pid) for pid in children) and time.monotonic() < give_up:
        time.sleep(0.1)
    assert not [pid for pid in children if _alive(pid)], dev.log()
    assert "[dev] stopping" in dev.log()


INT, TERM = signal.SIGINT, signal.SIGTERM


@pytest.mark.parametrize(
    "signals",
    [(INT, TERM), (TERM, INT), (INT, INT, INT), (TERM, INT, TERM)],
    ids=lambda s: "+".join(x.name for x in s),
)
def test_signals_in_quick_succession_stop_everything(
    dev: Dev, signals: tuple[signal.Signals, ...]
) -> None:
    """A terminal's Ctrl-C and a supervisor's SIGTERM arrive together: the first stops
    the stack and no later one cuts that stop short (it used to leave PostgreSQL
    running in about one stop in three)."""
    dev.start()
    _stops_cleanly(dev, signals)


def test_a_stack_started_over_a_stale_postmaster_comes_up(dev: Dev) -> None:
    """`make dev` killed outright (nothing can stop its children then) leaves its
    PostgreSQL running; the next `make dev` on the same folder stops that one and
    starts, instead of failing with "PostgreSQL exited while starting"."""
    first = dev.start()
    stale = dev.postmaster()
    first.kill()
    first.wait()
    assert _alive(stale)  # orphaned, still holding the data folder

    dev.start()
    assert not _alive(stale)
    assert dev.postmaster() != stale
    assert f"stopped a PostgreSQL an earlier run left running (pid {stale})" in dev.log()
    _stops_cleanly(dev, (TERM,))
