"""Canonical memory:// addresses (docs/contract.md §3).

Parsing never rewrites: an address that is not already canonical is rejected with
``invalid_argument`` naming the rule it broke, so two spellings can never reach two
different records, or one record by a spelling the caller did not write.
"""

from __future__ import annotations

import re
import unicodedata
import uuid
from dataclasses import dataclass
from typing import Literal

from memory_server.domain.errors import invalid
from memory_server.domain.limits import (
    PATH_MAX_BYTES,
    PATH_MAX_SEGMENTS,
    PATH_SEGMENT_MAX_CHARS,
    REVISION_MAX,
)

Namespace = Literal["me", "workspace"]
Kind = Literal["memories", "skills", "notes"]

SCHEME = "memory://"
NAMESPACES: tuple[Namespace, ...] = ("me", "workspace")
KINDS: tuple[Kind, ...] = ("memories", "skills", "notes")
# Matched whole (fullmatch): "$" would also let a trailing newline through.
_UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_REVISION_RE = re.compile(r"[1-9][0-9]{0,9}")
_PUNCTUATION = frozenset("._-")


@dataclass(frozen=True, slots=True)
class RecordAddress:
    """``memory://{namespace}/{kind}/{path}``: resolved against the listening context."""

    namespace: Namespace
    kind: Kind
    path: str

    @property
    def uri(self) -> str:
        return f"{SCHEME}{self.namespace}/{self.kind}/{self.path}"


@dataclass(frozen=True, slots=True)
class IdAddress:
    """``memory://record/{id}``: one record, whatever its path."""

    id: uuid.UUID

    @property
    def uri(self) -> str:
        return f"{SCHEME}record/{self.id}"


@dataclass(frozen=True, slots=True)
class RevisionAddress:
    """``memory://record/{id}/revisions/{n}``: an immutable revision."""

    id: uuid.UUID
    revision: int

    @property
    def uri(self) -> str:
        return f"{SCHEME}record/{self.id}/revisions/{self.revision}"


@dataclass(frozen=True, slots=True)
class Prefix:
    """A ``memory_list`` prefix: everything, one namespace, one kind, or a folder."""

    namespace: Namespace | None = None
    kind: Kind | None = None
    folder: str = ""  # "" or a path prefix ending in "/"


Address = RecordAddress | IdAddress | RevisionAddress


def record_uri(namespace: Namespace, kind: str, path: str) -> str:
    return f"{SCHEME}{namespace}/{kind}/{path}"


def _check_segment(segment: str, *, what: str) -> None:
    if segment == "":
        raise invalid(f"{what} has an empty segment (no '//', leading or trailing '/')")
    if segment in (".", ".."):
        raise invalid(f"{what} may not contain '.' or '..' segments")
    if len(segment) > PATH_SEGMENT_MAX_CHARS:
        raise invalid(f"{what} segment is longer than {PATH_SEGMENT_MAX_CHARS} characters")
    for char in segment:
        if char in _PUNCTUATION:
            continue
        category = unicodedata.category(char)
        if category.startswith("L") or category == "Nd":
            continue
        raise invalid(f"{what} contains a character that is not allowed: {_describe(char)}")


def _describe(char: str) -> str:
    if char == "%":
        return "'%' (percent-escapes are not allowed)"
    if char == "\\":
        return "'\\' (backslashes are not allowed)"
    name = unicodedata.name(char, "")
    category = unicodedata.category(char)
    if category.startswith("C") or category.startswith("Z"):
        return f"U+{ord(char):04X} (control, space or invisible characters are not allowed)"
    return f"{char!r} (U+{ord(char):04X} {name})".strip()


