"""``make dev``'s embedding, in a process of its own at a lower priority.

Deployed, each invocation embeds what it changed after its response, while its
execution environment serves nothing else. ``make dev`` serves every request from
one interpreter: a model run there (6-50 ms of CPU a batch) holds the interpreter
lock and one of the two cores while the next requests wait, and it was most of a
write's and a search's p95 over HTTP (docs/performance.md, "Hybrid recall").

:class:`EmbeddingWorker` starts this module as a child: it backfills first (every
record not in the model's space, with progress on the console), then embeds the
queue as the owner role. It claims when the writes pause (the newest queued record
has waited ``QUIET_S``) or when the oldest has waited ``MAX_WAIT_S``, whichever comes
first, in batches of ``EMBED_BATCH``; with nothing queued it looks every ``POLL_S``.
So a burst of writes is embedded after it, in a few large batches instead of a pass
and two transactions a write, and a record is found by meaning well within a second
of its write when the machine is not saturated. The process runs at the AWS
emulation's lower priority (``niceness``); ``SCHED_IDLE`` was measured and not kept:
on a loaded machine it starved the worker, whose backlog then ran into the next
requests (docs/performance.md, "Hybrid recall"). The claim and the store are one
autocommit statement each, so no lock waits for the worker to be scheduled, and their
commits do not wait for the WAL flush: a vector lost in a crash is still queued and
is embedded again. The handler then only embeds questions. The child ends when its
standard input closes, so a ``make dev`` that dies leaves no worker behind.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import memory_server
import psycopg
from memory_server.data import embeddings as embedding_data
from memory_server.domain.limits import EMBED_BATCH, EMBED_QUEUE_ATTEMPTS
from memory_server.edge.runtime import embedder_from_env
from memory_server.operations.embeddings import backfill, embed_queued, statement_transactions
from psycopg.conninfo import make_conninfo

# How often an idle worker looks at the queue: well under the second the issue allows
# between a write and its vector, and a cheap query when nothing waits.
POLL_S = 0.1
# A pause in the writes: the newest queued record has waited this long.
QUIET_S = 0.1
# The longest a record waits for a pause before it is claimed all the same (a steady
# stream of writes has none): with QUIET_S and a batch's embedding, within a second.
MAX_WAIT_S = 0.3
# The worker's commits do not wait for the WAL flush (see above).
SESSION_OPTIONS = "-c synchronous_commit=off"


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


def pause(ages: tuple[float, float] | None) -> float:
    """How long to wait before claiming, given how long the oldest and the newest
    claimable record have waited (``None``: nothing waits); 0 claims now."""
    if ages is None:
        return POLL_S
    oldest, newest = ages
    if newest >= QUIET_S or oldest >= MAX_WAIT_S:
        return 0.0
    return max(0.001, min(QUIET_S - newest, MAX_WAIT_S - oldest))


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

        while True:
            try:
                wait = pause(embedding_data.queue_ages(owner, EMBED_QUEUE_ATTEMPTS))
                if not wait:
                    claimed, stored = embed_queued(session, embedder)
                    if claimed and stored:
                        continue  # more may wait: asked again at once
                    wait = POLL_S  # claimed by another meanwhile, or the model refused
            except psycopg.Error:
                return  # the database went away: make dev is stopping
            # Wait, and end when stdin closes.
            ready, _, _ = select.select([sys.stdin], [], [], wait)
            if ready and not os.read(sys.stdin.fileno(), 1):
                return


if __name__ == "__main__":
    serve(int(sys.argv[1]))
