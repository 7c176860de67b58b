"""The schema's SQL: each object defined in one place, a fresh database holding what
the recorded catalog holds, the current-state files applied only when something
changed and all or nothing, and limits that live only in ``memory_server.domain.limits``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import psycopg
import pytest
from memory_server.data import migrate
from memory_server.data.migrate import MigrationError
from memory_server.domain import limits

from tests.integration.conftest import INFRA, copy_infra
from tests.integration.schema_catalog import CATALOG, Catalog, catalog, differences

MIGRATIONS = INFRA / "migrations"
SCHEMA = INFRA / "schema"
_COMMENT = re.compile(r"--[^\n]*")
_FUNCTION = re.compile(r"\bCREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+(?:memory\.)?(\w+)\s*\(", re.I)
_NOT_A_TABLE_CHANGE = re.compile(
    r"\bCREATE\s+(?:OR\s+REPLACE\s+)?(?:FUNCTION|PROCEDURE|POLICY|TRIGGER|RULE|"
    r"(?:MATERIALIZED\s+)?VIEW)\b|\bALTER\s+(?:FUNCTION|POLICY|TRIGGER|VIEW)\b|"
    r"\bON\s+(?:ALL\s+)?FUNCTIONS?\b",
    re.I,
)
_TABLE_CHANGE = re.compile(
    r"\b(?:CREATE|ALTER|DROP)\s+(?:TABLE|SEQUENCE|TYPE|DOMAIN)\b|"
    r"\bCREATE\s+(?:UNIQUE\s+)?INDEX\s+\w+",
    re.I,
)


def code(path: Path) -> str:
    """A file's SQL without its comments."""
    return _COMMENT.sub("", path.read_text(encoding="utf-8"))


def sql_files() -> list[Path]:
    return sorted(INFRA.rglob("*.sql"))


# -- where each object is defined ------------------------------------------------------


def functions_defined(paths: list[Path]) -> dict[str, list[str]]:
    """Function name -> the files defining it, once per definition."""
    found: dict[str, list[str]] = {}
    for path in paths:
        for name in _FUNCTION.findall(code(path)):
            found.setdefault(name, []).append(f"{path.parent.name}/{path.name}")
    return found


def test_every_function_is_defined_once_in_infra() -> None:
    defined = functions_defined(sql_files())
    assert defined, "the pattern found no function at all"
    repeated = {name: files for name, files in defined.items() if len(files) > 1}
    assert repeated == {}, "a function has one definition, its current one, in infra/schema"


def test_the_check_for_repeated_definitions_sees_them(tmp_path: Path) -> None:
    (tmp_path / "a.sql").write_text("CREATE FUNCTION memory.f(x int) RETURNS int RETURN x;")
    (tmp_path / "b.sql").write_text("CREATE OR REPLACE FUNCTION f (x int) RETURNS int\nRETURN x;")
    assert [len(files) for files in functions_defined(sorted(tmp_path.iterdir())).values()] == [2]


def not_table_changes(text: str) -> list[str]:
    return [m.group(0) for m in _NOT_A_TABLE_CHANGE.finditer(text)]


def test_numbered_migrations_hold_table_changes_only() -> None:
    """Functions, procedures, policies, triggers, views, rules and grants on functions
    are current-state files of infra/schema, not history."""
    found = {
        path.name: hits
        for path in sorted(MIGRATIONS.glob("*.sql"))
        if (hits := not_table_changes(code(path)))
    }
    assert found == {}
    for statement in (
        "CREATE OR REPLACE FUNCTION f() RETURNS int RETURN 1;",
        "CREATE POLICY p ON t USING (true);",
        "CREATE TRIGGER t AFTER INSERT ON x FOR EACH ROW EXECUTE FUNCTION f();",
        "CREATE VIEW v AS SELECT 1;",
        "GRANT EXECUTE ON FUNCTION f() TO memory_runtime;",
        "ALTER FUNCTION f() SET enable_seqscan = off;",
    ):
        assert not_table_changes(statement), statement  # the check sees each kind


