"""What ships where: the Lambda layer and functions never import the CLI or the
dev-only package; connection strings keep their form when a role is swapped in."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from memory_server.data.provision import database_of, with_database, with_role

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = [
    *sorted((ROOT / "layers" / "core" / "memory_server").rglob("*.py")),
    *sorted((ROOT / "functions").glob("*/app.py")),
]


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(ROOT)))
def test_shipped_code_imports_neither_the_cli_nor_local_support(path: Path) -> None:
    outside = {
        name
        for name in imported_modules(path)
        if name.split(".")[0] in ("memory_cli", "memory_local", "tests", "bench")
    }
    assert outside == set()


def test_a_url_stays_a_url_with_its_credentials_encoded() -> None:
    admin = "postgresql://postgres:pw@127.0.0.1:5432/postgres?sslmode=require"
    assert (
        with_role(admin, "memory_owner", "a/b@c", "memory")
        == "postgresql://memory_owner:a%2Fb%40c@127.0.0.1:5432/memory?sslmode=require"
    )
    assert with_database(admin, "other") == (
        "postgresql://postgres:pw@127.0.0.1:5432/other?sslmode=require"
    )
    assert database_of(admin) == "postgres"


def test_a_conninfo_stays_a_conninfo() -> None:
    admin = "host=db.internal port=5432 dbname=memory user=master password=x sslmode=require"
    owner = with_role(admin, "memory_owner", "p w")
    assert "user=memory_owner" in owner and "password='p w'" in owner
    assert "host=db.internal" in owner and "sslmode=require" in owner
    assert database_of(owner) == "memory"
    assert database_of(with_database(admin, "other")) == "other"
