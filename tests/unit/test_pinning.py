"""What the request path sends through RDS Proxy that may pin a client connection to
one database connection (read from the source; no database).

The forms are AWS's list for PostgreSQL ("Avoiding pinning an RDS Proxy", docs/deploy.md
"Connection pinning"): SET and parameter changes (``set_config``), advisory-lock
functions, sequence functions, temporary objects, cursors, LISTEN, DISCARD, LOAD,
prepared statements, and any statement text over 16 KB. The request path is every
statement the modules that run through the proxy name (``data/sql/*.sql``), the
functions of ``infra/schema/`` those statements, the policies and the triggers reach,
and ``data/pool.py`` (its inline statements and its connection options).

What remains is :data:`REMAINING`, each with the reason it stays; docs/deploy.md
states what it costs. A new form on the request path fails here: replace it with one
that does not pin (a row lock for an advisory lock), or add it to both.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from tests.unit.test_data_access import _names_passed

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "layers" / "core" / "memory_server" / "data"
SCHEMA = ROOT / "infra" / "schema"

# The data modules whose statements run on the runtime (or auditor) role's pooled
# connections, through the proxy; the others run on the owner's or the master's own
# connection, straight to the cluster (operator tasks, migrations, provisioning).
THROUGH_THE_PROXY = {
    "admin.py",
    "audit.py",
    "callers.py",
    "embeddings.py",  # also the backfill, on the owner's own connection
    "pool.py",
    "records.py",
    "remember_keys.py",
    "search.py",
}
DIRECT = {"__init__.py", "migrate.py", "operators.py", "provision.py", "statements.py"}
# Data modules that hold no database connection at all (they call another AWS service).
NO_DATABASE = {"bedrock_embedder.py"}

# Statement starts inside a body: after ';', a PL/pgSQL block keyword, or the text start.
_START = r"(?:^|;|\bBEGIN\b|\bTHEN\b|\bELSE\b|\bLOOP\b)\s*"
PINNING_FORMS: dict[str, re.Pattern[str]] = {
    "SET or RESET": re.compile(_START + r"(?:SET|RESET)\s", re.I),
    "set_config": re.compile(r"\bset_config\s*\(", re.I),
    "advisory lock": re.compile(r"\bpg_(?:try_)?advisory_\w*\s*\(", re.I),
    "sequence function": re.compile(r"\b(?:nextval|setval|currval|lastval)\s*\(", re.I),
    "temporary object": re.compile(r"\bCREATE\s+(?:GLOBAL\s+|LOCAL\s+)?TEMP(?:ORARY)?\b", re.I),
    "cursor": re.compile(
        r"\bDECLARE\s+\w+\s+(?:BINARY\s+|INSENSITIVE\s+|NO\s+|SCROLL\s+)*CURSOR\b", re.I
    ),
    "LISTEN": re.compile(r"\b(?:UN)?LISTEN\s", re.I),
    "DISCARD": re.compile(_START + r"DISCARD\s", re.I),
    "LOAD": re.compile(_START + r"LOAD\s", re.I),
    # (PL/pgSQL's EXECUTE of a dynamic statement is not one.)
    "prepared statement": re.compile(_START + r"(?:PREPARE\s+\w+|DEALLOCATE\s)", re.I),
}
# Pinning for every engine: a statement whose text is longer than this.
MAX_STATEMENT_BYTES = 16 * 1024

# What stays, and why: each is a transaction-local parameter (set_config(..., true)),
# gone at COMMIT; AWS's list does not say whether that pins (docs/deploy.md counts it
# as if it did).
REMAINING = {
    ("request_settings.sql", "set_config"): "the caller's view that row-level security reads",
    ("resolve_settings.sql", "set_config"): "caller resolution's statement timeout",
    ("publish_commit_async.sql", "set_config"): "the audit mark commits without a WAL flush",
    ("function search_by_meaning()", "set_config"): (
        "the vector index scan's hnsw.ef_search, per call, and no sequential scan for it"
    ),
}


def _without_comments(sql: str) -> str:
    return re.sub(r"--[^\n]*", "", sql)


def _statements(sql: str) -> Iterator[str]:
    """Top-level statements of a file: split on ';' outside quotes and dollar quotes."""
    text, start, i, tag = _without_comments(sql), 0, 0, None
    while i < len(text):
        if tag is not None:
            end = text.find(tag, i)
            i = len(text) if end < 0 else end + len(tag)
            tag = None
            continue
        char = text[i]
        dollar = re.match(r"\$\w*\$", text[i:])
        if dollar:
            tag, i = dollar.group(0), i + len(dollar.group(0))
        elif char == "'":
            end = text.find("'", i + 1)
            i = len(text) if end < 0 else end + 1
        elif char == ";":
            yield text[start:i].strip()
            start = i = i + 1
        else:
            i += 1
    if text[start:].strip():
        yield text[start:].strip()


_FUNCTION = re.compile(r"^CREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+(?:memory\.)?(\w+)\s*\(", re.I)


def _body(definition: str) -> str:
    """A function's body, without its header (whose SET clause is an attribute)."""
    dollar = re.search(r"\bAS\s+(\$\w*\$)", definition, re.I)
    if dollar:
        tag = dollar.group(1)
        return definition[dollar.end() : definition.find(tag, dollar.end())]
    returned = re.search(r"\b(?:RETURN|BEGIN\s+ATOMIC)\b", definition, re.I)
    assert returned is not None, definition[:200]
    return definition[returned.start() :]


