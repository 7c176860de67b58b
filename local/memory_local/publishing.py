"""``make dev``'s audit publishing, in a process of its own.

In Lambda an invocation publishes its audit events in its post-invoke phase, while
its execution environment serves nothing else (``after_response.LambdaExtension``).
``make dev`` serves every request from one interpreter, and publishing there (the
claim, boto3's ``PutEvents``, the mark) competed with the requests for the
interpreter lock: measured, it was most of a write's p95 (docs/performance.md,
"Publishing out of the requests' way").

:class:`ProcessPublisher` is the stack's after-response runner instead: it hands each
invocation's publishing (its caller: whose rows, seen through which settings) to a
child process at a lower priority, which runs the same jobs as the in-process worker
(``audit.PublishJob``, batched by ``after_response.run_jobs``) with its own
connection pool and EventBridge client. Other jobs run on a worker thread here, as
before. What the child cannot take (its queue is full, it is gone) is published by
the in-process worker; whatever fails stays in the outbox for the sweeper.

The child reads pickled batches of callers on its standard input and answers each
with the number of jobs it ran, so ``wait_idle`` knows when everything handed off
has been published. It ends when its standard input closes: a ``make dev`` that
dies leaves no publisher behind.
"""

from __future__ import annotations

import logging
import os
import queue
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import IO

import memory_server
from memory_server.data.pool import Database
from memory_server.domain.caller import Caller
from memory_server.domain.limits import (
    AFTER_RESPONSE_BATCH,
    AFTER_RESPONSE_LINGER_S,
    AFTER_RESPONSE_QUEUE,
)
from memory_server.edge import aws_config
from memory_server.operations.after_response import Job, Worker, run_jobs
from memory_server.operations.audit_events import EventBridgeSink, PublishJob

logger = logging.getLogger(__name__)


class ProcessPublisher:
    """An ``after_response`` runner handing publishing jobs to a child process."""

    def __init__(self, niceness: int = 0, capacity: int = AFTER_RESPONSE_QUEUE) -> None:
        roots = [Path(memory_server.__file__).parents[1], Path(__file__).parents[1]]
        path = os.pathsep.join(filter(None, [*map(str, roots), os.environ.get("PYTHONPATH")]))
        # The child reads the database URL, the AWS endpoint and the bus from the
        # environment the handler was built from.
        self.process = subprocess.Popen(
            [sys.executable, "-m", "memory_local.publishing", str(niceness)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": path},
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self._outbox = Connection(os.dup(self.process.stdin.fileno()), readable=False)
        self.process.stdin.close()
        self.local = Worker()  # other jobs, and publishing the child cannot take
        self._queue: queue.Queue[list[Caller]] = queue.Queue(capacity)
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._pending = 0
        self._alive = True
        self.handed = 0  # publishing jobs handed to the child so far
        threading.Thread(target=self._send, name="publisher-send", daemon=True).start()
        threading.Thread(
            target=self._read, args=(self.process.stdout,), name="publisher-acks", daemon=True
        ).start()

    @property
    def alive(self) -> bool:
        """Whether publishing still goes to the child (False once it is gone)."""
        with self._lock:
            return self._alive

    def hand_off(self, request_id: str | None, jobs: list[Job]) -> None:
        callers = [job.caller for job in jobs if isinstance(job, PublishJob)]
        others = [job for job in jobs if not isinstance(job, PublishJob)]
        if callers:
            with self._lock:
                taken = self._alive
                if taken:
                    try:
                        self._queue.put_nowait(callers)
                        self._pending += len(callers)
                        self.handed += len(callers)
                    except queue.Full:
                        taken = False
            if not taken:
                others = jobs  # published here (or, failing that, by the sweeper)
        self.local.hand_off(request_id, others)

    def _send(self) -> None:
        while True:
            callers = self._queue.get()
            try:
                while len(callers) < AFTER_RESPONSE_BATCH:  # whatever else is waiting
                    callers += self._queue.get_nowait()
            except queue.Empty:
                pass
            try:
                self._outbox.send(callers)
            except OSError:
                logger.warning("audit publisher process gone: publishing in process")
                self._gone()
                return

    def _read(self, acks: IO[bytes]) -> None:
        for line in acks:
            try:
                done = int(line)
            except ValueError:  # not an acknowledgement (something else wrote there)
                logger.warning("audit publisher wrote %r", line[:200])
                continue
            with self._lock:
                self._pending = max(0, self._pending - done)
                if not self._pending:
                    self._idle.notify_all()
        self._gone()  # its standard output closed: the child ended

    def _gone(self) -> None:
        # What the child had not acknowledged is in the outbox for the sweeper.
        with self._lock:
            self._alive = False
            self._pending = 0
            self._idle.notify_all()

    def wait_idle(self, timeout_s: float = 10.0) -> bool:
        """Wait until every job handed off so far has run, here and in the child."""
        until = time.monotonic() + timeout_s
        with self._lock:
            if not self._idle.wait_for(lambda: self._pending == 0, timeout_s):
                return False
        return self.local.wait_idle(max(0.0, until - time.monotonic()))

    def close(self) -> None:
        """End the child (its standard input closes) and wait for it."""
        with self._lock:
            self._alive = False
        self._outbox.close()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()  # this child, by its PID
            self.process.wait()


def serve(niceness: int) -> None:
    """The child: publish each batch of callers' rows, acknowledge, until stdin closes."""
    if niceness > 0:
        os.nice(niceness)
    db = Database(aws_config.database_conninfo(os.environ), min_size=1, max_size=1)
    sink = EventBridgeSink(aws_config.events_client(), os.environ["AUDIT_BUS_NAME"])
    inbox = Connection(os.dup(sys.stdin.fileno()), writable=False)
    try:
        while True:
            try:
                callers: list[Caller] = inbox.recv()
                # Let a batch gather, as the in-process worker does: one transaction
                # and a few PutEvents for what waits together.
                until = time.monotonic() + AFTER_RESPONSE_LINGER_S
                while len(callers) < AFTER_RESPONSE_BATCH and inbox.poll(
                    max(0.0, until - time.monotonic())
                ):
                    callers += inbox.recv()
            except EOFError:
                return
            run_jobs([PublishJob(db, caller, sink) for caller in callers])
            print(len(callers), flush=True)
    finally:
        db.close()


if __name__ == "__main__":
    serve(int(sys.argv[1]))
