"""The data-access layer: every statement is a readable file under ``sql/``, and this
module (with :mod:`.db`, which owns transactions) is the only code that runs them.

Callers name a statement and pass its parameters; rows come back as dicts whatever
the connection's own row factory, so operator connections (tuple rows) and request
connections (dict rows) read alike.
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
    """A statement run for its effect; the number of rows it touched.

    Inside a pipeline (request transactions) nothing is fetched: the statement is
    queued, its errors surface at the next fetch or at ``COMMIT``, and the count is
    not known yet (-1).
    """
    return cursor(conn, name, params).rowcount