def test_schema_files_change_no_table() -> None:
    """Tables, columns, constraints, sequences and types are numbered migrations. The
    two indexes made in infra/schema are expressions over its functions, which they
    must follow when those change: the words' GIN index (50_search_index.sql) and the
    views' btree over the cells (65_search_vectors.sql). A numbered migration could
    not make them: on a new database it runs before the functions exist."""
    found = [
        (path.name, m.group(0))
        for path in sorted(SCHEMA.glob("*.sql"))
        for m in _TABLE_CHANGE.finditer(code(path))
    ]
    assert found == [
        ("50_search_index.sql", "CREATE INDEX search_documents_document"),
        ("65_search_vectors.sql", "CREATE INDEX search_documents_view"),
    ]


# -- what a fresh database holds ---------------------------------------------------------

# Where a database built from infra/ deliberately differs from catalog.json, and why:
# empty once the catalog is recorded again (tests/integration/schema_catalog.py) after
# a reviewed change to the schema. Parallel work lists its differences here until then.
DELIBERATE: dict[str, str] = {}


def recorded_catalog() -> Catalog:
    recorded: Catalog = json.loads(CATALOG.read_text(encoding="utf-8"))
    return recorded


def test_a_fresh_database_holds_the_recorded_catalog(cluster) -> None:  # type: ignore[no-untyped-def]
    with psycopg.connect(cluster.owner_url) as owner:
        found = differences(recorded_catalog(), catalog(owner))
    unexpected = [line for line in found if line not in DELIBERATE]
    gone = [line for line in DELIBERATE if line not in found]
    assert unexpected == [], "differs from catalog.json:\n" + "\n".join(unexpected)
    assert gone == [], "listed as deliberate but no longer different:\n" + "\n".join(gone)


def test_the_comparison_sees_a_changed_function(cluster) -> None:  # type: ignore[no-untyped-def]
    with psycopg.connect(cluster.owner_url) as owner:
        current = catalog(owner)
    changed = json.loads(json.dumps(current))
    changed["functions"]["can_see(uuid,uuid,text)"]["body"] = "0"
    changed["policies"].pop("memories.runtime_select")
    assert differences(current, changed) == [
        "functions can_see(uuid,uuid,text): differs in body",
        "policies memories.runtime_select: missing",
    ]


# -- applying the current-state files ------------------------------------------------------


def ledger(owner: psycopg.Connection) -> dict[str, tuple[str, object]]:
    rows = owner.execute("SELECT name, checksum, applied_at FROM memory.schema_files").fetchall()
    return {name: (checksum, applied_at) for name, checksum, applied_at in rows}


def function_source(owner: psycopg.Connection, name: str) -> str:
    row = owner.execute(
        "SELECT coalesce(pg_get_function_sqlbody(oid), prosrc) FROM pg_proc "
        "WHERE proname = %s AND pronamespace = 'memory'::regnamespace",
        (name,),
    ).fetchone()
    assert row is not None, name
    return str(row[0])


def index_oid(owner: psycopg.Connection) -> int:
    row = owner.execute("SELECT 'memory.search_documents_document'::regclass::oid").fetchone()
    assert row is not None
    return int(row[0])


SCHEMA_FILES = [path.name for path in sorted(SCHEMA.glob("*.sql"))]


def test_a_rerun_applies_no_schema_file(scratch_database: str) -> None:
    with psycopg.connect(scratch_database) as owner:
        before, index = ledger(owner), index_oid(owner)
        assert sorted(before) == SCHEMA_FILES
        assert migrate.migrate(owner, MIGRATIONS) == []
        assert ledger(owner) == before  # not applied again: same time, same checksums
        assert index_oid(owner) == index  # the search index is not made again


def test_a_changed_file_applies_every_file_again(scratch_database: str, tmp_path: Path) -> None:
    folder = copy_infra(tmp_path)
    caller = migrate.schema_dir(folder) / "20_caller.sql"
    caller.write_text(caller.read_text().replace("no longer a member", "not a member now"))
    with psycopg.connect(scratch_database) as owner:
        before, index = ledger(owner), index_oid(owner)
        assert migrate.migrate(owner, folder) == SCHEMA_FILES
        assert "not a member now" in function_source(owner, "lock_membership")
        after = ledger(owner)
        changed = [name for name in SCHEMA_FILES if after[name][0] != before[name][0]]
        assert changed == ["20_caller.sql"]
        assert all(after[name][1] != before[name][1] for name in SCHEMA_FILES)  # all applied
        # The search index's functions did not change: the index is kept.
        assert index_oid(owner) == index
        assert migrate.migrate(owner, folder) == []


