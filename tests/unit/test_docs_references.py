"""The docs name only what exists, and point nowhere outside the repository.

For README.md and every ``docs/*.md``: each repository path named in backticks or in
a Markdown link exists (a ``#section`` of a Markdown file included), each dotted
Python module named (``memory_server.protocol.dispatcher``, ``python -m bench.x``)
resolves to a file under ``layers/core``, ``local``, ``cli`` or the repository root,
and each ``contract.md §N`` names a section that exists. Resolution is by file
lookup and ``ast``, never by import: fast, and without side effects. The same
pointer rules apply to the comments and docstrings of the code.

Every broken reference is reported at once, with its file and line.
"""

from __future__ import annotations

import ast
import fnmatch
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CONTRACT = ROOT / "docs" / "contract.md"
# Where Python modules live: the Lambda layer, the dev-only packages, the CLI, the root.
MODULE_ROOTS = [ROOT / "layers" / "core", ROOT / "local", ROOT / "cli", ROOT]
CODE_DIRS = ["layers", "local", "cli", "functions", "bench", "tests"]
SKIP_DIRS = frozenset(
    {".git", ".venv", ".dev", ".tmp", "node_modules", "__pycache__"}
    | {".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis"}
)
# Made at run time (make dev, make test, benchmarks), never committed.
GENERATED_DIRS = frozenset({".dev", ".venv", ".tmp"})
# File names the docs mention that are not repository files: user data, exports and
# example names.
NOT_REPOSITORY_FILES = frozenset({"SKILL.md", "memory-export.json", "notes.md"})
FILE_EXTENSIONS = frozenset({"py", "sql", "md", "yaml", "yml", "json", "toml", "txt"})

CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)
LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*(```|~~~)")
PATH_TOKEN = re.compile(r"^[\w.\-*{}/+]+$")
DOTTED = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$")
RUN_MODULE = re.compile(r"(?:^|\s)-m\s+([A-Za-z_][\w.]*)")
ENTRY_POINT = re.compile(r"^([A-Za-z_][\w.]*):([A-Za-z_]\w*)$")
SECTION_REF = re.compile(r"contract\.md[^§\n]{0,12}((?:§\s?\d+[a-z]?(?:,\s*)?)+)")
# Pointers outside the repository: the team's design notes, machine paths.
OUTSIDE = [
    (re.compile(r"\.\./shared"), "a path outside the repository"),
    (re.compile(r"(?<![\w/])/(?:work|home|Users|root)/"), "an absolute machine path"),
    (re.compile(r"\bCONTRACT(?:\.md|\s*§)"), "the design notes' contract"),
    (re.compile(r"\bARCHITECTURE\b"), "the design notes' architecture"),
    (re.compile(r"design (?:notes|card)", re.IGNORECASE), "the design notes"),
]


# -- the repository ---------------------------------------------------------------------


@cache
def repository_files() -> tuple[str, ...]:
    """Every file's path relative to the root, generated and tool folders skipped."""
    found: list[str] = []

    def walk(folder: Path) -> None:
        for entry in sorted(folder.iterdir()):
            if entry.is_dir():
                if entry.name not in SKIP_DIRS:
                    walk(entry)
            else:
                found.append(entry.relative_to(ROOT).as_posix())

    walk(ROOT)
    return tuple(found)


@cache
def repository_dirs() -> frozenset[str]:
    dirs: set[str] = set()
    for name in repository_files():
        parts = name.split("/")[:-1]
        dirs.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    return frozenset(dirs)


@cache
def top_level() -> frozenset[str]:
    return frozenset(name.split("/")[0] for name in repository_files())


def _pattern(path: str) -> str:
    """A doc's path as an fnmatch pattern: ``{placeholder}`` and ``NNNN`` match anything."""
    return re.sub(r"\{[^}/]*\}", "*", path).replace("NNNN", "[0-9][0-9][0-9][0-9]")


def exists(path: str) -> bool:
    """Does this path (relative to the root; may hold a glob) name a file or folder?"""
    path = path.rstrip("/")
    if path in ("", "."):
        return True
    pattern = _pattern(path)
    if not any(char in pattern for char in "*?["):
        return path in repository_dirs() or (ROOT / path).is_file()
    return any(fnmatch.fnmatchcase(name, pattern) for name in repository_files()) or any(
        fnmatch.fnmatchcase(name, pattern) for name in repository_dirs()
    )


def exists_as_suffix(path: str) -> bool:
    """A path relative to some folder (``memory_server/db.py``, ``sql/*.sql``, ``db.py``)."""
    pattern = _pattern(path.rstrip("/"))
    names = repository_dirs() if path.endswith("/") else repository_files()
    return any(
        fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(name, "*/" + pattern)
        for name in names
    )


# -- Python modules ---------------------------------------------------------------------


@cache
def top_packages() -> frozenset[str]:
    names: set[str] = set()
    for root in MODULE_ROOTS:
        if not root.is_dir():
            continue
        for entry in root.iterdir():
            if entry.is_dir() and (entry / "__init__.py").is_file():
                names.add(entry.name)
    return frozenset(names)


def module_file(dotted: str) -> Path | None:
    """The file a module name resolves to (``pkg/__init__.py`` or ``mod.py``)."""
    parts = dotted.split(".")
    for root in MODULE_ROOTS:
        base = root.joinpath(*parts)
        if (base / "__init__.py").is_file():
            return base / "__init__.py"
        if base.with_suffix(".py").is_file():
            return base.with_suffix(".py")
    return None


@cache
def defined_names(source: Path) -> dict[str, ast.AST]:
    """Top-level names a module defines (functions, classes, assignments, imports)."""
    tree = ast.parse(source.read_text(encoding="utf-8"))
    names: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names[node.name] = node
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    names[target.id] = node
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                names[(alias.asname or alias.name).split(".")[0]] = node
    return names


def module_problem(dotted: str, *, runnable: bool = False) -> str | None:
    """Why ``dotted`` (a module, or a module and an attribute) does not resolve."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        found = module_file(".".join(parts[:cut]))
        if found is None:
            continue
        rest = parts[cut:]
        if runnable:
            if rest:
                break
            if found.name == "__init__.py" and not (found.parent / "__main__.py").is_file():
                return f"`python -m {dotted}`: the package has no __main__.py"
            return None
        if not rest:
            return None
        names = defined_names(found)
        if rest[0] not in names:
            where = ".".join(parts[:cut])
            return f"`{dotted}`: no module {where}.{rest[0]}, and {where} defines no {rest[0]!r}"
        node = names[rest[0]]
        if len(rest) > 1 and isinstance(node, ast.ClassDef):
            members = {getattr(n, "name", None) for n in node.body if hasattr(n, "name")} | {
                t.id
                for n in node.body
                if isinstance(n, ast.Assign | ast.AnnAssign)
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                if isinstance(t, ast.Name)
            }
            if rest[1] not in members:
                return f"`{dotted}`: class {rest[0]} has no {rest[1]!r}"
        return None
    return f"`{dotted}` is not a module under layers/core, local, cli or the root"


# -- Markdown -----------------------------------------------------------------------------


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    found: set[str] = set()
    in_fence = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and line.startswith("#"):
            found.add(slug(line.lstrip("#")))
    return frozenset(found)


@cache
def contract_sections() -> frozenset[str]:
    if not CONTRACT.is_file():
        return frozenset()
    text = CONTRACT.read_text(encoding="utf-8")
    return frozenset(re.findall(r"^##\s+(\d+[a-z]?)\.", text, re.MULTILINE))


def split_fences(text: str) -> tuple[str, str]:
    """(prose, fenced code), each the same length in lines as ``text``."""
    prose: list[str] = []
    code: list[str] = []
    in_fence = False
    for line in text.split("\n"):
        if FENCE.match(line):
            in_fence = not in_fence
            prose.append("")
            code.append("")
        elif in_fence:
            prose.append("")
            code.append(line)
        else:
            prose.append(line)
            code.append("")
    return "\n".join(prose), "\n".join(code)


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def path_problem(token: str, doc: Path) -> str | None:
    """Why ``token`` (a word in a code span) names no repository path, if it names one."""
    token = token.strip("'\",;()").removeprefix("./")
    if not token or not PATH_TOKEN.match(token) or "://" in token or token.startswith("/"):
        return None
    if token.startswith("../"):
        target = (doc.parent / token).resolve()
        if not target.is_relative_to(ROOT):
            return f"`{token}` points outside the repository"
        token = target.relative_to(ROOT).as_posix()
    segments = token.rstrip("/").split("/")
    if segments[0] in GENERATED_DIRS or segments[-1] in NOT_REPOSITORY_FILES:
        return None
    last = segments[-1]
    has_extension = "." in last.strip(".") and last.rsplit(".", 1)[1] in FILE_EXTENSIONS
    if len(segments) > 1 and segments[0] in top_level():
        return None if exists(token) else f"`{token}` does not exist"
    if len(segments) > 1 and segments[0] in top_packages():
        if any(exists((root / token).relative_to(ROOT).as_posix()) for root in MODULE_ROOTS):
            return None
        return f"`{token}` does not exist under layers/core, local, cli or the root"
    if not has_extension:
        return None  # a scope, a MIME type, a route: not a file
    if len(segments) == 1 and last.endswith(".md"):
        beside = (doc.parent / last).relative_to(ROOT).as_posix()
        if exists(beside) or exists(last):
            return None
    return None if exists_as_suffix(token) else f"`{token}` matches no repository file"


def link_problem(target: str, doc: Path) -> str | None:
    if re.match(r"^[a-z][a-z0-9+.-]*:", target):
        return None  # https:, mailto:
    path, _, fragment = target.partition("#")
    resolved = (doc.parent / path).resolve() if path else doc
    if not resolved.is_relative_to(ROOT):
        return f"link `{target}` points outside the repository"
    relative = resolved.relative_to(ROOT).as_posix()
    if path and not exists(relative):
        return f"link `{target}`: {relative} does not exist"
    if fragment and resolved.suffix == ".md" and fragment not in anchors(resolved):
        return f"link `{target}`: {relative} has no section #{fragment}"
    return None


def section_problems(text: str) -> Iterator[tuple[int, str]]:
    for match in SECTION_REF.finditer(text):
        for number in re.findall(r"§\s?(\d+[a-z]?)", match.group(1)):
            if number not in contract_sections():
                yield line_of(text, match.start()), f"docs/contract.md has no section §{number}"


def outside_problems(text: str) -> Iterator[tuple[int, str]]:
    for pattern, what in OUTSIDE:
        for match in pattern.finditer(text):
            yield line_of(text, match.start()), f"{match.group(0)!r} names {what}"


def doc_problems(doc: Path, text: str | None = None) -> Iterator[tuple[int, str]]:
    """Broken references in ``doc`` (or in ``text``, as if written at ``doc``)."""
    if text is None:
        text = doc.read_text(encoding="utf-8")
    prose, code = split_fences(text)
    yield from outside_problems(text)
    yield from section_problems(text)
    for match in LINK.finditer(prose):
        problem = link_problem(match.group(1), doc)
        if problem:
            yield line_of(prose, match.start()), problem
    for match in RUN_MODULE.finditer(code):
        problem = module_problem(match.group(1), runnable=True)
        if problem:
            yield line_of(code, match.start(1)), problem
    for match in CODE_SPAN.finditer(prose):
        span, line = match.group(2), line_of(prose, match.start())
        for run in RUN_MODULE.finditer(span):
            problem = module_problem(run.group(1), runnable=True)
            if problem:
                yield line, problem
        for word in span.split():
            word = word.strip("'\",;")
            entry = ENTRY_POINT.match(word)
            dotted = entry.group(1) if entry else word.removesuffix("()")
            if DOTTED.match(dotted) and dotted.split(".")[0] in top_packages():
                problem = module_problem(dotted)
                if problem:
                    yield line, problem
                continue
            problem = path_problem(word, doc)
            if problem:
                yield line, problem


def code_files() -> Iterator[Path]:
    for name in repository_files():
        if name.endswith(".py") and name.split("/")[0] in CODE_DIRS:
            yield ROOT / name


def code_problems(source: Path) -> Iterator[tuple[int, str]]:
    """Comments and docstrings: no pointer outside; the docs they name exist."""
    text = source.read_text(encoding="utf-8")
    yield from outside_problems(text)
    yield from section_problems(text)
    for match in re.finditer(r"\bdocs/[\w.-]+\.(?:md|json)\b", text):
        if not exists(match.group(0)):
            yield line_of(text, match.start()), f"{match.group(0)} does not exist"


def report(problems: list[str]) -> str:
    return f"{len(problems)} broken reference(s):\n" + "\n".join(problems)


# -- the tests ----------------------------------------------------------------------------


def test_docs_name_only_what_exists_in_the_repository() -> None:
    problems = [
        f"{doc.relative_to(ROOT).as_posix()}:{line}: {message}"
        for doc in DOCS
        for line, message in doc_problems(doc)
    ]
    assert not problems, report(problems)


def test_code_comments_point_only_into_the_repository() -> None:
    this = Path(__file__).resolve()
    problems = [
        f"{source.relative_to(ROOT).as_posix()}:{line}: {message}"
        for source in code_files()
        if source.resolve() != this
        for line, message in code_problems(source)
    ]
    assert not problems, report(problems)


def test_the_contract_stands_on_its_own() -> None:
    assert CONTRACT.is_file(), "docs/contract.md is the product's public contract"
    assert {"1", "2", "3", "4", "5", "6", "7", "8"} <= contract_sections()


def test_the_checker_catches_broken_references() -> None:
    """The checks themselves: one broken reference of each kind, and some that are fine."""
    probe = ROOT / "docs" / "probe.md"  # never written: the text is passed in
    broken = {
        "`layers/core/memory_server/no_such_module.py`": "does not exist",
        "`memory_server/no_such.py`": "does not exist",
        "`no_such_file.sql`": "matches no repository file",
        "`memory_server.no_such_module`": "defines no",
        "`memory_local.nowhere.deeper`": "defines no",
        "`memory_server.edge.service.NoSuchThing`": "defines no",
        "`python -m bench.no_such_bench`": "is not a module",
        "[x](no-such-doc.md)": "does not exist",
        "[x](contract.md#no-such-section)": "has no section",
        "see CONTRACT.md": "design notes",
        "[x](../../shared/design/notes.md)": "outside the repository",
        "docs/contract.md §99": "no section",
    }
    fine = [
        "`layers/core/memory_server/data/pool.py`",
        "`infra/migrations/NNNN_*.sql`",
        "`memory_server/edge/aws_config.py`",
        "`memory_server.protocol.dispatcher`",
        "`memory_server.edge.service.McpService`",
        "`python -m bench.store_bench`",
        "`memory/write.personal`",
        "`.dev/endpoint.json`",
        "[contract](contract.md)",
        "docs/contract.md §5",
    ]
    for text, expected in broken.items():
        problems = [message for _, message in doc_problems(probe, text)]
        assert any(expected in message for message in problems), (text, problems)
    for text in fine:
        assert not list(doc_problems(probe, text)), text
