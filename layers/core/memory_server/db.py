"""Data access: a connection pool and the one way to run a request's transaction.

Every request transaction first sets its ``app.*`` settings with
``set_config(..., true)``: transaction-local, so nothing reaches the next tenant on a
pooled (RDS Proxy) connection and no session state pins it. Row-level security reads
those settings; the application's own queries pass the same values as parameters.

Round trips are the fixed cost of every request (measured in docs/performance.md),
so a request transaction runs in psycopg's pipeline mode: ``BEGIN``, the settings
and the first statement travel together; a read-only request (``Database.read``)
sends ``COMMIT`` with its last statement, a write (``Database.transaction``) after
it. A pooled connection is checked on checkout without a round trip unless it has
been idle for a while or the server has sent something.

With :mod:`.sql_files` this is the data-access layer: statements are named files
under ``sql/`` (the settings too); only transaction control is inline here.
"""

from __future__ import annotations

import logging
import select
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Literal

import psycopg
from psycopg import errors as pg_errors
from psycopg.pq import TransactionStatus
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from . import sql_files
from .caller import Caller, Deadline
from .errors import ToolError
from .grants import sorted_grants
from .limits import (
    DB_CONNECT_TIMEOUT_S,
    DB_KEEPALIVES_COUNT,
    DB_KEEPALIVES_IDLE_S,
    DB_KEEPALIVES_INTERVAL_S,
    DB_POOL_TIMEOUT_S,
    DB_TCP_USER_TIMEOUT_MS,
)
from .sql_files import Row

logger = logging.getLogger(__name__)
Connection = psycopg.Connection[dict[str, Any]]
# Given the first statement's rows, the name and parameters of a read's second
# statement (or None).
FollowUp = Callable[[list[Row]], "tuple[str, dict[str, Any]] | None"]
Isolation = Literal["read committed", "repeatable read"]

# Transaction control stays inline, like the BEGIN and COMMIT psycopg itself sends: it
# reads and writes nothing, and a file per keyword would hide which one a request
# sends. Everything else (the settings: request_settings.sql) is a file under sql/.
_BEGIN: dict[tuple[Isolation, bool], bytes] = {
    ("read committed", False): b"BEGIN ISOLATION LEVEL READ COMMITTED, READ WRITE",
    ("read committed", True): b"BEGIN ISOLATION LEVEL READ COMMITTED, READ ONLY",
    ("repeatable read", False): b"BEGIN ISOLATION LEVEL REPEATABLE READ, READ WRITE",
    ("repeatable read", True): b"BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY",
}

_COMMIT = b"COMMIT"
_ROLLBACK = b"ROLLBACK"

# Client-side bounds on every connection (libpq parameters; TCP only): connecting
# gives up after connect_timeout, and a peer that stops answering (a black-holed
# proxy, a failed-over writer) is noticed by TCP keepalives while the client waits
# for a result, or by the user timeout while what it sent goes unacknowledged.
# Without them such a connection holds its pool slot (with a pool of one, every
# request) until the kernel gives up, which takes minutes.
CONNECTION_OPTIONS: dict[str, Any] = {
    "connect_timeout": DB_CONNECT_TIMEOUT_S,
    "keepalives": 1,
    "keepalives_idle": DB_KEEPALIVES_IDLE_S,
    "keepalives_interval": DB_KEEPALIVES_INTERVAL_S,
    "keepalives_count": DB_KEEPALIVES_COUNT,
    "tcp_user_timeout": DB_TCP_USER_TIMEOUT_MS,
}


