"""Export and import of a namespace as a folder of Markdown files with front matter.

Both go through the MCP tools as a principal (``ToolCaller``), so they see and
change exactly what that principal may: no path around the grants, the listening
context rules or row-level security. ``memoryctl`` supplies a ``ToolCaller`` over
HTTP; tests may supply one over the store operations. Pure code apart from the
files it reads and writes: it needs the server's address and context rules
(``memory_server``), never a database.

Layout: ``{namespace}/{kind}/{path}`` for records in the workspace context (so
``workspace/skills/{name}/SKILL.md`` is an Agent Skills folder as is), and
``contexts/{percent-encoded context}/{namespace}/{kind}/{path}`` for the others.

Each file is the record's content with a ``memory:`` mapping in its front matter
(uri, id, context, kind, revision, source, timestamps, writers, pinned, expires_at).
Content that has front matter of its own (a SKILL.md) keeps it, with the mapping appended, so
tools reading ``name``/``description`` still find them; ``embedded`` records which
case it was, so import restores the content byte for byte.

``memory-export.json`` at the top records the namespace and which exported
contexts were registered private (known when the exporter could read the admin
API's context list; ``null`` otherwise). Import never puts a private context's
records where that context is not registered: it would be an open channel there,
heard by every member. Such records are skipped until an admin registers it; so are
the records of every context but the workspace when the export does not say which
were private.

Import is conditional and idempotent: a record whose address (from its context)
holds the same content is unchanged; a free address is created; anything else is
a conflict, reported and never overwritten. Ids, revisions, writers and times are
the target's own (the tools cannot set them); the report maps old ids to new. A
record's pin and expiry come along; one whose expiry has passed by the time of the
import is skipped (it would be in no view).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol
from urllib.parse import quote

from memory_server.domain.addresses import parse_address
from memory_server.domain.contexts import WORKSPACE, gate_key, parse_context
from memory_server.domain.errors import ToolError
from memory_server.domain.limits import CONTENT_MAX_BYTES

MANIFEST = "memory-export.json"
Namespace = Literal["workspace", "me"]
Progress = Callable[[int, int | None], None]  # (done, total; None while still counting)

_FRONT_MATTER = re.compile(r"\A---\n(.*?)\n---(\n|\Z)", re.DOTALL)
# Our block: "memory:" then only "  key: value" lines, then the closing "---". It
# cannot start inside the content's own front matter, which holds no "\n---\n".
_BLOCK = re.compile(r"\nmemory:\n((?:  [a-z_]+: [^\n]*\n)+)---(\n|\Z)")
_FIELDS = (
    "uri",
    "id",
    "context",
    "kind",
    "revision",
    "source",
    "created_at",
    "created_by",
    "created_by_kind",
    "updated_at",
    "updated_by",
    "updated_by_kind",
    "pinned",
    "expires_at",
)


class ContextRefused(Exception):
    """The server refused the listening context (HTTP 403 context_unavailable)."""


class TransferError(Exception):
    """The export or import cannot go on (for example the workspace is not reachable)."""


class ToolCaller(Protocol):
    def call(self, tool: str, arguments: dict[str, Any], *, context: str) -> dict[str, Any]:
        """A tool's ``structuredContent``, called from listening ``context``.

        Tool errors come back as ``{"error": {"code": …}}``; a refused context raises
        ``ContextRefused``.
        """
        ...


# -- the file format ----------------------------------------------------------------


def render(meta: dict[str, Any], content: str) -> str:
    """A record as a Markdown file: its content with our mapping in the front matter."""
    own = _FRONT_MATTER.match(content)
    values = {name: meta.get(name) for name in _FIELDS}
    values["embedded"] = own is not None
    # JSON scalars on one line each: valid YAML, and exact to read back.
    block = "memory:\n" + "".join(
        f"  {name}: {json.dumps(value, ensure_ascii=False)}\n" for name, value in values.items()
    )
    if own is None:
        return f"---\n{block}---\n{content}"
    return f"---\n{own.group(1)}\n{block}---{own.group(2)}{content[own.end() :]}"


def parse(text: str) -> tuple[dict[str, Any], str]:
    """The mapping and the original content of a file ``render`` wrote."""
    if not text.startswith("---\n"):
        raise ValueError("no front matter")
    found = _BLOCK.search(text, 3)
    if found is None:
        raise ValueError("no memory: block in the front matter")
    meta: dict[str, Any] = {}
    # Split on \n only: str.splitlines() would also break a JSON value at U+0085,
    # U+2028 or U+2029, which json.dumps leaves raw.
    for line in found.group(1)[:-1].split("\n"):
        name, _, value = line.strip().partition(": ")
        meta[name] = json.loads(value)
    rest = text[found.end() :]
    if meta.get("embedded"):
        own = text[4 : found.start()]
        return meta, f"---\n{own}\n---{found.group(2)}{rest}"
    if found.start() != 3:
        raise ValueError("the memory: block must open the front matter")
    return meta, rest


def relative_path(namespace: str, kind: str, path: str, context: str) -> Path:
    where = Path(namespace, kind, *path.split("/"))
    if context == WORKSPACE:
        return where
    return Path("contexts", quote(context, safe="")) / where


# -- export -------------------------------------------------------------------------


@dataclass
class ExportReport:
    namespace: str
    records: int = 0
    files: list[str] = field(default_factory=list)
    skipped_contexts: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _ok(result: dict[str, Any]) -> dict[str, Any]:
    error = result.get("error")
    if isinstance(error, dict):
        raise ToolError(error.get("code", "unavailable"), str(error.get("message", "")))
    return result


def list_records(
    tools: ToolCaller,
    namespace: Namespace,
    context: str,
    listed: Callable[[int], None] | None = None,
) -> list[dict[str, Any]]:
    """The namespace's records that live in exactly ``context`` (not its ancestors);
    ``listed`` hears how many were found after each page."""
    items: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        arguments: dict[str, Any] = {"prefix": f"memory://{namespace}/", "limit": 50}
        if cursor:
            arguments["cursor"] = cursor
        page = _ok(tools.call("memory_list", arguments, context=context))
        items += [item for item in page["items"] if item["context"] == context]
        if listed is not None:
            listed(len(items))
        cursor = page.get("next_cursor")
        if not cursor:
            return items


def read_whole(tools: ToolCaller, uri: str, context: str) -> dict[str, Any]:
    """``memory_read`` until the whole content is in (it comes in byte windows)."""
    offset, parts = 0, []
    while True:
        result = _ok(
            tools.call(
                "memory_read",
                {"uri": uri, "offset": offset, "max_bytes": CONTENT_MAX_BYTES},
                context=context,
            )
        )
        parts.append(result["content"])
        if not result["truncated"]:
            return {**result, "content": "".join(parts)}
        offset = result["next_offset"]


def export_namespace(
    tools: ToolCaller,
    namespace: Namespace,
    out: Path,
    contexts: Iterable[str] = (WORKSPACE,),
    *,
    private_contexts: Iterable[str] | None = None,
    progress: Progress | None = None,
) -> ExportReport:
    """Write every record of ``namespace`` in ``contexts`` under ``out``.

    A context the principal may not listen from is skipped and reported.
    ``private_contexts``: the registered (private) contexts, when known.
    """
    keys = sorted({parse_context(c).key for c in [WORKSPACE, *contexts]})
    report = ExportReport(namespace)
    found: list[tuple[str, dict[str, Any]]] = []
    for key in keys:
        before = len(found)

        def listed(count: int, before: int = before) -> None:
            if progress is not None:  # still counting: no total yet
                progress(before + count, None)

        try:
            found += [(key, item) for item in list_records(tools, namespace, key, listed)]
        except ContextRefused:
            report.skipped_contexts.append(key)
    for done, (key, item) in enumerate(found, 1):
        record = read_whole(tools, f"memory://record/{item['id']}", key)
        address = parse_address(record["uri"])
        meta = {name: record.get(name) for name in _FIELDS}
        relative = relative_path(namespace, record["kind"], getattr(address, "path", ""), key)
        target = out / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(render(meta, record["content"]), encoding="utf-8", newline="")
        report.files.append(relative.as_posix())
        report.records += 1
        if progress is not None:
            progress(done, len(found))
    out.mkdir(parents=True, exist_ok=True)
    manifest = {
        "namespace": namespace,
        "private_contexts": None if private_contexts is None else sorted(set(private_contexts)),
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return report


# -- import -------------------------------------------------------------------------

Outcome = Literal["created", "unchanged", "conflict", "skipped"]


@dataclass
class ImportedFile:
    file: str
    uri: str
    context: str
    outcome: Outcome
    source_id: str | None = None
    id: str | None = None
    reason: str | None = None


@dataclass
class ImportReport:
    files: list[ImportedFile] = field(default_factory=list)

    def count(self, outcome: Outcome) -> int:
        return sum(1 for f in self.files if f.outcome == outcome)

    def to_dict(self) -> dict[str, Any]:
        totals = {o: self.count(o) for o in ("created", "unchanged", "conflict", "skipped")}
        return {**totals, "files": [asdict(f) for f in self.files]}


def _depth(context: str) -> int:
    return len(parse_context(context).ancestors)


def load_folder(folder: Path) -> list[tuple[str, dict[str, Any], str]]:
    """Every exported file under ``folder``: (relative name, mapping, content)."""
    loaded = []
    for path in sorted(folder.rglob("*")):
        if not path.is_file():
            continue
        # Bytes, not read_text(): universal newlines would rewrite a record's CRLFs.
        text = path.read_bytes().decode("utf-8")
        try:
            meta, content = parse(text)
        except ValueError:
            continue  # not one of ours (a README someone added, say)
        loaded.append((path.relative_to(folder).as_posix(), meta, content))
    return loaded


def private_in_export(folder: Path) -> list[str] | None:
    """The exported contexts that were private, from the manifest (None: unknown)."""
    manifest = folder / MANIFEST
    if not manifest.exists():
        return None
    found = json.loads(manifest.read_text(encoding="utf-8")).get("private_contexts")
    return None if found is None else [str(c) for c in found]


def _gate(context: str) -> str:
    """The registered context deciding who hears ``context`` (a thread's channel)."""
    return gate_key(parse_context(context)) or WORKSPACE


def import_folder(
    tools: ToolCaller,
    folder: Path,
    *,
    registered: Iterable[str] | None = None,
    progress: Progress | None = None,
) -> ImportReport:
    """Create what is missing; leave what is equal; report what differs.

    Deeper contexts go first: from a channel, a path that only the workspace holds
    still resolves (to the workspace's record), so creating the channel's copy
    after the workspace's would look like a conflict. ``registered``: the target's
    registered contexts, when known; a record of a context that was private in the
    export, or of any context but the workspace when the export does not know which
    were private, is imported only into a context registered in the target.
    """
    files = load_folder(folder)
    files.sort(key=lambda f: (-_depth(f[1]["context"]), f[1]["context"], f[1]["uri"]))
    known = private_in_export(folder)
    target = set(registered or [])
    report = ImportReport()
    for done, (name, meta, content) in enumerate(files, 1):
        gate = _gate(str(meta["context"]))
        reason = _held_back(gate, None if known is None else set(known), target)
        if reason is not None:
            report.files.append(
                ImportedFile(
                    name,
                    str(meta["uri"]),
                    str(meta["context"]),
                    "skipped",
                    source_id=meta.get("id"),
                    reason=reason,
                )
            )
        else:
            report.files.append(_import_one(tools, name, meta, content))
        if progress is not None:
            progress(done, len(files))
    return report


def _held_back(gate: str, private: set[str] | None, registered: set[str]) -> str | None:
    """Why a record heard through ``gate`` must not be imported here, if it must not.

    Only where the target registers ``gate`` is it heard by exactly the members an
    admin chose; anywhere else it is an open channel. So a context that was private
    in the export, or whose privacy the export does not know (the exporter could not
    read the registry), goes only into a registered context.
    """
    if gate == WORKSPACE or gate in registered:
        return None
    if private is None:
        return f"whether {gate} was private is not in the export; register it here first"
    if gate in private:
        return f"{gate} was private in the export and is not registered here"
    return None


def _passed(moment: str) -> bool:
    return datetime.fromisoformat(moment) <= datetime.now(UTC)


def _import_one(tools: ToolCaller, name: str, meta: dict[str, Any], content: str) -> ImportedFile:
    uri, context = str(meta["uri"]), str(meta["context"])
    entry = ImportedFile(name, uri, context, "skipped", source_id=meta.get("id"))
    try:
        current = tools.call(
            "memory_read", {"uri": uri, "max_bytes": CONTENT_MAX_BYTES}, context=context
        )
        error = current.get("error")
        if error is None:
            entry.id = current["id"]
            if current["context"] != context:
                entry.outcome, entry.reason = "conflict", "an ancestor context's record answers"
                return entry
            existing = read_whole(tools, uri, context) if current["truncated"] else current
            same = existing["content"] == content
            entry.outcome = "unchanged" if same else "conflict"
            if not same:
                entry.reason = f"different content at revision {existing['revision']}"
            return entry
        if error.get("code") != "not_found":
            entry.reason = f"{error.get('code')}: {error.get('message')}"
            return entry
        arguments: dict[str, Any] = {"uri": uri, "content": content, "expected_revision": 0}
        if meta.get("source"):
            arguments["source"] = meta["source"]
        if meta.get("pinned"):
            arguments["pinned"] = True
        if meta.get("expires_at"):
            if _passed(str(meta["expires_at"])):
                entry.reason = f"expired at {meta['expires_at']}"
                return entry
            arguments["expires_at"] = meta["expires_at"]
        written = tools.call("memory_write", arguments, context=context)
        error = written.get("error")
        if error is not None:
            code = error.get("code")
            entry.outcome = "conflict" if code == "revision_conflict" else "skipped"
            entry.reason = f"{code}: {error.get('message')}"
            return entry
        entry.outcome, entry.id = "created", written["id"]
        return entry
    except ContextRefused:
        entry.reason = "context_unavailable: register the context with you as a member first"
        return entry