def test_a_failing_file_is_named_and_rolls_everything_back(
    scratch_database: str, tmp_path: Path
) -> None:
    folder = copy_infra(tmp_path)
    (folder / "0002_probe.sql").write_text("CREATE TABLE probe (id int);")
    caller = migrate.schema_dir(folder) / "20_caller.sql"
    caller.write_text(caller.read_text().replace("no longer a member", "not a member now"))
    writes = migrate.schema_dir(folder) / "40_writes.sql"
    writes.write_text(writes.read_text() + "\nSELECT 1/0;\n")
    with psycopg.connect(scratch_database) as owner:
        before = ledger(owner)
        with pytest.raises(MigrationError, match=r"^40_writes\.sql failed: division by zero"):
            migrate.migrate(owner, folder)
        # Nothing of the run stays: the migration before, the schema file before.
        assert owner.execute("SELECT to_regclass('memory.probe')").fetchone() == (None,)
        assert owner.execute(
            "SELECT count(*) FROM memory.schema_migrations WHERE name = '0002_probe.sql'"
        ).fetchone() == (0,)
        assert "no longer a member" in function_source(owner, "lock_membership")
        assert ledger(owner) == before


def test_a_function_no_file_defines_is_refused(scratch_database: str, tmp_path: Path) -> None:
    """A function taken out of the files, or whose arguments changed, would stay in the
    database, callable; the files must drop it."""
    folder = copy_infra(tmp_path)
    admin = migrate.schema_dir(folder) / "70_admin.sql"
    admin.write_text(admin.read_text() + "\n-- edited\n")
    with psycopg.connect(scratch_database) as owner:
        owner.execute("CREATE FUNCTION memory.leftover(n integer) RETURNS integer RETURN n")
        owner.execute("CREATE FUNCTION memory.is_admin(n integer) RETURNS integer RETURN n")
        owner.commit()
        with pytest.raises(MigrationError, match=r"\['is_admin', 'leftover'\]"):
            migrate.migrate(owner, folder)
        admin.write_text(admin.read_text() + "DROP FUNCTION IF EXISTS leftover(integer);\n")
        admin.write_text(admin.read_text() + "DROP FUNCTION IF EXISTS is_admin(integer);\n")
        assert migrate.migrate(owner, folder) == SCHEMA_FILES


# -- limits: in memory_server.domain.limits only --------------------------------------------------


