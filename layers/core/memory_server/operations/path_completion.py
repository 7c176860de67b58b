"""Prefix completion (docs/contract.md §7): record paths and prompt names, only ever
from the caller's view, at most ``COMPLETION_MAX_VALUES`` values, one statement.

A typed prefix that no valid path can start with completes to nothing without a
query: nothing the caller types reaches the statement except as a bound range.
"""

from __future__ import annotations

import unicodedata
import uuid
from dataclasses import dataclass

from memory_server.data import records
from memory_server.domain.addresses import KINDS, Kind, Namespace
from memory_server.domain.caller import Caller
from memory_server.domain.deadline import Deadline
from memory_server.domain.errors import ToolError
from memory_server.domain.limits import (
    COMPLETION_MAX_VALUES,
    COMPLETION_PREFIX_MAX_BYTES,
    PATH_MAX_BYTES,
)
from memory_server.operations.skills import PERSONAL, SKILL_FILE, prompt_name
from memory_server.operations.store import Store

_PUNCTUATION = frozenset("._-/")


@dataclass(frozen=True, slots=True)
class Completion:
    values: list[str]
    more: bool  # values beyond these exist


# One range the statement walks: (owner, kind, path prefix).
Range = tuple[uuid.UUID, str, str]


def could_be_path(prefix: str, *, folders: bool = True) -> bool:
    """Whether some valid path starts with ``prefix`` (a cheap superset check)."""
    if len(prefix.encode("utf-8", "surrogatepass")) > min(
        COMPLETION_PREFIX_MAX_BYTES, PATH_MAX_BYTES
    ):
        return False
    if unicodedata.normalize("NFC", prefix) != prefix or prefix.startswith("/"):
        return False
    if not folders and "/" in prefix:
        return False
    return all(
        char in _PUNCTUATION
        or unicodedata.category(char)[0] == "L"
        or unicodedata.category(char) == "Nd"
        for char in prefix
    )


def _run(
    store: Store,
    caller: Caller,
    ranges: list[Range],
    *,
    skill_folders: bool,
    deadline: Deadline | None,
) -> list[tuple[uuid.UUID, str, str]]:
    if not ranges:
        return []
    with store.db.read(caller, deadline or Deadline()) as tx:
        found = records.complete_paths(
            tx, caller, ranges, skill_folders=skill_folders, limit=COMPLETION_MAX_VALUES + 1
        )
    return found.get()


def _owner(caller: Caller, namespace: Namespace) -> uuid.UUID | None:
    try:
        return caller.owner_for(namespace)
    except ToolError:  # no personal namespace: nothing there to complete
        return None


def _first(values: dict[str, tuple[int, str]]) -> Completion:
    """The first values in the order of their keys. Each range read its first paths in
    path order, so the first values overall are among them whatever was cut."""
    ordered = sorted(values, key=values.__getitem__)
    return Completion(ordered[:COMPLETION_MAX_VALUES], len(ordered) > COMPLETION_MAX_VALUES)


def complete_paths(
    store: Store,
    caller: Caller,
    namespace: Namespace,
    kind: Kind | None,
    prefix: str,
    deadline: Deadline | None = None,
) -> Completion:
    """Paths in ``namespace`` (of ``kind``, or of every kind) that start with ``prefix``."""
    owner = _owner(caller, namespace)
    if owner is None or not could_be_path(prefix):
        return Completion([], False)
    kinds = [kind] if kind is not None else list(KINDS)
    rows = _run(
        store,
        caller,
        [(owner, each, prefix) for each in kinds],
        skill_folders=False,
        deadline=deadline,
    )
    return _first({path: (0, path) for _, _, path in rows})


def complete_prompt_names(
    store: Store, caller: Caller, prefix: str, deadline: Deadline | None = None
) -> Completion:
    """Prompt names (``{folder}``, ``me/{folder}``) in the caller's view starting with
    ``prefix``."""
    ranges: list[Range] = []
    shared = _owner(caller, "workspace")
    if shared is not None and could_be_path(prefix, folders=False):
        ranges.append((shared, "skills", prefix))
    personal = _owner(caller, "me")
    if personal is not None:
        if prefix.startswith(PERSONAL):
            folder = prefix[len(PERSONAL) :]
            if could_be_path(folder, folders=False):
                ranges.append((personal, "skills", folder))
        elif PERSONAL.startswith(prefix):
            ranges.append((personal, "skills", ""))
    rows = _run(store, caller, ranges, skill_folders=True, deadline=deadline)
    names: dict[str, tuple[int, str]] = {}
    for owner, _, path in rows:
        namespace = caller.namespace_of(owner)
        name = prompt_name(namespace, path[: -len(SKILL_FILE) - 1])
        if name.startswith(prefix):  # shared first, then personal; each in path order
            names[name] = (0 if namespace == "workspace" else 1, path)
    return _first(names)
