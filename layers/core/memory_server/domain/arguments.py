"""Tool arguments (docs/contract.md §5) as strict pydantic models.

The same models give the MCP layer its ``inputSchema`` (``additionalProperties:
false``) and give the operations validated input, so a direct caller of the Python
API gets the same clear ``invalid_argument`` as a caller over MCP.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memory_server.domain import limits
from memory_server.domain.errors import invalid

Uri = Annotated[
    str, Field(min_length=1, max_length=limits.URI_MAX_CHARS, description="A memory:// URI")
]
Source = Annotated[
    str,
    Field(
        min_length=1,
        max_length=limits.SOURCE_MAX_CHARS,
        description="Provenance: where this came from",
    ),
]
Context = Annotated[
    str,
    Field(
        max_length=limits.CONTEXT_ARG_MAX_CHARS,
        description="Ancestor context to write into ('workspace' or an ancestor path)",
    ),
]
KindName = Literal["memories", "skills", "notes"]
Time = Annotated[
    str,
    Field(
        min_length=1,
        max_length=limits.TIME_MAX_CHARS,
        description="An RFC 3339 time, like 2026-12-31T23:59:59Z",
        json_schema_extra={"format": "date-time"},
    ),
]
Expiry = Annotated[
    Time | None,
    Field(
        description=(
            "When the record stops existing (RFC 3339, future, at most "
            f"{limits.EXPIRY_MAX_YEARS} years ahead); null removes an expiry, absent "
            "leaves it as it is"
        )
    ),
]


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class ListArgs(_Args):
    prefix: Uri | None = None
    limit: int = Field(limits.LIST_DEFAULT_ITEMS, ge=1, le=limits.LIST_MAX_ITEMS)
    cursor: str | None = Field(None, max_length=limits.CURSOR_MAX_CHARS)


class ReadArgs(_Args):
    uri: Uri
    offset: int = Field(0, ge=0)
    max_bytes: int = Field(limits.READ_DEFAULT_BYTES, ge=1, le=limits.READ_MAX_BYTES)
    history: bool = False
    as_of: Time | None = Field(
        default=None, description="Read the revision that was current at this time (RFC 3339)"
    )


def _default_kinds() -> list[KindName]:
    return ["memories", "notes"]  # skills only when asked


class SearchArgs(_Args):
    query: str = Field(
        min_length=1,
        max_length=limits.QUERY_MAX_CHARS,
        description='A question or words in plain language; "phrase" and -word work',
    )
    namespace: Literal["personal", "workspace", "all"] = "all"
    kinds: list[KindName] = Field(default_factory=_default_kinds, min_length=1, max_length=3)
    limit: int = Field(limits.SEARCH_MAX_HITS, ge=1, le=limits.SEARCH_MAX_HITS)


class WriteArgs(_Args):
    uri: Uri
    content: str = Field(max_length=limits.CONTENT_MAX_BYTES)
    expected_revision: int = Field(ge=0, description="0 creates; otherwise the current revision")
    source: Source | None = None
    context: Context | None = None
    expires_at: Expiry = None
    pinned: bool | None = Field(
        default=None, description="Pinned records lead the session-start briefing (memory_brief)"
    )


class DeleteArgs(_Args):
    uri: Uri
    expected_revision: int = Field(ge=1)


class RememberArgs(_Args):
    uri: Uri
    fact: str = Field(min_length=1, max_length=limits.FACT_MAX_BYTES)
    idempotency_key: str = Field(pattern=limits.IDEMPOTENCY_KEY_PATTERN)
    source: Source | None = None
    context: Context | None = None
    supersedes: str | None = Field(
        default=None,
        min_length=1,
        max_length=limits.FACT_MAX_BYTES,
        description="A line of the record that says the old fact: replaced by this fact",
    )
    expires_at: Expiry = None


class MoveArgs(_Args):
    uri: Uri
    new_uri: Uri
    expected_revision: int = Field(ge=1)


class BriefArgs(_Args):
    max_bytes: int = Field(
        limits.BRIEF_DEFAULT_BYTES, ge=limits.BRIEF_MIN_BYTES, le=limits.BRIEF_MAX_BYTES
    )
    since: Time | None = Field(
        default=None, description="Recent changes since this time (RFC 3339); default: the latest"
    )


class ScopesArgs(_Args):
    pass


def given(args: _Args, name: str) -> bool:
    """Was the argument ``name`` sent (``null`` included), rather than left out?"""
    return name in args.model_fields_set


ArgsT = TypeVar("ArgsT", bound=_Args)


def parse_args(model: type[ArgsT], raw: Any) -> ArgsT:
    """Validate raw tool arguments; the error names the argument and the rule."""
    if not isinstance(raw, dict):
        raise invalid("arguments must be a JSON object")
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        problems = []
        for error in exc.errors(include_url=False, include_input=False)[:5]:
            where = ".".join(str(p) for p in error["loc"]) or "arguments"
            problems.append(f"{where}: {error['msg']}")
        raise invalid("; ".join(problems)) from None