def test_a_changed_limit_applies_the_schema_again_and_remakes_the_index(
    scratch_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with psycopg.connect(scratch_database) as owner:
        index = index_oid(owner)
        assert "2.2" in function_source(owner, "search_bm25")  # k1 + 1
        monkeypatch.setattr(limits, "SEARCH_BM25_K1", 1.5)
        assert migrate.migrate(owner, MIGRATIONS) == SCHEMA_FILES
        assert "2.5" in function_source(owner, "search_bm25")
        # The index's entries are banded by the BM25 factor: they are computed again.
        assert index_oid(owner) != index
        index = index_oid(owner)
        monkeypatch.undo()
        assert migrate.migrate(owner, MIGRATIONS) == SCHEMA_FILES
        assert "2.2" in function_source(owner, "search_bm25")
        assert index_oid(owner) != index


# Each limit the schema files name, and another value for it.
SCHEMA_LIMITS = {
    "SEARCH_BM25_K1": 1.3,
    "SEARCH_BM25_B": 0.5,
    "SEARCH_BM25_REFERENCE_LENGTH": 100,
    "SEARCH_TIER_CEILINGS": (0.5, 1.0, 1.5),
    "SEARCH_PRIOR_WEIGHT": 0.125,
    "SEARCH_PRIOR_HALF_LIFE_DAYS": 30,
    "SEARCH_RARE_WORD_RECORDS": 64,
    "SEARCH_SEGMENTS_FIRST": 3,
    "SEARCH_SEGMENTS_AFTER": 8,
}


def rendered() -> dict[str, str]:
    return {f.name: f.text for f in migrate.load_schema_files(SCHEMA)}


@pytest.mark.parametrize("name", sorted(SCHEMA_LIMITS))
def test_each_limit_the_schema_names_changes_what_is_applied(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = rendered()
    monkeypatch.setattr(limits, name, SCHEMA_LIMITS[name])
    after = rendered()
    changed = {n for n in after if after[n] != before[n]}
    assert changed and changed <= {"50_search_index.sql", "60_search.sql"}


def test_every_value_the_files_name_is_put_in() -> None:
    texts = rendered()
    assert not [name for name, text in texts.items() if "{{" in text]
    with pytest.raises(MigrationError, match=r"10_x\.sql: no value for \['NO_SUCH_LIMIT'\]"):
        migrate.render("10_x.sql", "SELECT {{NO_SUCH_LIMIT}};", migrate.schema_values())


# Numbers in the schema files that equal a value limits owns but are not a copy of it.
COINCIDENCES = {
    ("60_search.sql", "'{0.25,0,0.5,0.75}'"): (
        "ts_rank_cd's weights for body, -, path and title (1, 0, 2 and 3, quartered)"
    ),
    ("20_caller.sql", "bit(64)"): "an advisory lock key is 64 bits",
}


def literal_copies(values: dict[str, str]) -> list[str]:
    """Where a schema file holds, outside comments, a number equal to one of ``values``
    (a limit, or a value computed from limits): ``file:line: number (limit)``. Numbers
    of one digit are too common to tell; those limits are checked where they are used."""
    numbers = {
        number: name
        for name, value in values.items()
        for number in re.findall(r"\d+(?:\.\d+)?", value)
        if len(number) > 1
    }
    pattern = re.compile(r"(?<![\w.\[])(\d+(?:\.\d+)?)(?![\w.\]])")
    found = []
    for path in sorted(SCHEMA.glob("*.sql")):
        for number, line in enumerate(code(path).splitlines(), 1):
            allowed = [snippet for file, snippet in COINCIDENCES if file == path.name]
            for snippet in allowed:
                line = line.replace(snippet, "")
            for match in pattern.finditer(line):
                if match.group(1) in numbers:
                    found.append(
                        f"{path.name}:{number}: {match.group(1)} ({numbers[match.group(1)]})"
                    )
    return found


def owned_values() -> dict[str, str]:
    return {
        **migrate.schema_values(),
        "SEARCH_BM25_K1": repr(limits.SEARCH_BM25_K1),
        "SEARCH_BM25_B": repr(limits.SEARCH_BM25_B),
    }


def test_no_schema_file_copies_a_limit() -> None:
    assert literal_copies(owned_values()) == []
    # Where a one-digit limit is used, a name in double braces stands, not a number.
    batch = [line for line in code(SCHEMA / "60_search.sql").splitlines() if "batch :=" in line]
    assert batch and not re.search(r"\bTHEN \d", batch[0])


def test_the_copy_check_finds_a_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for path in SCHEMA.glob("*.sql"):
        (tmp_path / path.name).write_text(path.read_text())
    search = tmp_path / "60_search.sql"
    search.write_text(
        search.read_text()
        .replace("{{SEARCH_RARE_WORD_RECORDS}}", "128")
        .replace("{{SEARCH_PRIOR_WEIGHT}}::double", "0.25::double")
    )
    monkeypatch.setattr(f"{__name__}.SCHEMA", tmp_path)
    copies = literal_copies(owned_values())
    assert [c.split(": ", 1)[1] for c in copies] == [
        "0.25 (SEARCH_PRIOR_WEIGHT)",
        "128 (SEARCH_RARE_WORD_RECORDS)",
    ]


def test_the_baseline_checks_the_bounds_limits_owns(cluster) -> None:  # type: ignore[no-untyped-def]
    """memories checks path and body bounds again; a changed limit needs a migration
    that changes the constraint too."""
    with psycopg.connect(cluster.owner_url) as owner:
        checks = dict(
            owner.execute(
                "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
                "WHERE conrelid = 'memory.memories'::regclass AND contype = 'c'"
            ).fetchall()
        )
    assert checks["memories_path_check"] == (
        f"CHECK ((octet_length(path) <= {limits.PATH_MAX_BYTES}))"
    )
    assert checks["memories_body_check"] == (
        f"CHECK ((octet_length(body) <= {limits.CONTENT_MAX_BYTES}))"
    )
