"""The connection pool and the one way to run a request's transaction.

Every request transaction first sets its ``app.*`` settings with
``set_config(..., true)``: transaction-local, so nothing reaches the next tenant on a
pooled (RDS Proxy) connection and no session state pins it. Row-level security reads
those settings; the statements pass the same values as parameters.

Round trips are the fixed cost of every request (measured in docs/performance.md),
so a request transaction runs in psycopg's pipeline mode: ``BEGIN``, the settings
and the statements travel together, ``COMMIT`` with the last sync. The statement
functions of this package queue statements on a :class:`Transaction` and hand back
:class:`Pending` results; a result asked for inside the block costs a round trip, one
asked for after it none. A pooled connection is checked on checkout without a round
trip unless it has been idle for a while or the server has sent something.
"""

from __future__ import annotations

import logging
import select
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Generic, Literal, TypeVar, cast

import psycopg
from psycopg import errors as pg_errors
from psycopg.pq import TransactionStatus
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from memory_server.data import statements
from memory_server.data.statements import Row
from memory_server.domain.caller import Caller
from memory_server.domain.deadline import Deadline
from memory_server.domain.errors import ToolError, invalid
from memory_server.domain.grants import sorted_grants
from memory_server.domain.limits import (
    DB_CONNECT_TIMEOUT_S,
    DB_KEEPALIVES_COUNT,
    DB_KEEPALIVES_IDLE_S,
    DB_KEEPALIVES_INTERVAL_S,
    DB_POOL_TIMEOUT_S,
    DB_TCP_USER_TIMEOUT_MS,
)

logger = logging.getLogger(__name__)
Connection = psycopg.Connection[dict[str, Any]]
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

    @contextmanager
    def read(
        self, caller: Caller, deadline: Deadline, *, isolation: Isolation = "read committed"
    ) -> Iterator[Transaction]:
        """A read-only request transaction with the caller's settings applied first.

        Pipelined: ``BEGIN``, the settings and the statements queued in the block go
        in one sync with ``COMMIT``, so a one-statement read costs one round trip
        (measured: 0.25 ms less than a transaction block on loopback; through RDS
        Proxy, a network round trip less). A result asked for inside the block costs a
        round trip of its own (a second statement that depends on it follows).
        """
        with self._transaction(caller, deadline, read_only=True, isolation=isolation) as tx:
            yield tx

    @contextmanager
    def write(self, caller: Caller, deadline: Deadline) -> Iterator[Transaction]:
        """A read-write request transaction: the caller's settings, then the caller's
        membership checked afresh under the lock erasure takes, then the block's
        statements, with ``COMMIT`` in the last sync. A change by path is one round
        trip; one that reads the record first, two. Raising in the block rolls back.
        """
        with self._transaction(caller, deadline, read_only=False, isolation="read committed") as tx:
            yield tx

    @contextmanager
    def _transaction(
        self, caller: Caller, deadline: Deadline, *, read_only: bool, isolation: Isolation
    ) -> Iterator[Transaction]:
        timeout_ms = deadline.remaining_ms()
        with self._request(timeout_ms) as conn:
            tx = Transaction(conn)
            with conn.pipeline():
                # Connections are in autocommit mode so that psycopg sends no BEGIN or
                # COMMIT of its own (its commit would sync once more).
                conn.execute(_BEGIN[isolation, read_only])
                statements.cursor(conn, "request_settings", request_settings(caller, timeout_ms))
                if not read_only:
                    # Queued: an error surfaces at the first fetch, inside this block.
                    statements.cursor(conn, "lock_membership")
                yield tx
                conn.execute(_COMMIT)
            # The pipeline has synced: every result is here; read them before the
            # connection goes back to the pool.
            tx.settle()

    def ping(self, deadline: Deadline, caller: Caller | None = None) -> Row | None:
        """``SELECT 1`` in a transaction of its own (with the caller's settings, when
        given): one round trip, as the benchmarks and the connection tests time it."""
        scope = self.unscoped(deadline) if caller is None else self.read(caller, deadline)
        with scope as tx:
            found = tx.query("select_one", {}, statements.first)
        row: Row | None = found.get()
        return row

    def schema_version(self) -> int | None:
        """The database's schema version (``memory.schema_version()``); ``None`` for a
        database made before the function existed. Outside any request: the service
        asks once, at start."""
        with self._checked_out(DB_POOL_TIMEOUT_S) as conn:
            try:
                row = statements.one(conn, "schema_version")
            except pg_errors.UndefinedFunction:
                return None
        return None if row is None else cast(int | None, row["version"])

    def embedding_spaces(self) -> list[tuple[str, int]]:
        """The (model, dimensions) pairs the stored vectors are in
        (``memory.embedding_spaces()``). Outside any request: asked once, at start."""
        from memory_server.data import embeddings  # it imports this module

        with self._checked_out(DB_POOL_TIMEOUT_S) as conn:
            return embeddings.spaces(conn)

    @contextmanager
    def unscoped(self, deadline: Deadline, *, read_only: bool = True) -> Iterator[Transaction]:
        """A transaction before any caller exists (resolving the caller; an invitee
        accepting, which writes: ``read_only=False``): its statement timeout is the
        deadline's, ``BEGIN``, the timeout, the statement and ``COMMIT`` in one round
        trip. No ``app.*`` settings: only SECURITY DEFINER functions that ask nothing
        of them reach anything. Waiting for a pooled connection counts against the
        deadline too."""
        timeout_ms = deadline.remaining_ms()
        with self._request(timeout_ms) as conn:
            tx = Transaction(conn)
            with conn.pipeline():
                conn.execute(_BEGIN["read committed", read_only])
                statements.cursor(conn, "resolve_settings", {"timeout": str(timeout_ms)})
                yield tx
                conn.execute(_COMMIT)
            tx.settle()


