"""The data-access package's boundaries, read from the source (no database).

Only ``memory_server.data`` executes statements or holds statement names: every other module of the server, the Lambda
handlers, the CLI and the dev stack call its typed functions. Every statement is a
file under ``data/sql/`` that the package names, and every name it passes is a file.
No statement function takes a callback (``then=``): a request's steps are ordered by
the operation, the data layer never calls back up.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "layers" / "core" / "memory_server"
DATA = PACKAGE / "data"
STATEMENTS = {path.stem for path in (DATA / "sql").glob("*.sql")}

# How statements are named inside the package: Transaction.query/execute(name, ...),
# statements.cursor/one/rows/run(conn, name, ...), statements.query(name).
NAME_ARGUMENT = {"query": 0, "execute": 0, "cursor": 1, "one": 1, "rows": 1, "run": 1}


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


def _names_passed(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """String literals passed where a statement name goes."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        attr = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if attr in NAME_ARGUMENT and len(node.args) > NAME_ARGUMENT[attr]:
            arg = node.args[NAME_ARGUMENT[attr]]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                yield node.lineno, arg.value


def _in_data(module: str) -> bool:
    return module.startswith("data/")


def test_only_the_data_package_executes_statements() -> None:
    offenders = {
        module: lines
        for module, tree in _modules(PACKAGE)
        if not _in_data(module) and (lines := _executes(tree))
    }
    assert offenders == {}, "run statements through a typed function of memory_server.data"


def test_nothing_outside_the_server_executes_statements() -> None:
    """The Lambda handlers, the CLI and the dev stack (demo seed included) go through
    the package too. The benchmarks (``bench/``) time statements of their own."""
    offenders = {
        f"{root.relative_to(ROOT).as_posix()}/{module}": lines
        for root in (ROOT / "functions", ROOT / "cli", ROOT / "local")
        for module, tree in _modules(root)
        if (lines := _executes(tree))
    }
    assert offenders == {}, "run statements through a typed function of memory_server.data"


def test_statement_names_stay_in_the_package() -> None:
    """Outside ``data/`` no code passes a statement's name (the benchmarks explain a
    few statements by name, and are left out)."""
    offenders = [
        f"{root.relative_to(ROOT).as_posix()}/{module}:{line}: {name}"
        for root in (PACKAGE, ROOT / "functions", ROOT / "cli", ROOT / "local")
        for module, tree in _modules(root)
        if not (root == PACKAGE and _in_data(module))
        for line, name in _names_passed(tree)
        if name in STATEMENTS
    ]
    assert offenders == []


def test_every_statement_is_named_in_the_package() -> None:
    literals = {
        node.value
        for _, tree in _modules(DATA)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }
    assert STATEMENTS
    assert sorted(STATEMENTS - literals) == [], "statements no code names (dead): delete them"


def test_every_name_passed_is_a_statement() -> None:
    missing = [
        f"{module}:{line}: {name}"
        for module, tree in _modules(DATA)
        for line, name in _names_passed(tree)
        if name not in STATEMENTS and not name.startswith(("BEGIN", "COMMIT"))
    ]
    assert missing == [], "no data/sql/<name>.sql for these"


def test_the_name_checks_see_the_call_sites() -> None:
    """The checks above are only as good as their view of the call shapes in use."""
    seen = {name for _, tree in _modules(DATA) for _, name in _names_passed(tree)}
    for shape in (
        "list_page",  # tx.query("list_page", params, every)
        "store_idempotency_result",  # tx.execute(name, params)
        "resolve_settings",  # statements.cursor(conn, name, params)
    ):
        assert shape in seen, shape


def test_no_statement_function_takes_a_callback() -> None:
    """``then=`` (a follow-up computed by the caller mid-transaction) is gone for good."""
    offenders = [
        f"{module}:{node.lineno}"
        for module, tree in _modules(DATA)
        for node in ast.walk(tree)
        if isinstance(node, ast.arg) and node.arg == "then"
    ]
    assert offenders == []
