"""One limits module, and nothing in it unused (read from the source, no imports)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMITS = ROOT / "layers" / "core" / "memory_server" / "domain" / "limits.py"
# The product's code: the Lambda layer, the Lambda handlers, the CLI, the dev stack.
CODE = [ROOT / "layers", ROOT / "functions", ROOT / "cli", ROOT / "local"]


def constants() -> list[str]:
    tree = ast.parse(LIMITS.read_text(encoding="utf-8"))
    names = []
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        names += [t.id for t in targets if isinstance(t, ast.Name) and t.id.isupper()]
    return names


def test_every_limit_is_read_somewhere() -> None:
    text = "\n".join(
        path.read_text(encoding="utf-8")
        for root in CODE
        for path in sorted(root.rglob("*.py"))
        if path != LIMITS and "__pycache__" not in path.parts
    )
    unused = [name for name in constants() if not re.search(rf"\b{name}\b", text)]
    assert constants() and unused == [], "unused limits: use them or delete them"


# A constant of the Lambda layer or a Lambda handler whose name says it is a limit
# (a size, a count, a duration, a budget) belongs in limits.py.
LIMIT_WORDS = frozenset(
    [
        "MAX",
        "MIN",
        "LIMIT",
        "TTL",
        "TIMEOUT",
        "BATCH",
        "BUDGET",
        "BYTES",
        "CHARS",
        "ITEMS",
        "ATTEMPTS",
        "RESERVE",
        "MARGIN",
        "DEADLINE",
        "S",
        "MS",
    ]
)


def limit_shaped_constants(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        if path == LIMITS or "__pycache__" in path.parts:
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if not isinstance(node, ast.Assign | ast.AnnAssign) or node.value is None:
                continue
            if not isinstance(node.value, ast.Constant | ast.BinOp | ast.UnaryOp):
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                name = target.id if isinstance(target, ast.Name) else ""
                if name.lstrip("_").isupper() and LIMIT_WORDS & set(name.split("_")):
                    found.append(f"{path.relative_to(root).as_posix()}:{node.lineno} {name}")
    return found


def test_no_limit_is_defined_outside_the_limits_module() -> None:
    offenders = [found for root in CODE[:2] for found in limit_shaped_constants(root)]
    assert offenders == [], "move these to memory_server/domain/limits.py"


def test_the_limit_check_sees_a_literal_copy(tmp_path: Path) -> None:
    """The check above fails on a copy of a limit kept in a module of its own."""
    (tmp_path / "module.py").write_text(
        "_BATCH = 500\nSWEEP_RESERVE_MS = 5000\nADMIN_URI = 'x'\nHOUR = 3600\n"
    )
    found = [line.split(" ")[1] for line in limit_shaped_constants(tmp_path)]
    assert found == ["_BATCH", "SWEEP_RESERVE_MS"]
