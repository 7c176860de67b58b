"""The migrator: ordered, recorded, idempotent, and refusing rewritten history."""

from __future__ import annotations

import shutil
from pathlib import Path

import psycopg
import pytest
from memory_server.data.migrate import (
    MigrationError,
    default_migrations_dir,
    load_migrations,
    migrate,
)


def test_rerun_applies_nothing(cluster) -> None:  # type: ignore[no-untyped-def]
    with psycopg.connect(cluster.owner_url) as owner:
        assert migrate(owner, default_migrations_dir()) == []
        names = [
            r[0] for r in owner.execute("SELECT name FROM memory.schema_migrations ORDER BY name")
        ]
    assert names == [m.name for m in load_migrations(default_migrations_dir())]


def test_changed_or_failing_migrations_stop_cleanly(cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path / "migrations"
    shutil.copytree(default_migrations_dir(), folder)
    first = sorted(folder.iterdir())[0]
    first.write_text(first.read_text() + "\n-- edited\n")
    with (
        psycopg.connect(cluster.owner_url) as owner,
        pytest.raises(MigrationError, match="changed after"),
    ):
        migrate(owner, folder)

    shutil.rmtree(folder)
    shutil.copytree(default_migrations_dir(), folder)
    (folder / "9998_good.sql").write_text("CREATE TABLE memory.probe_good (id int);")
    (folder / "9999_bad.sql").write_text("CREATE TABLE memory.probe_bad (id int); SELECT 1/0;")
    with psycopg.connect(cluster.owner_url) as owner:
        with pytest.raises(MigrationError, match=r"9999_bad\.sql failed"):
            migrate(owner, folder)
        # All or nothing: the good file before it is not half-applied either.
        assert owner.execute(
            "SELECT to_regclass('memory.probe_good'), to_regclass('memory.probe_bad')"
        ).fetchone() == (None, None)
        assert owner.execute(
            "SELECT count(*) FROM memory.schema_migrations WHERE name LIKE '999%'"
        ).fetchone() == (0,)

    (folder / "bad name.sql").write_text("SELECT 1;")
    with pytest.raises(MigrationError, match="file names"):
        load_migrations(folder)


def test_service_roles_run_without_jit(cluster) -> None:  # type: ignore[no-untyped-def]
    # Set per role by bootstrap: every session of each role starts with it.
    for url in (cluster.owner_url, cluster.runtime_url, cluster.auditor_url):
        with psycopg.connect(url) as conn:
            assert conn.execute("SHOW jit").fetchone() == ("off",)
