"""The admin API's JSON, as strict pydantic models (requests) and plain ones (responses).

Requests are strict (no coercion, no unknown fields), so a client learns which field
broke which rule. Responses are models too: the handler builds them, so what goes
out is what ``docs/admin-openapi.json`` (generated from these) describes.
"""

from __future__ import annotations

from typing import Annotated, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from memory_server.admin.errors import invalid_field
from memory_server.domain.arguments import integer_problem
from memory_server.domain.caller import PrincipalKind
from memory_server.domain.contexts import ListeningContext, parse_context
from memory_server.domain.errors import AdminError, ToolError
from memory_server.domain.grants import AGENT_KEY_NAME_PATTERN, Grant
from memory_server.domain.limits import (
    ADMIN_AUDIT_DEFAULT_ITEMS,
    ADMIN_AUDIT_MAX_ITEMS,
    ADMIN_CONTEXT_MEMBERS_MAX,
    ADMIN_HANDLE_MAX_CHARS,
    BIGINT_MAX,
)

Scope = Literal[
    "memory/read", "memory/write.personal", "memory/write.shared", "memory/delete", "memory/admin"
]
# A Cognito ``sub`` (a UUID) or an app client id; ':' is left out so no caller can
# name an erased identity ('erased:…').
SUBJECT_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.@+-]{0,127}$"
Subject = Annotated[
    str,
    Field(
        pattern=SUBJECT_PATTERN,
        description="A person's Cognito sub or a service's app client id",
    ),
]
KeyName = Annotated[
    str,
    Field(
        pattern=AGENT_KEY_NAME_PATTERN,
        description="Name of the agent key, unique among the workspace's live keys",
    ),
]


HANDLE_RULE = f"1–{ADMIN_HANDLE_MAX_CHARS} printable characters"


def handle_is_valid(handle: str) -> bool:
    """An identity's handle (shown in every workspace it belongs to)."""
    return 1 <= len(handle) <= ADMIN_HANDLE_MAX_CHARS and handle.isprintable()


def _unique(values: list[str], what: str) -> list[str]:
    if len(set(values)) != len(values):
        raise ValueError(f"{what} must not repeat")
    return values


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class _Out(BaseModel):
    # Every field is always present in a response, defaults included.
    model_config = ConfigDict(extra="forbid", json_schema_serialization_defaults_required=True)


# -- requests -------------------------------------------------------------------


class MemoryFeatureIn(_In):
    enabled: bool


def _reads_to_write(values: list[str], read: str, writes: tuple[str, ...]) -> None:
    if read not in values and any(value in writes for value in values):
        raise ValueError(f"writing needs reading: add {read!r}")


def _grants_rules(value: list[Grant]) -> list[Grant]:
    _unique(list(value), "grants")
    _reads_to_write(list(value), "read", ("write:personal", "write:shared", "delete"))
    return value


class MemberIn(_In):
    """A member's grants change (or this workspace's own agent key joins again);
    everyone else joins by accepting an invitation."""

    grants: list[Grant] = Field(
        max_length=5, description="The member's grants (writes and delete need read)"
    )
    personal_namespace: bool | None = Field(
        None, description="Services only (people always have one); default: unchanged, or false"
    )

    @field_validator("grants")
    @classmethod
    def _grants_unique(cls, value: list[Grant]) -> list[Grant]:
        return _grants_rules(value)


class InvitationIn(_In):
    """Invite an identity by subject: it becomes a member when it accepts with its own
    token. Any subject gets the same answer (known, unknown or another workspace's)."""

    subject: Subject
    grants: list[Grant] = Field(
        max_length=5, description="The grants it will hold (writes and delete need read)"
    )
    personal_namespace: bool | None = Field(
        None,
        description="A service's personal namespace when it joins (people always have one)",
    )

    @field_validator("grants")
    @classmethod
    def _grants_unique(cls, value: list[Grant]) -> list[Grant]:
        return _grants_rules(value)


class AcceptIn(_In):
    """The invitee's acceptance; a person new to the service names its handle."""

    handle: str | None = Field(
        None,
        description=(
            f"Your handle, {HANDLE_RULE}, shown in every workspace you belong to: needed "
            "only when you are new to the service (an existing identity keeps its own)"
        ),
    )

    @field_validator("handle")
    @classmethod
    def _printable(cls, value: str | None) -> str | None:
        if value is not None and not handle_is_valid(value):
            raise ValueError(f"a handle is {HANDLE_RULE}")
        return value


class AgentKeyIn(_In):
    name: KeyName
    scopes: list[Scope] = Field(min_length=1, max_length=5)
    personal_namespace: bool = False

    @field_validator("scopes")
    @classmethod
    def _scopes_unique(cls, value: list[Scope]) -> list[Scope]:
        _unique(list(value), "scopes")
        _reads_to_write(
            list(value),
            "memory/read",
            ("memory/write.personal", "memory/write.shared", "memory/delete"),
        )
        return value


class ContextIn(_In):
    members: list[Subject] = Field(
        max_length=ADMIN_CONTEXT_MEMBERS_MAX, description="Subjects of workspace members"
    )

    @field_validator("members")
    @classmethod
    def _members_unique(cls, value: list[str]) -> list[str]:
        return _unique(value, "members")


