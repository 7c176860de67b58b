"""Shared record logic for the operations: content rules, titles, resolution, changes.

Every query here passes the caller's view as parameters (workspace, visible owners,
visible contexts), the first wall; row-level security applies it again.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime
from typing import Any, Literal

from . import sql_files
from .addresses import IdAddress, RecordAddress, record_uri
from .budget import utf8_prefix
from .caller import Caller, Deadline
from .db import Connection, Database
from .errors import ToolError, invalid, not_found
from .limits import CONTENT_MAX_BYTES, PROMPT_ARGUMENTS_MAX, TITLE_MAX_BYTES
from .sql_files import Row

Operation = Literal["create", "replace", "merge", "move", "delete"]

_FRONT_MATTER = re.compile(r"\A---\n(.*?)\n---(?:\n|\Z)", re.DOTALL)
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_ARGUMENT_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
# Completing this argument of any prompt offers prompt names, so no skill declares it.
PROMPT_NAME_ARGUMENT = "name"


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def check_text(value: str, *, what: str, max_bytes: int) -> str:
    """Reject what PostgreSQL text cannot hold or the budget does not allow."""
    if "\x00" in value:
        raise invalid(f"{what} may not contain NUL characters")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise invalid(f"{what} is not valid Unicode (lone surrogate)") from None
    if size > max_bytes:
        raise ToolError("too_large", f"{what} is {size} bytes; the limit is {max_bytes}")
    return value


def check_source(source: str | None) -> str | None:
    if source is None:
        return None
    check_text(source, what="source", max_bytes=1024)
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in source):
        raise invalid("source may not contain control characters")
    return source


def front_matter(content: str) -> dict[str, str]:
    return split_front_matter(content)[0]


def split_front_matter(content: str) -> tuple[dict[str, str], str]:
    """The front matter's fields and the content after it (all of it when it has none)."""
    match = _FRONT_MATTER.match(content)
    if not match:
        return {}, content
    fields: dict[str, str] = {}
    for line in match.group(1).splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() and not key.startswith((" ", "\t")):
            fields[key.strip()] = value.strip().strip("'\"")
    return fields, content[match.end() :]


def skill_arguments(fields: dict[str, str], *, strict: bool = False) -> list[str]:
    """The prompt arguments a SKILL.md declares: ``arguments: topic, audience`` (or
    ``[topic, audience]``). Read leniently (names that break the rule are skipped);
    ``strict`` refuses them, as a write does."""
    raw = fields.get("arguments", "").strip()
    if raw.startswith("[") and raw.endswith("]"):
        raw = raw[1:-1]
    names: list[str] = []
    for item in raw.split(",") if raw.strip() else []:
        name = item.strip().strip("'\"")
        if not _ARGUMENT_NAME.match(name) or name in (*names, PROMPT_NAME_ARGUMENT):
            if strict:
                raise invalid(
                    "SKILL.md arguments must be distinct names of letters, digits, '_' or '-' "
                    f"(at most 64 characters, not {PROMPT_NAME_ARGUMENT!r}), separated by commas"
                )
            continue
        names.append(name)
    if strict and len(names) > PROMPT_ARGUMENTS_MAX:
        raise invalid(f"a SKILL.md declares at most {PROMPT_ARGUMENTS_MAX} arguments")
    return names[:PROMPT_ARGUMENTS_MAX]


def check_content(address: RecordAddress, content: str) -> str:
    check_text(content, what="content", max_bytes=CONTENT_MAX_BYTES)
    if address.kind == "skills" and address.path.endswith("/SKILL.md"):
        fields = front_matter(content)
        folder = address.path.split("/")[-2]
        if not fields.get("name") or not fields.get("description"):
            raise invalid("a SKILL.md needs YAML front matter with name and description")
        if fields["name"] != folder:
            raise invalid(f"SKILL.md front matter name must match its folder ({folder!r})")
        if "arguments" in fields:
            skill_arguments(fields, strict=True)
    return content


def derive_title(kind: str, path: str, content: str) -> str:
    """Skill name, else the first Markdown heading, else the file name."""
    title = ""
    if kind == "skills":
        title = front_matter(content).get("name", "")
    if not title:
        body = _FRONT_MATTER.sub("", content, count=1)
        heading = _HEADING.search(body)
        title = heading.group(1) if heading else ""
    if not title:
        title = path.rsplit("/", 1)[-1]
    return utf8_prefix(title, TITLE_MAX_BYTES)[0]


