"""Skills as MCP prompts (docs/contract.md §7): the skill folders a caller can see.

A skill is the record ``memory://{namespace}/skills/{folder}/SKILL.md``; as a prompt
it is named ``{folder}`` when shared with the workspace and ``me/{folder}`` when it
is the caller's own (a folder name never holds ``/``, so the two never collide).
What a prompt name means is resolved like any path address: from the listening
context, the nearest context's record, under the caller's view; one outside it and
one that never existed are the same ``not_found``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any

from memory_server.data import records
from memory_server.data.records import SkillRow
from memory_server.domain.addresses import Namespace, RecordAddress, parse_path, record_uri
from memory_server.domain.caller import Caller
from memory_server.domain.content import skill_arguments, split_front_matter
from memory_server.domain.cursors import decode_cursor, encode_cursor
from memory_server.domain.deadline import Deadline
from memory_server.domain.errors import ToolError, not_found
from memory_server.domain.grants import sorted_grants
from memory_server.domain.limits import PROMPT_DESCRIPTION_MAX_BYTES, SKILL_HEAD_CHARS
from memory_server.domain.results import ListPage
from memory_server.domain.utf8 import utf8_prefix
from memory_server.operations.store import Store

SKILL_FILE = "SKILL.md"
PERSONAL = "me/"
_START = ["", "00000000-0000-0000-0000-000000000000"]


@dataclass(frozen=True, slots=True)
class SkillPrompt:
    """A skill as ``prompts/get`` serves it."""

    name: str
    uri: str
    id: str
    revision: int
    description: str
    arguments: list[str]
    body: str  # the SKILL.md after its front matter


def prompt_name(namespace: Namespace, folder: str) -> str:
    return f"{PERSONAL}{folder}" if namespace == "me" else folder


def skill_address(name: str) -> RecordAddress:
    """The SKILL.md a prompt name stands for; ``not_found`` for a name that cannot be
    one (it is not told apart from a skill that does not exist)."""
    namespace: Namespace = "me" if name.startswith(PERSONAL) else "workspace"
    folder = name[len(PERSONAL) :] if namespace == "me" else name
    try:
        if "/" in folder:
            raise not_found()
        parse_path(f"{folder}/{SKILL_FILE}")
    except ToolError:
        raise not_found() from None
    return RecordAddress(namespace, "skills", f"{folder}/{SKILL_FILE}")


def describe(fields: dict[str, str], fallback: str) -> str:
    description = fields.get("description") or fallback
    return utf8_prefix(description, PROMPT_DESCRIPTION_MAX_BYTES)[0]


def skill_page(
    store: Store,
    caller: Caller,
    cursor: str | None,
    limit: int,
    deadline: Deadline | None = None,
) -> ListPage:
    """Up to ``limit`` prompts (``name``, ``description``, ``arguments`` when declared)
    in the caller's view, after ``cursor``; the protocol layer fits them to its budget."""
    binding = {
        "tool": "prompts/list",
        "principal": str(caller.principal_id),
        "workspace": str(caller.workspace_id),
        "context": caller.context.key,
        "grants": sorted_grants(caller.grants),
    }
    after = _START
    if cursor is not None:
        after = decode_cursor(store.cursor_secret, cursor, binding)
    with store.db.read(caller, deadline or Deadline()) as tx:
        found = records.skill_page(
            tx,
            caller,
            head_chars=SKILL_HEAD_CHARS,
            after_path=after[0],
            after_owner=uuid.UUID(after[1]),
            limit=limit + 1,
        )
    rows = found.get()
    page = rows[:limit]
    return ListPage(
        items=[_listed(caller, row) for row in page],
        positions=[[row["path"], str(row["owner_id"])] for row in page],
        more=len(rows) > limit,
        cursor_for=partial(encode_cursor, store.cursor_secret, binding),
    )


@lru_cache(maxsize=512)
def _head_fields(head: str, title: str) -> tuple[str, tuple[str, ...]]:
    """Description and arguments from a SKILL.md's head: the same skills are listed
    again and again by a warm process, so each head is parsed once."""
    fields, _ = split_front_matter(head)
    return describe(fields, title), tuple(skill_arguments(fields))


def skill_entry(caller: Caller, row: SkillRow) -> dict[str, Any]:
    """A skill as the briefing names it: its address, prompt name and description."""
    namespace = caller.namespace_of(row["owner_id"])
    folder = row["path"].split("/", 1)[0]
    return {
        "uri": record_uri(namespace, "skills", row["path"]),
        "name": prompt_name(namespace, folder),
        "description": _head_fields(row["head"], row["title"])[0],
    }


def _listed(caller: Caller, row: SkillRow) -> dict[str, Any]:
    description, arguments = _head_fields(row["head"], row["title"])
    folder = row["path"].split("/", 1)[0]
    prompt: dict[str, Any] = {
        "name": prompt_name(caller.namespace_of(row["owner_id"]), folder),
        "description": description,
    }
    if arguments:
        prompt["arguments"] = [{"name": name, "required": False} for name in arguments]
    return prompt


def skill_prompt(
    store: Store, caller: Caller, name: str, deadline: Deadline | None = None
) -> SkillPrompt:
    """The skill a prompt name resolves to from the listening context, or ``not_found``."""
    address = skill_address(name)
    with store.db.read(caller, deadline or Deadline()) as tx:
        found = records.find(tx, caller, address)
    row = found.get()
    if row is None:
        raise not_found()
    fields, body = split_front_matter(row["body"])
    return SkillPrompt(
        name=name,
        uri=address.uri,
        id=str(row["id"]),
        revision=row["revision"],
        description=describe(fields, row["title"]),
        arguments=skill_arguments(fields),
        body=body,
    )
