"""The data-access layer's boundaries, read from the source (no database).

Statements run only from ``sql_files.py``, ``db.py`` (request transactions) and
``migrate.py`` (migration files and composed role statements), in the server and in
the code around it (Lambda handlers, CLI, dev stack); every statement is a file
under ``sql/`` that some code names, and every name the code passes is a file.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "layers" / "core" / "memory_server"
STATEMENTS = {path.stem for path in (PACKAGE / "sql").glob("*.sql")}

# The layer: the only modules that may call execute.
LAYER = {"sql_files.py", "db.py", "migrate.py"}
# Pending: modules still to move their statements to sql_files (none left; an entry
# here must be removed once its module no longer calls execute).
PENDING: set[str] = set()

# Where a statement may be named: the server and the code that runs it.
CODE = [PACKAGE, ROOT / "bench", ROOT / "functions", ROOT / "local"]
# The layer's functions, and where each takes the statement's name.
NAME_ARGUMENT = {"query": 0, "cursor": 1, "one": 1, "rows": 1, "run": 1}
READ_NAME_ARGUMENT = 2  # Database.read(caller, deadline, name, params)


def _modules(*roots: Path) -> Iterator[tuple[str, ast.Module]]:
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            if ".venv" in path.parts or "__pycache__" in path.parts:
                continue
            relative = path.relative_to(root).as_posix()
            yield relative, ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _executes(tree: ast.Module) -> list[int]:
    """Lines that call ``.execute(`` or ``.executemany(`` on anything."""
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("execute", "executemany")
    ]


def _literal(args: list[ast.expr], index: int) -> str | None:
    if len(args) > index:
        arg = args[index]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            return arg.value
    return None


def _names_passed(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """Statement names given as literals: to the layer's functions (``sql_files.one``
    or an imported ``query``), to ``Database.read``, and as the first of a returned
    ``(name, params)`` pair (``resolve_statement``, a read's follow-up)."""
    for node in ast.walk(tree):
        name = None
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in NAME_ARGUMENT:
                if isinstance(func.value, ast.Name) and func.value.id == "sql_files":
                    name = _literal(node.args, NAME_ARGUMENT[func.attr])
            elif isinstance(func, ast.Name) and func.id in NAME_ARGUMENT:
                name = _literal(node.args, NAME_ARGUMENT[func.id])
            if isinstance(func, ast.Attribute) and func.attr == "read":
                name = _literal(node.args, READ_NAME_ARGUMENT)
            if name is not None:
                yield node.lineno, name
        elif isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple):
            name = _literal(node.value.elts, 0) if len(node.value.elts) == 2 else None
            if name is not None:
                yield node.lineno, name


def test_only_the_layer_executes_statements() -> None:
    offenders = {
        module: lines
        for module, tree in _modules(PACKAGE)
        if module not in LAYER | PENDING and (lines := _executes(tree))
    }
    assert offenders == {}, "run statements through sql_files (one, rows, run, cursor)"


def test_nothing_outside_the_server_executes_statements() -> None:
    """The Lambda handlers, the CLI and the dev stack (demo seed included) go through
    the layer too. The benchmarks (``bench/``) time statements of their own and are
    left out."""
    offenders = {
        f"{root.relative_to(ROOT).as_posix()}/{module}": lines
        for root in (ROOT / "functions", ROOT / "cli", ROOT / "local")
        for module, tree in _modules(root)
        if (lines := _executes(tree))
    }
    assert offenders == {}, "run statements through memory_server.sql_files"


def test_pending_modules_still_pending() -> None:
    """An allow-list entry outlives its reason silently otherwise."""
    trees = dict(_modules(PACKAGE))
    done = [module for module in sorted(PENDING) if not _executes(trees[module])]
    assert done == [], f"no longer calls execute: remove from PENDING: {done}"


def test_the_layer_exists() -> None:
    trees = dict(_modules(PACKAGE))
    assert trees.keys() >= LAYER | PENDING
    assert STATEMENTS  # the glob found the statements


def test_every_statement_is_named_in_the_code() -> None:
    literals = {
        node.value
        for _, tree in _modules(*CODE)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }
    assert sorted(STATEMENTS - literals) == [], "statements no code names (dead): delete them"


def test_every_name_passed_is_a_statement() -> None:
    missing = [
        f"{root.relative_to(ROOT).as_posix()}/{module}:{line}: {name}"
        for root in CODE
        for module, tree in _modules(root)
        for line, name in _names_passed(tree)
        if name not in STATEMENTS
    ]
    assert missing == [], "no sql/<name>.sql for these"


def test_the_name_checks_see_the_call_sites() -> None:
    """The checks above are only as good as their view of the call shapes in use."""
    seen = {name for root in CODE for _, tree in _modules(root) for _, name in _names_passed(tree)}
    for shape in (
        "admin_member",  # sql_files.one(conn, "admin_member", ...)
        "list_page",  # store.db.read(caller, deadline, "list_page", params)
        "hydrate_hits",  # a read's follow-up returns ("hydrate_hits", params)
        "resolve_address",  # resolve_statement returns ("resolve_address", params)
    ):
        assert shape in seen, shape