class AuditQuery(BaseModel):
    # Query parameters arrive as strings: lax parsing, the same bounds.
    model_config = ConfigDict(extra="forbid", frozen=True)
    limit: int = Field(ADMIN_AUDIT_DEFAULT_ITEMS, ge=1, le=ADMIN_AUDIT_MAX_ITEMS)
    cursor: str | None = Field(None, pattern=r"^[1-9][0-9]{0,18}$")

    @field_validator("cursor")
    @classmethod
    def _cursor_is_an_event_id(cls, value: str | None) -> str | None:
        # An audit event id is a bigint: a larger number names no event.
        if value is not None and int(value) > BIGINT_MAX:
            raise ValueError(f"cursor must be an event id (at most {BIGINT_MAX})")
        return value


# -- responses ------------------------------------------------------------------


class MemoryFeature(_Out):
    enabled: bool


class Member(_Out):
    principal_id: str
    kind: PrincipalKind
    subject: str
    handle: str
    grants: list[Grant]
    personal_namespace: bool
    agent_key: bool
    handle_conflict: bool = Field(
        default=False,
        description=(
            "Another member of the workspace holds the same handle as the uniqueness "
            "rule compares them: found when the database was upgraded to version 6, "
            "which flags both. Nothing is lost; the operator renames one of them "
            "(memoryctl identities rename), which clears the flag."
        ),
    )


class MemberList(_Out):
    members: list[Member]


class MemberRemoved(_Out):
    removed: str


class AgentKey(_Out):
    client_id: str
    name: str
    scopes: list[Scope]
    grants: list[Grant]
    personal_namespace: bool
    created_at: str
    created_by: str | None
    created_by_kind: PrincipalKind | None = Field(
        description="The kind of the admin who made it (person or service), null with created_by"
    )


class AgentKeyCreated(AgentKey):
    client_secret: str = Field(description="Shown once: it is not stored by the service")


class AgentKeyList(_Out):
    agent_keys: list[AgentKey]


class AgentKeyRevoked(_Out):
    revoked: str
    client_deleted: bool = Field(description="The app client was deleted from the user pool")


class RegisteredContext(_Out):
    context: str
    kind: Literal["channel", "dm"]
    private: bool
    members: list[str] | None = Field(
        description="Subjects of its members; null where you are not one of them"
    )


class ContextUsage(_Out):
    context: str
    records: int


class ContextList(_Out):
    contexts: list[RegisteredContext]
    in_use: list[ContextUsage]


class ContextRemoved(_Out):
    removed: str


class ContextDeleted(_Out):
    deleted: str
    records: int = Field(description="Records deleted (in it and its threads, every namespace)")
    revisions_purged: int = Field(description="Revisions whose title and body were purged")


class Invitation(_Out):
    id: str
    subject: str
    grants: list[Grant]
    personal_namespace: bool | None
    invited_by: str | None
    invited_by_kind: PrincipalKind | None = Field(
        description="The kind of the admin who invited (person or service), null with invited_by"
    )
    created_at: str
    expires_at: str
    accept: str = Field(description="Where the invitee accepts, with its own token (POST)")


class InvitationList(_Out):
    invitations: list[Invitation]


class InvitationRevoked(_Out):
    revoked: str


class AuditEvent(_Out):
    id: int
    time: str
    operation: str = Field(
        description="A record's change (create, replace, merge, supersede, move, delete, "
        "expire) or an admin change"
    )
    uri: str
    record_id: str | None
    revision: int
    actor: str = Field(
        description="The principal id; the nil UUID for what the server itself did (expire)"
    )
    actor_handle: str | None
    actor_kind: PrincipalKind | None = Field(
        description="The actor's kind beside its handle: person, or service (an agent key, "
        "bot or CI job); null with actor_handle"
    )
    source: str | None
    request_id: str | None
    details: dict[str, object] | None
    published: bool


class AuditPage(_Out):
    events: list[AuditEvent]
    next_cursor: str | None


class Problem(_Out):
    field: str
    rule: str
    message: str


class ErrorBody(_Out):
    error: str
    message: str
    problems: list[Problem] = Field(default_factory=list)


# -- validation -----------------------------------------------------------------

ModelT = TypeVar("ModelT", bound=BaseModel)


def problems_of(
    exc: ValidationError, *, where: str = "body", model: type[BaseModel] | None = None
) -> list[dict[str, str]]:
    problems = []
    for error in exc.errors(include_url=False, include_input=False)[:10]:
        field = ".".join(str(part) for part in error["loc"]) or where
        message = (integer_problem(model, error) if model else None) or error["msg"]
        problems.append({"field": field, "rule": error["type"], "message": message})
    return problems


def parse_json(model: type[ModelT], raw: bytes) -> ModelT:
    """A request body as ``model``; 422 naming every broken field and rule."""
    try:
        return model.model_validate_json(raw or b"null")
    except ValidationError as exc:
        raise _unprocessable(problems_of(exc, model=model)) from None


def parse_query(model: type[ModelT], params: dict[str, str]) -> ModelT:
    try:
        return model.model_validate(params)
    except ValidationError as exc:
        raise _unprocessable(problems_of(exc, where="query", model=model)) from None


def _unprocessable(problems: list[dict[str, str]]) -> AdminError:
    message = "; ".join(f"{p['field']}: {p['message']}" for p in problems)
    return AdminError(422, "invalid_request", message, problems)


def registrable_context(context_key: str) -> ListeningContext:
    """A context an admin or operator may register: a channel or a DM, never a thread
    (threads follow their channel). The 422 names the rule broken."""
    try:
        context = parse_context(context_key)
    except ToolError as error:
        raise invalid_field("context", "context_syntax", error.message) from None
    if context.kind not in ("channel", "dm"):
        raise invalid_field(
            "context",
            "channel_or_dm",
            "only channels and DMs are registered; threads follow their channel",
        )
    return context
