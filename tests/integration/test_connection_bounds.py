"""Client-side bounds on database connections, and SnapStart's pool hooks.

A connection to a peer that stops answering must fail within seconds, not hold its
pool slot (in Lambda the pool has one) until the kernel gives up: ``connect_timeout``
for connecting, TCP keepalives and the TCP user timeout once connected. Before a
SnapStart snapshot the pool is closed; after a restore a new one serves.
"""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
import time
import types
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
from memory_server.data.pool import Database
from memory_server.domain import limits
from memory_server.domain.deadline import Deadline
from memory_server.domain.errors import ToolError
from memory_server.edge import runtime


class SilentThenForwarding:
    """A TCP endpoint in front of PostgreSQL: while ``silent`` it accepts connections
    and never answers (a black hole after the handshake); then it relays bytes."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.silent = True
        self.held: list[socket.socket] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.silent:
                self.held.append(client)  # read nothing, answer nothing
                continue
            upstream = socket.create_connection(self.target)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self.listener.close()
        for s in self.held:
            s.close()


def through(url: str, port: int) -> str:
    parts = urlsplit(url)
    netloc = parts.netloc.rsplit("@", 1)
    host = f"127.0.0.1:{port}"
    return urlunsplit(parts._replace(netloc=f"{netloc[0]}@{host}" if len(netloc) == 2 else host))


@pytest.fixture
def black_hole(cluster: Any) -> Iterator[SilentThenForwarding]:
    parts = urlsplit(cluster.runtime_url)
    proxy = SilentThenForwarding((parts.hostname or "127.0.0.1", parts.port or 5432))
    yield proxy
    proxy.close()


def select_one(db: Database, seconds: float = 3.0) -> Any:
    # One statement before any caller exists, as caller resolution runs it.
    row = db.ping(Deadline.after(seconds))
    return None if row is None else {"one": next(iter(row.values()))}


def test_a_connection_that_never_answers_does_not_hold_the_only_slot(
    cluster: Any, black_hole: SilentThenForwarding
) -> None:
    db = Database(through(cluster.runtime_url, black_hole.port), min_size=1, max_size=1)
    try:
        started = time.monotonic()
        with pytest.raises(ToolError) as refused:
            select_one(db)
        assert refused.value.code == "unavailable"
        assert time.monotonic() - started < 3.5
        # The network heals. Without connect_timeout the pool's one connection attempt
        # would still be waiting on the silent peer, and nothing could be served.
        black_hole.silent = False
        deadline = time.monotonic() + limits.DB_CONNECT_TIMEOUT_S * 2 + 3
        while True:
            try:
                assert select_one(db) == {"one": 1}
                break
            except ToolError:
                assert time.monotonic() < deadline, "the pool never recovered its slot"
    finally:
        db.close()


def test_connections_carry_keepalives_and_a_user_timeout(database: Database) -> None:
    with database.pool.connection() as conn:
        sock = socket.socket(fileno=conn.fileno())
        try:
            assert sock.family in (socket.AF_INET, socket.AF_INET6)  # TCP, not a Unix socket
            assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == (
                limits.DB_KEEPALIVES_IDLE_S
            )
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL) == (
                limits.DB_KEEPALIVES_INTERVAL_S
            )
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT) == (
                limits.DB_KEEPALIVES_COUNT
            )
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT) == (
                limits.DB_TCP_USER_TIMEOUT_MS
            )
        finally:
            sock.detach()  # the descriptor stays psycopg's


@pytest.fixture
def snapshot_hooks(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Callable[[], None]]]:
    """``snapshot_restore_py`` as the Lambda Python runtime provides it."""
    hooks: dict[str, list[Callable[[], None]]] = {"before": [], "after": []}
    module = types.ModuleType("snapshot_restore_py")
    module.register_before_snapshot = hooks["before"].append  # type: ignore[attr-defined]
    module.register_after_restore = hooks["after"].append  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "snapshot_restore_py", module)
    return hooks


def test_snapstart_closes_the_pool_before_the_snapshot_and_reopens_after_restore(
    cluster: Any, snapshot_hooks: dict[str, list[Callable[[], None]]]
) -> None:
    db = Database(cluster.runtime_url, min_size=1, max_size=1)
    try:
        with db.pool.connection() as conn:
            pooled = conn
        assert runtime.register_snapshot_hooks(db)
        (before,), (after,) = snapshot_hooks["before"], snapshot_hooks["after"]
        before()
        assert db.pool.closed and pooled.closed  # nothing open goes into the snapshot
        after()
        assert not db.pool.closed
        assert select_one(db) == {"one": 1}
    finally:
        db.close()


def test_without_the_runtime_library_no_hooks_are_registered(cluster: Any) -> None:
    assert "snapshot_restore_py" not in sys.modules
    db = Database(cluster.runtime_url, min_size=0, max_size=1)
    try:
        assert runtime.register_snapshot_hooks(db) is False
    finally:
        db.close()
