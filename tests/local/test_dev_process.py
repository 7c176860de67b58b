"""`make dev` as a process: it stops on SIGTERM, however many arrive, and leaves no
child behind (its PostgreSQL, its AWS emulation and its audit publisher)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from memory_local.postgres import free_port

from bench.stack_bench import child_pids

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads child processes from /proc")
def test_sigterm_stops_the_stack_and_its_children() -> None:
    # Under the repository's .tmp, as the test database: the embedded server may run
    # as another user, who must be able to reach its data directory.
    tmp_path = ROOT / ".tmp" / f"dev-process-{os.getpid()}"
    shutil.rmtree(tmp_path, ignore_errors=True)
    tmp_path.mkdir(parents=True)
    env = {**os.environ, "MEMORY_DEV_DIR": str(tmp_path), "PORT": str(free_port())}
    env.pop("DATABASE_URL", None)  # its own embedded PostgreSQL, as `make dev` runs
    log = (tmp_path / "dev.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "memory_local.dev"], env=env, stdout=log, stderr=log
    )
    try:
        give_up = time.monotonic() + 180
        while not (tmp_path / "endpoint.json").exists():
            assert process.poll() is None, (tmp_path / "dev.log").read_text()
            assert time.monotonic() < give_up, "the stack did not start"
            time.sleep(0.2)
        postmaster = int((tmp_path / "postgres" / "data" / "postmaster.pid").read_text().split()[0])
        children = child_pids(process.pid)
        # PostgreSQL, moto and the audit publisher (memory_local.publishing)
        assert postmaster in children and len(children) >= 3

        # Several signals in a row, as an impatient supervisor sends them.
        for _ in range(3):
            process.send_signal(signal.SIGTERM)
            time.sleep(0.02)
        assert process.wait(60) == 0, (tmp_path / "dev.log").read_text()
        give_up = time.monotonic() + 10
        while any(_alive(pid) for pid in children) and time.monotonic() < give_up:
            time.sleep(0.1)
        assert not [pid for pid in children if _alive(pid)]
        assert "[dev] stopping" in (tmp_path / "dev.log").read_text()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        log.close()
        shutil.rmtree(tmp_path, ignore_errors=True)