def schema() -> tuple[dict[str, str], list[str]]:
    """The schema files' function bodies by name, and what applies to every request
    (policies, triggers, and the blocks that make policies)."""
    functions: dict[str, str] = {}
    always: list[str] = []
    for path in sorted(SCHEMA.glob("*.sql")):
        for statement in _statements(path.read_text(encoding="utf-8")):
            found = _FUNCTION.match(statement)
            if found:
                functions[found.group(1)] = functions.get(found.group(1), "") + _body(statement)
            elif re.match(r"^(?:CREATE\s+POLICY|CREATE\s+TRIGGER|DO)\b", statement, re.I):
                always.append(statement)
    return functions, always


def request_statements() -> dict[str, str]:
    """The statement files the proxied modules name, by file name."""
    modules = {path.name for path in DATA.glob("*.py")}
    assert modules == THROUGH_THE_PROXY | DIRECT | NO_DATABASE, (
        "say whether a new data module runs through RDS Proxy",
        modules ^ (THROUGH_THE_PROXY | DIRECT | NO_DATABASE),
    )
    names = {
        name
        for module in THROUGH_THE_PROXY
        for _, name in _names_passed(ast.parse((DATA / module).read_text(encoding="utf-8")))
    }
    return {f"{name}.sql": (DATA / "sql" / f"{name}.sql").read_text() for name in sorted(names)}


def reached(roots: list[str], functions: dict[str, str]) -> set[str]:
    """The schema functions that ``roots`` call, directly or through each other."""
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        text = todo.pop()
        for name, body in functions.items():
            if name not in seen and re.search(rf"\b{name}\s*\(", text):
                seen.add(name)
                todo.append(body)
    return seen


def pinning_forms(text: str) -> list[str]:
    text = _without_comments(text)
    return [form for form, pattern in PINNING_FORMS.items() if pattern.search(text)]


def _pool_strings() -> list[str]:
    tree = ast.parse((DATA / "pool.py").read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, bytes):
            found.append(node.value.decode())
    return found


def test_the_request_path_gains_no_pinning_statement() -> None:
    statements = request_statements()
    functions, always = schema()
    on_path = reached([*statements.values(), *always], functions)
    found: set[tuple[str, str]] = set()
    for name, text in statements.items():
        found |= {(name, form) for form in pinning_forms(text)}
    for name in sorted(on_path):
        found |= {(f"function {name}()", form) for form in pinning_forms(functions[name])}
    for text in _pool_strings():
        found |= {("data/pool.py", form) for form in pinning_forms(text)}
    assert found == set(REMAINING), (
        "the request path's pinning-prone statements changed: replace a new one with a "
        "form RDS Proxy does not pin on, or list it in REMAINING and in docs/deploy.md "
        f"('Connection pinning'); new: {sorted(found - set(REMAINING))}, "
        f"gone: {sorted(set(REMAINING) - found)}"
    )


def test_the_scan_sees_the_request_path() -> None:
    """The scan is not vacuous: it finds the statements every request sends, the
    functions they and the policies call, and each form in a statement that has it."""
    statements = request_statements()
    assert {"request_settings.sql", "lock_membership.sql", "resolve_caller.sql"} <= set(statements)
    assert "operator_lock_person.sql" not in statements  # the owner's connection
    functions, always = schema()
    on_path = reached([*statements.values(), *always], functions)
    assert {"lock_membership", "resolve_caller", "can_see", "is_admin"} <= on_path
    assert "lock_membership" in functions and "FOR KEY SHARE" in functions["lock_membership"]
    examples = {
        "SET or RESET": "SET statement_timeout = 5",
        "set_config": "SELECT set_config('a.b', 'c', false)",
        "advisory lock": "SELECT pg_advisory_xact_lock_shared(1)",
        "sequence function": "SELECT nextval('s')",
        "temporary object": "CREATE TEMP TABLE t (x int)",
        "cursor": "DECLARE c NO SCROLL CURSOR FOR SELECT 1",
        "LISTEN": "LISTEN channel",
        "DISCARD": "DISCARD ALL",
        "LOAD": "LOAD 'auto_explain'",
        "prepared statement": "PREPARE q AS SELECT 1",
    }
    assert {form: pinning_forms(text) for form, text in examples.items()} == {
        form: [form] for form in examples
    }
    # Not pinning forms: a column update, a function's SET clause, a row lock, a
    # PL/pgSQL dynamic statement.
    assert pinning_forms("UPDATE t SET x = 1 WHERE y = 2") == []
    assert pinning_forms("BEGIN EXECUTE format('DROP POLICY %I', p); END") == []
    assert pinning_forms(_body(
        "CREATE FUNCTION f() RETURNS int LANGUAGE sql SET search_path = memory RETURN 1"
    )) == []  # fmt: skip
    assert pinning_forms("SELECT 1 FROM memberships WHERE x = 1 FOR KEY SHARE") == []


def test_no_request_statement_is_long_enough_to_pin() -> None:
    long = {
        name: len(text.encode())
        for name, text in request_statements().items()
        if len(text.encode()) > MAX_STATEMENT_BYTES
    }
    assert long == {}


def test_the_pool_prepares_no_server_side_statement() -> None:
    """psycopg prepares a statement on the server after a few executions unless told
    not to; a prepared statement pins (AWS's list). The unnamed statements of the
    extended protocol, which every parameterized query uses, do not (RDS Proxy
    multiplexes them since November 2023)."""
    source = (DATA / "pool.py").read_text(encoding="utf-8")
    assert re.search(r'"prepare_threshold":\s*None', source)