def parse_path(path: str, *, what: str = "path") -> str:
    """Validate a record path and return it unchanged (it must already be canonical)."""
    if not isinstance(path, str) or path == "":
        raise invalid(f"{what} must be a non-empty string")
    if path.startswith("/") or path.endswith("/"):
        raise invalid(f"{what} may not start or end with '/' (an empty segment)")
    if unicodedata.normalize("NFC", path) != path:
        raise invalid(f"{what} must be in Unicode NFC form")
    if len(path.encode("utf-8")) > PATH_MAX_BYTES:
        raise invalid(f"{what} is longer than {PATH_MAX_BYTES} UTF-8 bytes")
    segments = path.split("/")
    if len(segments) > PATH_MAX_SEGMENTS:
        raise invalid(f"{what} has more than {PATH_MAX_SEGMENTS} segments")
    for segment in segments:
        _check_segment(segment, what=what)
    name = segments[-1]
    stem, dot, extension = name.rpartition(".")
    if not dot or not stem.strip(".") or not extension:
        raise invalid(f"{what} must end in a file name with an extension, such as notes.md")
    return path


def _split_scheme(uri: object, *, what: str) -> str:
    if not isinstance(uri, str) or not uri.startswith(SCHEME):
        raise invalid(f"{what} must start with {SCHEME}")
    return uri[len(SCHEME) :]


def _parse_uuid(text: str, *, what: str) -> uuid.UUID:
    if not _UUID_RE.fullmatch(text):
        raise invalid(f"{what} must be a record id in lowercase canonical UUID form")
    return uuid.UUID(text)


def parse_address(uri: object, *, what: str = "uri") -> Address:
    rest = _split_scheme(uri, what=what)
    head, _, tail = rest.partition("/")
    if head == "record":
        parts = tail.split("/")
        if len(parts) == 1:
            return IdAddress(_parse_uuid(parts[0], what=what))
        if len(parts) == 3 and parts[1] == "revisions":
            # A revision is an SQL integer: a larger number names no revision at all.
            if not _REVISION_RE.fullmatch(parts[2]) or int(parts[2]) > REVISION_MAX:
                raise invalid(
                    f"{what} revision must be a positive integer (1 to {REVISION_MAX})"
                    " without leading zeros"
                )
            return RevisionAddress(_parse_uuid(parts[0], what=what), int(parts[2]))
        raise invalid(
            f"{what} must be memory://record/{{id}} or memory://record/{{id}}/revisions/{{n}}"
        )
    if head not in NAMESPACES:
        raise invalid(f"{what} namespace must be one of: me, workspace, record")
    kind, _, path = tail.partition("/")
    if kind not in KINDS:
        raise invalid(f"{what} kind must be one of: memories, skills, notes")
    parse_path(path, what=f"{what} path")
    if kind == "skills" and "/" not in path:
        raise invalid(f"{what}: skills live in a folder, as skills/{{name}}/SKILL.md")
    return RecordAddress(head, kind, path)


def parse_record_address(uri: object, *, what: str = "uri") -> RecordAddress | IdAddress:
    address = parse_address(uri, what=what)
    if isinstance(address, RevisionAddress):
        raise invalid(f"{what} names a revision, which is read-only")
    return address


def parse_path_address(uri: object, *, what: str = "uri") -> RecordAddress:
    address = parse_address(uri, what=what)
    if not isinstance(address, RecordAddress):
        raise invalid(f"{what} must be a memory://me/… or memory://workspace/… path")
    return address


def parse_prefix(prefix: object) -> Prefix:
    """Parse a ``memory_list`` prefix; it must end at a segment boundary."""
    if prefix in (None, "", SCHEME):
        return Prefix()
    rest = _split_scheme(prefix, what="prefix")
    if not rest.endswith("/"):
        raise invalid("prefix must end at a segment boundary ('/')")
    parts = rest[:-1].split("/")
    namespace = parts[0]
    if namespace not in NAMESPACES:
        raise invalid("prefix namespace must be me or workspace")
    if len(parts) == 1:
        return Prefix(namespace)
    kind = parts[1]
    if kind not in KINDS:
        raise invalid("prefix kind must be one of: memories, skills, notes")
    folder_segments = parts[2:]
    if len(folder_segments) >= PATH_MAX_SEGMENTS:
        raise invalid(f"prefix has more than {PATH_MAX_SEGMENTS - 1} folder segments")
    for segment in folder_segments:
        _check_segment(segment, what="prefix")
    folder = "/".join(folder_segments)
    if unicodedata.normalize("NFC", folder) != folder:
        raise invalid("prefix must be in Unicode NFC form")
    return Prefix(namespace, kind, folder + "/" if folder else "")
