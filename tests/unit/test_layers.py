"""The package layout is the architecture (docs/architecture.md): a request walks one
way, edge → protocol or admin → gateway checks → operations → data → SQL, and each
package imports only the packages below it; the domain's rules and types are at the
bottom and import nothing of the server. Read from the source, no imports."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "layers" / "core" / "memory_server"
# Top to bottom: a package may import any package after it, never one before it.
ORDER = ["edge", "signin", "admin", "protocol", "gateway", "operations", "data", "domain"]


def _imports(path: Path) -> Iterator[tuple[int, str]]:
    """``memory_server`` modules a file imports at run time (``TYPE_CHECKING`` blocks
    are left out: they are types only)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped |= {id(child) for child in ast.walk(node)}
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "memory_server":
                for alias in node.names:
                    yield node.lineno, f"memory_server.{alias.name}"
            elif node.module.startswith("memory_server."):
                yield node.lineno, node.module
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("memory_server."):
                    yield node.lineno, alias.name


def _package(module_path: Path) -> str:
    parts = module_path.relative_to(PACKAGE).parts
    return parts[0] if len(parts) > 1 else ""


def test_every_module_is_in_a_package_of_the_order() -> None:
    loose = sorted(
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if _package(path) not in ORDER and path.name != "__init__.py"
    )
    assert loose == [], "put these in a package of ORDER (and say where in the docs)"
    assert {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()} == set(ORDER)


def test_no_package_imports_a_package_above_it() -> None:
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = _package(path)
        if source not in ORDER:
            continue
        for line, module in _imports(path):
            target = module.split(".")[1]
            if target in ORDER and ORDER.index(target) < ORDER.index(source):
                upward.append(f"{path.relative_to(PACKAGE).as_posix()}:{line} imports {module}")
    assert upward == []


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    """The walk above finds imports in each form the code uses."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from memory_server.edge import routing\n"
        "from memory_server import protocol\n"
        "import memory_server.admin.http\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from memory_server.signin import verify\n"
    )
    assert [module for _, module in _imports(probe)] == [
        "memory_server.edge",
        "memory_server.protocol",
        "memory_server.admin.http",
    ]
