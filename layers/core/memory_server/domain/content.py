"""Content rules: what a record's text, a source and a SKILL.md must be, and the title
a record takes from its content. Pure functions: no I/O."""

from __future__ import annotations

import re

from memory_server.domain.addresses import RecordAddress
from memory_server.domain.errors import ToolError, invalid
from memory_server.domain.limits import (
    CONTENT_MAX_BYTES,
    PROMPT_ARGUMENTS_MAX,
    SOURCE_MAX_BYTES,
    TITLE_MAX_BYTES,
)
from memory_server.domain.utf8 import utf8_prefix

_FRONT_MATTER = re.compile(r"\A---\n(.*?)\n---(?:\n|\Z)", re.DOTALL)
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_ARGUMENT_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
# Completing this argument of any prompt offers prompt names, so no skill declares it.
PROMPT_NAME_ARGUMENT = "name"


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
    check_text(source, what="source", max_bytes=SOURCE_MAX_BYTES)
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
        if not _ARGUMENT_NAME.fullmatch(name) or name in (*names, PROMPT_NAME_ARGUMENT):
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
