"""``make dev``'s embedding, in a process of its own at a lower priority.

Deployed, each invocation embeds what it changed after its response, while its
execution environment serves nothing else. ``make dev`` serves every request from
one interpreter: a model run there (6-50 ms of CPU a batch) holds the interpreter
lock and one of the two cores while the next requests wait, and it was most of a
write's and a search's p95 over HTTP (docs/performance.md, "Hybrid recall").

:class:`EmbeddingWorker` starts this module as a child: it backfills first (every
record not in the model's space, with progress on the console), then embeds the
queue as the owner role whenever it holds records, checking it every
``POLL_S`` (so a record is found by meaning well within a second of its write),
batches of ``EMBED_BATCH``. The claim and the store are one autocommit statement each,
so no lock waits for this lower-priority process to be scheduled, and their commits
do not wait for the WAL flush: a vector lost in a crash leaves its record queued, and
it is embedded again. The handler then only embeds questions. The child ends when its
standard input closes, so a ``make dev`` that dies leaves no worker behind.

On two cores it embeds about 100 to 125 one-line notes a second, so a faster burst of
writes leaves it behind until the burst ends; while it is (:class:`Backlog`), the
console says every ``BACKLOG_REPORT_S`` how many records wait, and then that it
caught up.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import memory_server
import psycopg
from memory_server.data import embeddings as embedding_data
from memory_server.domain.limits import EMBED_BATCH
from memory_server.edge.runtime import embedder_from_env
from memory_server.operations.embeddings import backfill, embed_queued, statement_transactions
from psycopg.conninfo import make_conninfo

# How often an idle worker looks at the queue: well under the second the issue allows
# between a write and its vector, and a cheap indexed query when nothing waits.
POLL_S = 0.1
# The worker's commits do not wait for the WAL flush (see above).
SESSION_OPTIONS = "-c synchronous_commit=off"
# How often a worker behind a burst of writes says how many records wait.
BACKLOG_REPORT_S = 5.0


class Backlog:
    """Whether the worker is behind, from the size of its batches: a full one means
    more were waiting when it claimed. After ``every_s`` of full batches it is due to
    say how many wait, and again every ``every_s``; the first batch that is not full
    after that is due to say it caught up. A burst shorter than ``every_s`` says
    nothing."""

    def __init__(self, every_s: float = BACKLOG_REPORT_S, batch: int = EMBED_BATCH) -> None:
        self.every_s = every_s
        self.batch = batch
        self.last_said: float | None = None  # set while batches come back full
        self.said = False

    def after_batch(self, claimed: int, now: float) -> str | None:
        """``"behind"`` when it is due to say how many wait, ``"caught up"`` when it
        is due to say that, else None."""
        if claimed < self.batch:
            caught_up = self.said
            self.last_said, self.said = None, False
            return "caught up" if caught_up else None
        if self.last_said is None:
            self.last_said = now
        elif now - self.last_said >= self.every_s:
            self.last_said, self.said = now, True
            return "behind"
        return None


class EmbeddingWorker:
    """The child process; ``close`` ends it."""

    def __init__(self, owner_url: str, niceness: int = 0, quiet: bool = False) -> None:
        roots = [Path(memory_server.__file__).parents[1], Path(__file__).parents[1]]
        path = os.pathsep.join(filter(None, [*map(str, roots), os.environ.get("PYTHONPATH")]))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "memory_local.embedding_worker", str(niceness)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL if quiet else None,
            env={**os.environ, "PYTHONPATH": path, "EMBEDDING_OWNER_URL": owner_url},
        )

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()  # this child, by its PID
            self.process.wait()


def _say(message: str) -> None:
    print(f"[dev] {message}", flush=True)


def serve(niceness: int) -> None:
    if niceness > 0:
        os.nice(niceness)
    embedder = embedder_from_env(os.environ)
    if embedder is None:
        return
    owner_url = make_conninfo(os.environ["EMBEDDING_OWNER_URL"], options=SESSION_OPTIONS)

    def progress(done: int, total: int | None) -> None:
        if total and total > EMBED_BATCH and (done == total or done % 1000 < EMBED_BATCH):
            _say(f"embedding records: {done:,} of {total:,}")

    try:
        stored, left = backfill(owner_url, embedder, progress=progress)
        if stored > EMBED_BATCH or left:
            _say(f"embeddings ready ({stored:,} made now, {left:,} waiting)")
    except psycopg.Error as error:  # the stack stopping under it; the next start resumes
        _say(f"embedding backfill stopped: {error}")
        return
    with psycopg.connect(owner_url, autocommit=True) as owner:

        def session() -> AbstractContextManager[psycopg.Connection[Any]]:
            return statement_transactions(owner)

        backlog = Backlog()
        while True:
            try:
                claimed, stored = embed_queued(session, embedder)
                due = backlog.after_batch(claimed, time.monotonic())
                if due == "behind":
                    waiting = embedding_data.status(owner).queued
                    _say(f"embedding a burst of writes: {waiting:,} records waiting")
                elif due == "caught up":
                    _say("embedding a burst of writes: caught up")
            except psycopg.Error:
                return  # the database went away: make dev is stopping
            if claimed and stored:
                continue  # more may wait: no pause while the queue drains
            # Idle (or the model refused the batch): wait, and end when stdin closes.
            ready, _, _ = select.select([sys.stdin], [], [], POLL_S)
            if ready and not os.read(sys.stdin.fileno(), 1):
                return


if __name__ == "__main__":
    serve(int(sys.argv[1]))
