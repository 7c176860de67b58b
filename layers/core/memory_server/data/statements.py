"""Statement files: every statement is a readable file under ``sql/``, loaded once per
process and run only by this package (request transactions through :mod:`.pool`,
operator and migration connections directly).

Rows come back as dicts whatever the connection's own row factory, so operator
connections (tuple rows) and request connections (dict rows) read alike.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from typing import Any

import psycopg
from psycopg.rows import dict_row

Row = dict[str, Any]
Params = dict[str, Any] | None


@cache
def query(name: str) -> bytes:
    """The text of ``sql/{name}.sql`` (read once per process)."""
    return (files(__package__) / "sql" / f"{name}.sql").read_bytes()


def cursor(conn: psycopg.Connection[Any], name: str, params: Params = None) -> psycopg.Cursor[Row]:
    """Run a statement and return its cursor unfetched (pipelined reads fetch later)."""
    return conn.cursor(row_factory=dict_row).execute(query(name), params)


def one(conn: psycopg.Connection[Any], name: str, params: Params = None) -> Row | None:
    """The first row of a statement, or ``None``."""
    return cursor(conn, name, params).fetchone()


def rows(conn: psycopg.Connection[Any], name: str, params: Params = None) -> list[Row]:
    """Every row of a statement."""
    return cursor(conn, name, params).fetchall()


def run(conn: psycopg.Connection[Any], name: str, params: Params = None) -> int:
    """A statement run for its effect; the number of rows it touched (-1 inside a
    pipeline, where nothing is fetched and errors surface at the next sync)."""
    return cursor(conn, name, params).rowcount


def first(rows: list[Row]) -> Any:
    """A statement's first row, or ``None`` (a shape for :meth:`.pool.Transaction.query`)."""
    return rows[0] if rows else None


def every(rows: list[Row]) -> Any:
    """All of a statement's rows, as they are."""
    return rows
