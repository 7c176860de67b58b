"""The migrator: ordered, recorded, idempotent, refusing rewritten history, and plain
about a database made by the migrations from before the baseline."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from memory_server.data.migrate import (
    SCHEMA_VERSION,
    MigrationError,
    SchemaAhead,
    SchemaVersionError,
    default_migrations_dir,
    load_migrations,
    load_schema_files,
    migrate,
    require_version,
    schema_dir,
    version_of,
)
from memory_server.data.pool import Database
from memory_server.edge.runtime import require_schema

from tests.integration.conftest import copy_infra

# What memory.schema_migrations of a database made before the baseline lists (a `.dev/`
# of `make dev`, say): the twenty migrations folded into 0001_baseline.sql (0011 was
# never there).
BEFORE_THE_BASELINE = [
    "0001_core_schema.sql",
    "0002_access_predicate.sql",
    "0003_row_level_security.sql",
    "0004_functions_and_grants.sql",
    "0005_audit_publishing.sql",
    "0006_workspace_scoped_search.sql",
    "0007_administration.sql",
    "0008_bounded_search.sql",
    "0009_search_newest_first.sql",
    "0010_search_index_without_pending_list.sql",
    "0012_hardening.sql",
    "0013_any_term_search.sql",
    "0014_provenance_handles.sql",
    "0015_search_plans.sql",
    "0016_cached_function_plans.sql",
    "0017_cached_write_plans.sql",
    "0018_search_scoring_parameters.sql",
    "0019_search_first_segments.sql",
    "0020_writes_in_one_statement.sql",
]


def test_rerun_applies_nothing(cluster) -> None:  # type: ignore[no-untyped-def]
    with psycopg.connect(cluster.owner_url) as owner:
        assert migrate(owner, default_migrations_dir()) == []
        names = [
            r[0] for r in owner.execute("SELECT name FROM memory.schema_migrations ORDER BY name")
        ]
        files = [r[0] for r in owner.execute("SELECT name FROM memory.schema_files ORDER BY 1")]
    assert names == [m.name for m in load_migrations(default_migrations_dir())]
    assert files == [f.name for f in load_schema_files(schema_dir(default_migrations_dir()))]


def test_changed_or_failing_migrations_stop_cleanly(cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    folder = copy_infra(tmp_path / "edited")
    first = sorted(folder.iterdir())[0]
    first.write_text(first.read_text() + "\n-- edited\n")
    with (
        psycopg.connect(cluster.owner_url) as owner,
        pytest.raises(MigrationError, match="changed after"),
    ):
        migrate(owner, folder)

    folder = copy_infra(tmp_path / "failing")
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


def test_a_database_made_before_the_baseline_is_refused_plainly(scratch_database: str) -> None:
    with psycopg.connect(scratch_database) as owner:
        owner.execute("DELETE FROM memory.schema_migrations")
        for name in BEFORE_THE_BASELINE:
            owner.execute(
                "INSERT INTO memory.schema_migrations (name, checksum) VALUES (%s, 'x')", (name,)
            )
        owner.commit()
        with pytest.raises(MigrationError) as refused:
            migrate(owner, default_migrations_dir())
    message = str(refused.value)
    assert "0001_core_schema.sql" in message and "16 more" in message
    assert "before the migrations were folded into 0001_baseline.sql" in message
    assert "stopping `make dev`" in message and "`rm -rf .dev`" in message
    with psycopg.connect(scratch_database) as owner:  # and nothing was applied on top
        assert owner.execute(
            "SELECT count(*) FROM memory.schema_migrations WHERE name = '0001_baseline.sql'"
        ).fetchone() == (0,)


def test_service_roles_run_without_jit(cluster) -> None:  # type: ignore[no-untyped-def]
    # Set per role by bootstrap: every session of each role starts with it.
    for url in (cluster.owner_url, cluster.runtime_url, cluster.auditor_url):
        with psycopg.connect(url) as conn:
            assert conn.execute("SHOW jit").fetchone() == ("off",)


def test_the_schema_version_is_the_newest_migration(cluster) -> None:  # type: ignore[no-untyped-def]
    newest = max(version_of(m.name) for m in load_migrations(default_migrations_dir()))
    assert newest == SCHEMA_VERSION
    database = Database(cluster.runtime_url, min_size=1, max_size=1)
    try:
        assert database.schema_version() == SCHEMA_VERSION
        require_schema(database)  # what the service does at start: nothing to refuse
    finally:
        database.close()


def test_a_version_other_than_this_releases_names_the_way_out() -> None:
    require_version(SCHEMA_VERSION)
    with pytest.raises(SchemaVersionError, match="predates schema versions") as old:
        require_version(None)
    assert "Run the migrations first" in str(old.value)
    with pytest.raises(SchemaVersionError, match=f"at version {SCHEMA_VERSION - 1};"):
        require_version(SCHEMA_VERSION - 1)
    with pytest.raises(SchemaVersionError, match="newer than the version") as new:
        require_version(SCHEMA_VERSION + 1)
    assert "roll forward" in str(new.value) and "restore the snapshot" in str(new.value)


def test_a_database_a_later_release_migrated_is_left_alone(scratch_database: str) -> None:
    later = f"{SCHEMA_VERSION + 1:04d}_from_a_later_release.sql"
    with psycopg.connect(scratch_database) as owner:
        owner.execute(
            "INSERT INTO memory.schema_migrations (name, checksum) VALUES (%s, 'x')", (later,)
        )
        # A schema file that differs, as a later release's would: not applied over it.
        owner.execute("UPDATE memory.schema_files SET checksum = 'later' WHERE name LIKE '10_%'")
        owner.commit()
        with pytest.raises(SchemaAhead, match=f"at version {SCHEMA_VERSION + 1}"):
            migrate(owner, default_migrations_dir())
        owner.rollback()
        assert owner.execute(
            "SELECT checksum FROM memory.schema_files WHERE name LIKE '10_%'"
        ).fetchone() == ("later",)
        database = Database(scratch_database, min_size=1, max_size=1)
        try:
            assert database.schema_version() == SCHEMA_VERSION + 1
            with pytest.raises(SchemaVersionError, match="newer than the version"):
                require_schema(database)
        finally:
            database.close()


def test_a_database_without_the_version_function_is_refused_at_start(
    scratch_database: str,
) -> None:
    with psycopg.connect(scratch_database) as owner:
        owner.execute("DROP FUNCTION memory.schema_version()")
        owner.commit()
    database = Database(scratch_database, min_size=1, max_size=1)
    try:
        assert database.schema_version() is None
        with pytest.raises(SchemaVersionError, match="predates schema versions"):
            require_schema(database)
    finally:
        database.close()
