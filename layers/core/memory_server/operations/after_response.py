"""Work that runs after an invocation has returned its response.

A request's post-commit work (publishing its audit events:
:mod:`memory_server.operations.audit_events`) must not
hold back the response. :meth:`AfterResponse.invocation` wraps one invocation of
the handler and collects the jobs submitted during it; when the handler returns,
the jobs are handed to a runner:

- :class:`LambdaExtension` in AWS Lambda: an *internal extension*, a thread of the
  function's own process registered with the Extensions API during init. Lambda
  returns the response as soon as the runtime posts it, and keeps the execution
  environment for the invocation until every extension has asked for its next
  event. So the thread, woken by the invocation's ``INVOKE`` event, waits for the
  handler's jobs, runs them after the response has gone, and only then asks for the
  next event. The environment takes no other request meanwhile, and the time is
  billed as part of the invocation.
- :class:`Worker` elsewhere (``make dev``, tests): one thread that runs handed-off
  jobs in order, those waiting together as one batch where they can be (one
  transaction and one ``PutEvents`` for a caller's waiting changes); its queue is
  bounded, and what does not fit is dropped (it stays in the outbox for the sweeper).
- :class:`Inline`: the jobs run before the handler returns (the response waits).
  The default for a service assembled without a runner, and the fallback when
  the extension cannot register.

Whatever a runner fails to run, the outbox keeps: the sweeper publishes it.
"""

from __future__ import annotations

import http.client
import json
import logging
import queue
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol

from memory_server.domain.limits import (
    AFTER_RESPONSE_BATCH,
    AFTER_RESPONSE_LINGER_S,
    AFTER_RESPONSE_QUEUE,
    EXTENSION_DEADLINE_RESERVE_S,
)

logger = logging.getLogger(__name__)

Job = Callable[[], None]
EXTENSION_NAME = "memory-server-after-response"
EXTENSION_RETRIES = 3  # broken long polls in a row before the extension gives up
_API_VERSION = "2020-01-01"


def run_jobs(jobs: list[Job]) -> None:
    """Run jobs; those with the same ``batch_key`` (and a ``run_batch``) run as one."""
    batches: dict[Hashable, list[Job]] = {}
    for job in jobs:
        key = getattr(job, "batch_key", None)
        if key is None:
            _run_safely(job)
        else:
            batches.setdefault(key, []).append(job)
    for batch in batches.values():
        if len(batch) == 1:
            _run_safely(batch[0])
        else:
            _run_safely(partial(batch[0].run_batch, batch))  # type: ignore[attr-defined]


def _run_safely(job: Job) -> None:
    try:
        job()
    except Exception:  # one failed job must not stop the others
        logger.exception("after-response job failed")


class Runner(Protocol):
    def hand_off(self, request_id: str | None, jobs: list[Job]) -> None:
        """The handler returned; ``jobs`` (possibly none) are this invocation's."""
        ...


class Inline:
    """Runs the jobs before the handler returns: the response waits for them."""

    def hand_off(self, request_id: str | None, jobs: list[Job]) -> None:
        run_jobs(jobs)


@dataclass
class Worker:
    """One thread running handed-off jobs in order, after the handler returned."""

    capacity: int = AFTER_RESPONSE_QUEUE
    # How long the first waiting job waits for others to join its batch: a batch's
    # one PutEvents then costs a fraction of a call each, and competes less with the
    # requests being served in the same process.
    linger_s: float = AFTER_RESPONSE_LINGER_S
    dropped: int = 0
    _queue: queue.Queue[list[Job]] = field(init=False)
    _thread: threading.Thread | None = field(default=None, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    _idle: threading.Condition = field(init=False)
    _pending: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self._queue = queue.Queue(self.capacity)
        self._idle = threading.Condition(self._lock)

    def hand_off(self, request_id: str | None, jobs: list[Job]) -> None:
        if not jobs:
            return
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="after-response", daemon=True
                )
                self._thread.start()
            try:
                self._queue.put_nowait(jobs)
            except queue.Full:
                self.dropped += 1
                logger.warning("after-response queue full: left to the sweeper")
                return
            self._pending += 1

    def _run(self) -> None:
        while True:
            # Whatever else is waiting runs with it: publishing jobs of one caller then
            # share a transaction and their PutEvents calls (audit.PublishJob).
            handed = [self._queue.get()]
            until = time.monotonic() + self.linger_s
            while len(handed) < AFTER_RESPONSE_BATCH:
                try:
                    handed.append(self._queue.get(timeout=max(0.0, until - time.monotonic())))
                except queue.Empty:
                    break
            try:
                run_jobs([job for jobs in handed for job in jobs])
            finally:
                with self._lock:
                    self._pending -= len(handed)
                    if not self._pending:
                        self._idle.notify_all()

    def wait_idle(self, timeout_s: float = 10.0) -> bool:
        """Wait until every handed-off job has run; False if ``timeout_s`` passed first."""
        with self._lock:
            return self._idle.wait_for(lambda: self._pending == 0, timeout_s)