def pg_array(values: list[str]) -> str:
    """A text[] literal; every element quoted, so no value can change the structure."""
    quoted = ('"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values)
    return "{" + ",".join(quoted) + "}"


def request_settings(caller: Caller, timeout_ms: int) -> dict[str, str]:
    """The parameters of ``sql/request_settings.sql`` for this caller."""
    return {
        "workspace_id": str(caller.workspace_id),
        "principal_id": str(caller.principal_id),
        "grants": pg_array(sorted_grants(caller.grants)),
        "contexts": pg_array(list(caller.context.ancestors)),
        "personal": "on" if caller.personal_namespace else "off",
        "timeout": str(timeout_ms),
    }


class Liveness:
    """Is a pooled connection alive? Answered without a round trip when it can be.

    A connection returned to the pool moments ago is alive unless the server has
    since closed it or sent an error (``pg_terminate_backend``, a restart, a proxy
    closing it): any of those makes its socket readable, while a healthy idle
    connection has nothing to read. Otherwise (idle longer than ``trust_idle_s``,
    never used, or readable) it is asked: an empty query.
    """

    def __init__(self, trust_idle_s: float = 10.0) -> None:
        self.trust_idle_s = trust_idle_s
        self._returned: weakref.WeakKeyDictionary[Connection, float] = weakref.WeakKeyDictionary()

    def returned(self, conn: Connection) -> None:
        """The connection goes back to the pool in a clean state."""
        self._returned[conn] = time.monotonic()

    def alive(self, conn: Connection) -> bool:
        returned = self._returned.pop(conn, None)
        if conn.closed:
            return False
        if (
            returned is not None
            and time.monotonic() - returned < self.trust_idle_s
            and not select.select([conn.fileno()], [], [], 0)[0]
        ):
            return True
        try:
            ConnectionPool.check_connection(conn)
        except psycopg.Error:
            return False
        return True


class Database:
    """A small pool of runtime-role connections (one per Lambda container is typical)."""

    def __init__(
        self, conninfo: str | Callable[[], str], *, min_size: int = 1, max_size: int = 4
    ) -> None:
        self.liveness = Liveness()
        self._conninfo = conninfo
        self._sizes = (min_size, max_size)
        self.pool = self._new_pool()

    def _new_pool(self) -> ConnectionPool[Connection]:
        return ConnectionPool(
            self._conninfo,
            min_size=self._sizes[0],
            max_size=self._sizes[1],
            # No server-side prepared statements: a generic plan chosen after a few
            # executions ignores the parameter values that make the listing and
            # search predicates selective (measured: 1.9 ms custom vs 690 ms generic
            # for a list page), and prepared statements would pin RDS Proxy sessions.
            kwargs={
                **CONNECTION_OPTIONS,
                "row_factory": dict_row,
                "autocommit": True,
                "prepare_threshold": None,
            },
            open=True,
            timeout=DB_POOL_TIMEOUT_S,
            # Connections are checked on checkout by _checked_out (not the pool's
            # ``check``, which sleeps a backoff of a second or more after each dead one).
            # No ``reset`` hook: with one, the pool hands every returned connection to
            # its worker thread, a thread switch per statement group on the request
            # path; _checked_out notes the return itself.
        )

    def close(self) -> None:
        self.pool.close()

    def suspend(self, settle_s: float = 2.0) -> None:
        """Before a SnapStart snapshot: close every connection and the pool's threads,
        so no connection (or IAM token) is frozen into the snapshot.

        A connection just used is handed back by a pool worker (the ``reset`` hook);
        one still on its way when the pool closes would never be closed, so the
        pool first settles (nothing is in flight during a snapshot hook).
        """
        give_up = time.monotonic() + settle_s
        while time.monotonic() < give_up:
            stats = self.pool.get_stats()
            if stats.get("pool_available", 0) >= stats.get("pool_size", 0):
                break
            time.sleep(0.005)
        self.pool.close()

    def resume(self) -> None:
        """After a restore: a new pool (a closed one cannot be reopened); it connects
        in the background, and each connection signs a fresh IAM token."""
        if self.pool.closed:
            self.pool = self._new_pool()

    @contextmanager
    def _checked_out(self, timeout_s: float | None) -> Iterator[Connection]:
        """A live pooled connection. A dead one (the server restarted or killed it,
        a proxy closed it, a SnapStart restore) is closed, which makes the pool open
        a replacement, and the next is tried: after a failover every idle connection
        is dead, and none of them may cost a request its answer or a backoff sleep.
        """
        give_up = None if timeout_s is None else time.monotonic() + timeout_s
        for _ in range(self.pool.max_size + 1):
            remaining = None if give_up is None else max(0.0, give_up - time.monotonic())
            with self.pool.connection(timeout=remaining) as conn:
                if self.liveness.alive(conn):
                    try:
                        yield conn
                    finally:
                        idle = conn.info.transaction_status == TransactionStatus.IDLE
                        if idle and not conn.closed:
                            self.liveness.returned(conn)
                    return
                conn.close()
        raise psycopg.OperationalError("no live database connection")

    @contextmanager
    def _request(self, timeout_ms: int) -> Iterator[Connection]:
        """A live connection for one request transaction; whatever the block leaves
        open or failed is rolled back."""
        with translate_errors(), self._checked_out(timeout_ms / 1000) as conn:
            try:
                yield conn
            finally:
                # A raised error leaves the transaction open or failed: end it here,
                # not in the pool's reset, which would log a warning for each.
                if not conn.closed and conn.info.transaction_status != TransactionStatus.IDLE:
                    conn.execute(_ROLLBACK)

    @staticmethod
    def _begin(
        conn: Connection, caller: Caller, timeout_ms: int, read_only: bool, isolation: Isolation
    ) -> None:
        """Queue ``BEGIN`` and the caller's settings (in pipeline mode: no round trip)."""
        conn.execute(_BEGIN[isolation, read_only])
        sql_files.cursor(conn, "request_settings", request_settings(caller, timeout_ms))

    @contextmanager
    def transaction(
        self,
        caller: Caller,
        deadline: Deadline,
        *,
        read_only: bool = False,
        isolation: Isolation = "read committed",
    ) -> Iterator[Connection]:
        """One request transaction with the caller's settings applied first.

        Pipelined: ``BEGIN`` and the settings go with the first statement, ``COMMIT``
        with the final sync, so a one-statement request costs two round trips. A
        statement's results arrive when first fetched, and an error can surface at
        the next fetch or at ``COMMIT``, always inside this block. Connections are in
        autocommit mode so that psycopg sends no ``BEGIN`` or ``COMMIT`` of its own
        (its commit would sync once more).
        """
        timeout_ms = deadline.remaining_ms()
        with self._request(timeout_ms) as conn, conn.pipeline():
            self._begin(conn, caller, timeout_ms, read_only, isolation)
            if not read_only:
                # A change re-checks the caller's membership under the lock erasure
                # takes (queued: an error surfaces at the first fetch, in this block).
                sql_files.cursor(conn, "lock_membership")
            yield conn
            conn.execute(_COMMIT)

    def read(
        self,
        caller: Caller,
        deadline: Deadline,
        name: str,
        params: dict[str, Any],
        *,
        then: FollowUp | None = None,
        isolation: Isolation = "read committed",
    ) -> list[Row]:
        """A read-only request of one named statement (``sql/{name}.sql``), or of two
        when ``then`` derives the second's name and parameters from the first's rows
        (``None``: no second); the rows of the last.

        ``COMMIT`` travels with the last statement, so each statement costs one round
        trip and the commit none: ``BEGIN``, the settings, the statement and ``COMMIT``
        go in one sync, and the last rows are read once the pipeline has ended
        (fetching inside it would sync once more). Measured: 0.25 ms less than a
        transaction block for a read on loopback; through RDS Proxy, a network round
        trip less.
        """
        return self._two_step(caller, deadline, name, params, then, True, isolation)

    def change(
        self,
        caller: Caller,
        deadline: Deadline,
        name: str,
        params: dict[str, Any],
        *,
        then: FollowUp | None = None,
    ) -> list[Row]:
        """A change as one read-write transaction of two round trips: ``BEGIN``, the
        settings and a first statement (typically finding the record) in one; then
        the statement ``then`` derives from its rows (the change, which raises or
        returns ``None`` to change nothing) with ``COMMIT`` in the other. The rows
        of the change, read after the commit. Without ``then`` the first statement is
        the change, and the transaction one round trip.

        The write path's fixed cost is its round trips (resolving the caller is one
        more): a transaction block would spend a third on ``COMMIT`` alone.
        """
        return self._two_step(caller, deadline, name, params, then, False, "read committed")

    def _two_step(
        self,
        caller: Caller,
        deadline: Deadline,
        name: str,
        params: dict[str, Any],
        then: FollowUp | None,
        read_only: bool,
        isolation: Isolation,
    ) -> list[Row]:
        timeout_ms = deadline.remaining_ms()
        with self._request(timeout_ms) as conn:
            with conn.pipeline():
                self._begin(conn, caller, timeout_ms, read_only, isolation)
                if not read_only:
                    # As in ``transaction``: a change re-checks the caller's membership
                    # under the lock erasure takes (queued: no round trip of its own).
                    sql_files.cursor(conn, "lock_membership")
                first = sql_files.cursor(conn, name, params)
                last: psycopg.Cursor[Row] | None = first
                if then is not None:
                    second = then(first.fetchall())
                    last = sql_files.cursor(conn, *second) if second is not None else None
                conn.execute(_COMMIT)
            return last.fetchall() if last is not None else []

    def resolve(self, deadline: Deadline, name: str, params: dict[str, Any]) -> Row | None:
        """The first row of one statement run before any caller exists (resolving the
        caller): a read-only transaction whose statement timeout is the deadline's,
        ``BEGIN``, the timeout, the statement and ``COMMIT`` in one round trip. Waiting
        for a pooled connection counts against the deadline too."""
        timeout_ms = deadline.remaining_ms()
        with self._request(timeout_ms) as conn:
            with conn.pipeline():
                conn.execute(_BEGIN["read committed", True])
                sql_files.cursor(conn, "resolve_settings", {"timeout": str(timeout_ms)})
                found = sql_files.cursor(conn, name, params)
                conn.execute(_COMMIT)
            return found.fetchone()


# Raised by memory.lock_membership() (migration 0012): the caller's membership is gone.
NO_LONGER_A_MEMBER = "MS403"


@contextmanager
def translate_errors() -> Iterator[None]:
    """Backend failures become ``timeout`` / ``unavailable``: never an empty result,
    and never an unanswered exception (which the edge could only answer with a 500).

    Errors the caller handles itself (a unique violation a move or a merge turns into
    its own answer) are caught inside the transaction block, before they get here.
    """
    try:
        yield
    except pg_errors.QueryCanceled:
        raise ToolError("timeout", "the database did not answer within the deadline") from None
    except (pg_errors.SerializationFailure, pg_errors.DeadlockDetected):
        raise ToolError("unavailable", "a concurrent change interfered; retry") from None
    except pg_errors.LockNotAvailable:
        raise ToolError("timeout", "the record is locked by another writer; retry") from None
    except PoolTimeout:
        raise ToolError("unavailable", "no database connection available; retry") from None
    except psycopg.OperationalError:
        raise ToolError("unavailable", "the database is unavailable; retry") from None
    except psycopg.Error as error:
        if error.sqlstate == NO_LONGER_A_MEMBER:
            raise ToolError(
                "permission_denied", "you are no longer a member of this workspace"
            ) from None
        # Anything else is a defect the first wall should have prevented (a policy
        # violation, a constraint, a value out of range): logged, answered as
        # unavailable, never with the database's own text.
        logger.error("unexpected database error %s (%s)", error.sqlstate, type(error).__name__)
        raise ToolError("unavailable", "the database could not complete the call; retry") from None
