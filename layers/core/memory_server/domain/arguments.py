"""Tool arguments (docs/contract.md §5) as strict pydantic models.

The same models give the MCP layer its ``inputSchema`` (``additionalProperties:
false``) and give the operations validated input, so a direct caller of the Python
API gets the same clear ``invalid_argument`` as a caller over MCP.
"""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any, Literal, TypeVar, cast, get_args

from annotated_types import Ge, Le
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.fields import FieldInfo

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

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        integer_ranges(cls)  # an integer argument without both bounds fails at import


def _bounds(field: FieldInfo) -> tuple[int | None, int | None] | None:
    """An integer field's ``ge`` and ``le`` (None where missing); None if not an integer."""
    if field.annotation is not int and int not in get_args(field.annotation):
        return None
    low = next((m.ge for m in field.metadata if isinstance(m, Ge)), None)
    high = next((m.le for m in field.metadata if isinstance(m, Le)), None)
    return cast(int | None, low), cast(int | None, high)  # an int field's bounds are ints


@cache
def integer_ranges(model: type[BaseModel]) -> dict[str, tuple[int, int]]:
    """Each integer argument of ``model`` and its inclusive range (the published
    ``minimum`` and ``maximum``). Every one has both bounds: an unbounded number
    would reach SQL parameters that hold only so much (limits.REVISION_MAX)."""
    ranges = {}
    for name, field in model.model_fields.items():
        bounds = _bounds(field)
        if bounds is None:
            continue
        low, high = bounds
        if low is None or high is None:
            raise TypeError(f"{model.__name__}.{name}: an integer needs ge= and le= bounds")
        ranges[name] = (low, high)
    return ranges


# Pydantic's error types for a value that is not an integer or out of its range.
_INTEGER_ERRORS = frozenset(
    {"int_type", "int_parsing", "int_from_float", "greater_than_equal", "less_than_equal"}
)


def integer_problem(model: type[BaseModel], error: Any) -> str | None:
    """The message for ``error`` (a pydantic error dict) when it is about a bounded
    integer field of ``model``: it names the whole range, never the value sent."""
    loc = error["loc"]
    if error["type"] not in _INTEGER_ERRORS or len(loc) != 1:
        return None
    field = model.model_fields.get(str(loc[0]))
    bounds = _bounds(field) if field is not None else None
    if bounds is None or bounds[0] is None or bounds[1] is None:
        return None
    return f"Input should be an integer from {bounds[0]} to {bounds[1]}"


class ListArgs(_Args):
    prefix: Uri | None = None
    limit: int = Field(limits.LIST_DEFAULT_ITEMS, ge=1, le=limits.LIST_MAX_ITEMS)
    cursor: str | None = Field(default=None, max_length=limits.CURSOR_MAX_CHARS)


class ReadArgs(_Args):
    uri: Uri
    offset: int = Field(0, ge=0, le=limits.CONTENT_MAX_BYTES)
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
    expected_revision: int = Field(
        ge=0, le=limits.REVISION_MAX, description="0 creates; otherwise the current revision"
    )
    source: Source | None = None
    context: Context | None = None
    expires_at: Expiry = None
    pinned: bool | None = Field(
        default=None, description="Pinned records lead the session-start briefing (memory_brief)"
    )


class DeleteArgs(_Args):
    uri: Uri
    expected_revision: int = Field(ge=1, le=limits.REVISION_MAX)


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
    expected_revision: int = Field(ge=1, le=limits.REVISION_MAX)


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
            problems.append(f"{where}: {integer_problem(model, error) or error['msg']}")
        raise invalid("; ".join(problems)) from None