T = TypeVar("T")


class Pending(Generic[T]):
    """A statement's result, shaped when first asked for. Inside its transaction that
    costs a round trip (the pipeline syncs); after the transaction it is already here.
    """

    __slots__ = ("_cursor", "_done", "_shape", "_value")

    def __init__(self, cursor: psycopg.Cursor[Row], shape: Callable[[list[Row]], T]) -> None:
        self._cursor = cursor
        self._shape = shape
        self._done = False
        self._value: T | None = None

    def get(self) -> T:
        if not self._done:
            self._value = self._shape(self._cursor.fetchall())
            self._done = True
        return cast(T, self._value)


class Transaction:
    """One request transaction on a checked-out connection, seen only by the typed
    statement functions of this package: they queue statements on it and hand back
    :class:`Pending` results."""

    __slots__ = ("_pending", "conn")

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self._pending: list[Pending[Any]] = []

    def query(
        self, name: str, params: dict[str, Any], shape: Callable[[list[Row]], T]
    ) -> Pending[T]:
        """Queue the statement ``sql/{name}.sql``; its rows, shaped, when asked for."""
        pending = Pending(statements.cursor(self.conn, name, params), shape)
        self._pending.append(pending)
        return pending

    def execute(self, name: str, params: dict[str, Any]) -> None:
        """Queue a statement run for its effect (its errors surface at the next sync)."""
        statements.cursor(self.conn, name, params)

    def settle(self) -> None:
        """Read every result the transaction produced (after its last sync)."""
        for pending in self._pending:
            pending.get()


# Raised by memory.lock_membership() (migration 0012): the caller's membership is gone.
NO_LONGER_A_MEMBER = "MS403"
# The unique index of members' folded handles (infra/migrations/0006_unique_handles.sql).
HANDLE_INDEX = "memberships_handle"
HANDLE_TAKEN = (
    "handle: taken by another member of this workspace (a handle is unique among a "
    "workspace's people and agent keys, compared after Unicode NFKC normalization, case "
    "folding and folding of look-alike letters): choose another"
)


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
    except pg_errors.NumericValueOutOfRange as error:
        # A number beyond its SQL type (22003): the argument models bound every client
        # number first, so one reaching here is a missed bound, worth a warning, but
        # the request is permanently bad: never "retry", never a database alarm.
        logger.warning(
            "a number out of its SQL type's range reached the database (%s)", error.sqlstate
        )
        raise invalid("a number is out of the range the service stores") from None
    except PoolTimeout:
        raise ToolError("unavailable", "no database connection available; retry") from None
    except psycopg.OperationalError:
        raise ToolError("unavailable", "the database is unavailable; retry") from None
    except psycopg.Error as error:
        if error.sqlstate == NO_LONGER_A_MEMBER:
            raise ToolError(
                "permission_denied", "you are no longer a member of this workspace"
            ) from None
        if isinstance(error, pg_errors.UniqueViolation) and (
            error.diag.constraint_name == HANDLE_INDEX
        ):
            # The rule, never who holds the handle: the caller may not see that member.
            raise ToolError("already_exists", HANDLE_TAKEN) from None
        # Anything else is a defect the first wall should have prevented (a policy
        # violation, a constraint, a value out of range): logged, answered as
        # unavailable, never with the database's own text.
        logger.error("unexpected database error %s (%s)", error.sqlstate, type(error).__name__)
        raise ToolError("unavailable", "the database could not complete the call; retry") from None
