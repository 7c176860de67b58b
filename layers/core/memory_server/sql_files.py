"""Named SQL statements, kept as readable files under ``sql/`` and loaded once."""

from __future__ import annotations

from functools import cache
from importlib.resources import files


@cache
def query(name: str) -> bytes:
    return (files(__package__) / "sql" / f"{name}.sql").read_bytes()