def view(caller: Caller) -> dict[str, Any]:
    """The caller's view as query parameters."""
    return {
        "workspace_id": caller.workspace_id,
        "owners": caller.visible_owners(),
        "contexts": list(caller.context.ancestors),
        "principal_id": caller.principal_id,
        "request_id": caller.request_id,
    }


def uri_of(caller: Caller, row: dict[str, Any]) -> str:
    return record_uri(caller.namespace_of(row["owner_id"]), row["kind"], row["path"])


def summary(caller: Caller, row: dict[str, Any]) -> dict[str, Any]:
    """What list items and search hits say about a record (never its body)."""
    return {
        "uri": uri_of(caller, row),
        "id": str(row["id"]),
        "kind": row["kind"],
        "title": row["title"],
        "context": row["context_key"],
        "revision": row["revision"],
        "updated_at": iso(row["updated_at"]),
    }


def resolve_statement(
    caller: Caller, address: RecordAddress | IdAddress, *, contexts: list[str] | None = None
) -> tuple[str, dict[str, Any]]:
    """The name and parameters of the statement that finds the visible record an
    address names: by id, or nearest by path from the context."""
    params = view(caller)
    if isinstance(address, IdAddress):
        params["id"] = address.id
        return "record_by_id", params
    params.update(
        owner_id=caller.owner_for(address.namespace),
        kind=address.kind,
        path=address.path,
        contexts=contexts if contexts is not None else list(caller.context.ancestors),
    )
    return "resolve_address", params


def resolve(
    conn: Connection,
    caller: Caller,
    address: RecordAddress | IdAddress,
    *,
    contexts: list[str] | None = None,
) -> dict[str, Any] | None:
    """The visible record an address names, inside a request transaction."""
    return sql_files.one(conn, *resolve_statement(caller, address, contexts=contexts))


def conflict_or_gone(conn: Connection, caller: Caller, record_id: uuid.UUID) -> ToolError:
    """Explain a conditional change that matched no row, within the caller's view only."""
    return explain_miss(sql_files.one(conn, *current_revision_statement(caller, record_id)))


def explain_miss(current: dict[str, Any] | None) -> ToolError:
    """``not_found`` when the record left the view, else the conflict at its revision."""
    if current is None:
        return not_found()
    return conflict(current["revision"])


def current_revision_statement(caller: Caller, record_id: uuid.UUID) -> tuple[str, dict[str, Any]]:
    """What explains a conditional change that matched no row (:func:`conflict_or_gone`),
    for a read of its own after the change's transaction."""
    return "current_revision", {**view(caller), "id": record_id}


def explain_change_miss(
    db: Database, caller: Caller, deadline: Deadline, record_id: uuid.UUID
) -> ToolError:
    """Explain a change that matched no row after its transaction, by a read of its own."""
    missed = db.read(caller, deadline, *current_revision_statement(caller, record_id))
    return explain_miss(missed[0] if missed else None)


def changed_row(db: Database, caller: Caller, deadline: Deadline, rows: list[Row]) -> Row:
    """The row of a replace or a delete by path made in one statement
    (``change_record_at``), or the error that explains why nothing changed: nothing
    there, the conflict, or, for a record that moved on meanwhile, a read of its own."""
    if not rows:
        raise not_found()
    row = rows[0]
    if row["changed"]:
        return row
    if row["revision"] is not None:
        raise conflict(row["revision"])
    raise explain_change_miss(db, caller, deadline, row["id"])


def conflict(current_revision: int) -> ToolError:
    return ToolError(
        "revision_conflict",
        f"the record is at revision {current_revision}; re-read it and retry",
        current_revision=current_revision,
    )


def _content(
    address: RecordAddress, body: str, source: str | None, operation: Operation
) -> dict[str, Any]:
    """The parameters a new revision's content takes, for create and change alike."""
    return {
        "kind": address.kind,
        "path": address.path,
        "title": derive_title(address.kind, address.path, body),
        "body": body,
        "source": source,
        "operation": operation,
        "uri": address.uri,
    }