class ExtensionsApi:
    """The Lambda Extensions API at ``AWS_LAMBDA_RUNTIME_API`` (plain HTTP, loopback)."""

    def __init__(self, runtime_api: str) -> None:
        self.base = f"http://{runtime_api}/{_API_VERSION}/extension"
        self.identifier = ""

    def register(self) -> None:
        # Internal extensions may register for INVOKE only (not SHUTDOWN).
        request = urllib.request.Request(  # noqa: S310 - the runtime API's http:// URL
            f"{self.base}/register",
            data=json.dumps({"events": ["INVOKE"]}).encode(),
            headers={"Lambda-Extension-Name": EXTENSION_NAME},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            self.identifier = response.headers["Lambda-Extension-Identifier"]
            response.read()

    def next_event(self) -> dict[str, Any]:
        """Blocks until Lambda sends the next event (no timeout: the environment may
        be frozen in between)."""
        request = urllib.request.Request(  # noqa: S310
            f"{self.base}/event/next",
            headers={"Lambda-Extension-Identifier": self.identifier},
        )
        with urllib.request.urlopen(request) as response:  # noqa: S310
            event: dict[str, Any] = json.loads(response.read())
            return event


class LambdaExtension:
    """The post-invoke phase through an internal extension thread (module docstring).

    ``register`` must run during init, before the runtime first asks for an
    invocation; after that Lambda refuses new extensions. If registering fails, or
    the thread later loses the Extensions API, jobs run inline instead.
    """

    def __init__(self, api: ExtensionsApi) -> None:
        self.api = api
        self._handed: queue.Queue[tuple[str | None, list[Job]]] = queue.Queue()
        self._alive = False

    @classmethod
    def register(cls, runtime_api: str) -> Runner:
        extension = cls(ExtensionsApi(runtime_api))
        try:
            extension.api.register()
        except Exception:
            logger.warning("could not register the after-response extension", exc_info=True)
            return Inline()
        extension._alive = True
        threading.Thread(target=extension._loop, name=EXTENSION_NAME, daemon=True).start()
        return extension

    def hand_off(self, request_id: str | None, jobs: list[Job]) -> None:
        if self._alive:
            self._handed.put((request_id, jobs))
        else:
            run_jobs(jobs)

    def _loop(self) -> None:
        failures = 0
        try:
            while True:
                try:
                    event = self.api.next_event()  # the first call ends this extension's init
                except urllib.error.HTTPError:
                    raise  # the Extensions API refused: non-recoverable
                except (OSError, http.client.HTTPException):
                    # The long poll's connection broke (a SnapStart restore can break
                    # connections opened before the snapshot): ask again.
                    failures += 1
                    if failures > EXTENSION_RETRIES:
                        raise
                    time.sleep(0.05)
                    continue
                failures = 0
                if event.get("eventType") == "INVOKE":
                    self._after(event)
        except Exception:
            logger.warning("after-response extension stopped; running jobs inline", exc_info=True)
        finally:
            self._alive = False
            while not self._handed.empty():  # anything handed off meanwhile
                run_jobs(self._handed.get_nowait()[1])

    def _after(self, event: dict[str, Any]) -> None:
        """Run the invocation's jobs once its handler has returned; never wait past
        the invocation's own deadline."""
        request_id = event.get("requestId")
        deadline_ms = event.get("deadlineMs")
        give_up = (
            float(deadline_ms) / 1000 - EXTENSION_DEADLINE_RESERVE_S
            if isinstance(deadline_ms, int | float)
            else time.time() + 60
        )
        while True:
            try:
                handed_id, jobs = self._handed.get(timeout=max(0.0, give_up - time.time()))
            except queue.Empty:
                logger.warning("handler did not finish before the deadline: %s", request_id)
                return
            run_jobs(jobs)
            # Jobs submitted outside any invocation (None) are run on the way.
            if request_id is None or handed_id == request_id:
                return


class AfterResponse:
    """Collects each invocation's jobs and hands them to the runner when it returns."""

    def __init__(self, runner: Runner | None = None) -> None:
        self.runner: Runner = runner or Inline()
        self._jobs: ContextVar[list[Job] | None] = ContextVar(f"after_response_{id(self)}")

    @contextmanager
    def invocation(self, request_id: str | None = None) -> Iterator[None]:
        jobs: list[Job] = []
        token = self._jobs.set(jobs)
        try:
            yield
        finally:
            self._jobs.reset(token)
            # Always, even with no jobs: an extension waits for the handler's return.
            self.runner.hand_off(request_id, jobs)

    def submit(self, job: Job) -> None:
        """Run ``job`` after the current invocation's response (at once if none)."""
        jobs = self._jobs.get(None)
        if jobs is None:
            self.runner.hand_off(None, [job])
        else:
            jobs.append(job)

    def wait_idle(self, timeout_s: float = 10.0) -> bool:
        """For tests and tools: wait until handed-off jobs have run (a runner that
        runs them later, like a worker, tells when)."""
        wait: Callable[[float], bool] | None = getattr(self.runner, "wait_idle", None)
        return wait(timeout_s) if wait is not None else True


def for_environment(runtime_api: str | None) -> AfterResponse:
    """In Lambda (``AWS_LAMBDA_RUNTIME_API`` set) the extension; elsewhere a worker."""
    if runtime_api:
        return AfterResponse(LambdaExtension.register(runtime_api))
    return AfterResponse(Worker())
