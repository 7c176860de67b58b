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