def create_statement(
    caller: Caller,
    address: RecordAddress,
    *,
    context_key: str,
    body: str,
    source: str | None,
    operation: Operation,
) -> tuple[str, dict[str, Any]]:
    """The statement that creates a record with its revision and audit rows (no row
    back: the address was taken concurrently)."""
    params = {
        **view(caller),
        **_content(address, body, source, operation),
        "owner_id": caller.owner_for(address.namespace),
        "context_key": context_key,
    }
    return "create_record", params


def create_unless_taken_statement(
    caller: Caller, address: RecordAddress, *, context_key: str, body: str, source: str | None
) -> tuple[str, dict[str, Any]]:
    """A create that first looks for what the address already resolves to from the
    listening context, in the same statement: its one row says ``created``, or gives
    the revision the address is taken at (no row: taken concurrently)."""
    _, params = create_statement(
        caller, address, context_key=context_key, body=body, source=source, operation="create"
    )
    return "create_record_unless_taken", params


def create(
    conn: Connection,
    caller: Caller,
    address: RecordAddress,
    *,
    context_key: str,
    body: str,
    source: str | None,
    operation: Operation,
) -> dict[str, Any] | None:
    statement = create_statement(
        caller, address, context_key=context_key, body=body, source=source, operation=operation
    )
    return sql_files.one(conn, *statement)


def change_statement(
    caller: Caller,
    record_id: uuid.UUID,
    address: RecordAddress,
    *,
    expected_revision: int,
    body: str,
    source: str | None,
    operation: Operation,
) -> tuple[str, dict[str, Any]]:
    """The conditional change of a visible record at ``expected_revision``, with its
    revision and audit rows (no row back: a conflict, or it left the view)."""
    params = {
        **view(caller),
        **_content(address, body, source, operation),
        "id": record_id,
        "expected_revision": expected_revision,
    }
    return "change_record", params


def move_statement(
    caller: Caller,
    record_id: uuid.UUID,
    destination: RecordAddress,
    *,
    expected_revision: int,
    body: str,
) -> tuple[str, dict[str, Any]]:
    """The move of a visible record at ``expected_revision`` to ``destination``, unless
    the destination already resolves to a record (a row not ``moved``); no row back: a
    conflict, or it left the view."""
    _, params = change_statement(
        caller,
        record_id,
        destination,
        expected_revision=expected_revision,
        body=body,
        source=None,
        operation="move",
    )
    return "move_record", {**params, "owner_id": caller.owner_for(destination.namespace)}


def replace_statement(
    caller: Caller,
    address: RecordAddress,
    *,
    contexts: list[str] | None,
    expected_revision: int,
    body: str,
    source: str | None,
) -> tuple[str, dict[str, Any]]:
    """The replace of the record a path address resolves to (nearest in ``contexts``,
    by default the listening context and up) at ``expected_revision``, in one
    statement: no row when nothing is there; else ``changed``, or the revision it is
    at (none if it moved on meanwhile)."""
    params = {
        **view(caller),
        **_content(address, body, source, "replace"),
        "owner_id": caller.owner_for(address.namespace),
        "expected_revision": expected_revision,
    }
    if contexts is not None:
        params["contexts"] = contexts
    return "change_record_at", params


def delete_statement(
    caller: Caller, address: RecordAddress, *, expected_revision: int
) -> tuple[str, dict[str, Any]]:
    """The delete of the record a path address resolves to from the listening context,
    at ``expected_revision``, in one statement (read by :func:`changed_row`)."""
    params = {
        **view(caller),
        "owner_id": caller.owner_for(address.namespace),
        "kind": address.kind,
        "path": address.path,
        "expected_revision": expected_revision,
        "title": None,  # a delete writes no content
        "body": None,
        "source": None,
        "operation": "delete",
        "uri": address.uri,
    }
    return "change_record_at", params


def change(
    conn: Connection,
    caller: Caller,
    record_id: uuid.UUID,
    address: RecordAddress,
    *,
    expected_revision: int,
    body: str,
    source: str | None,
    operation: Operation,
) -> dict[str, Any]:
    """Conditionally replace a visible record's address and body; raise on conflict."""
    statement = change_statement(
        caller,
        record_id,
        address,
        expected_revision=expected_revision,
        body=body,
        source=source,
        operation=operation,
    )
    row = sql_files.one(conn, *statement)
    if row is None:
        raise conflict_or_gone(conn, caller, record_id)
    return row
