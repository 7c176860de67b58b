"""Listening contexts (docs/contract.md §4): who can hear, as a lattice of contexts.

A context key is canonical text: ``workspace``, ``channel:{id}``,
``channel:{id}/thread:{id}`` or ``dm:{id}``, each ``{id}`` percent-encoded UTF-8 with
only unreserved characters left bare, so no id can forge ``:`` or ``/``. Visibility
is exact membership in the ancestor set, never a text prefix.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Literal
from urllib.parse import quote, unquote_to_bytes

from memory_server.domain.errors import invalid
from memory_server.domain.limits import CONTEXT_ID_MAX_BYTES

WORKSPACE = "workspace"
_ENCODED_ID_RE = re.compile(r"^(?:[A-Za-z0-9\-._~]|%[0-9A-F]{2})+$")

ContextKind = Literal["workspace", "channel", "thread", "dm"]


@dataclass(frozen=True, slots=True)
class ListeningContext:
    """A parsed context. ``ancestors`` runs from the context itself up to the workspace."""

    key: str
    kind: ContextKind
    channel: str | None = None  # decoded channel id (for channel and thread)
    thread: str | None = None  # decoded thread id
    dm: str | None = None  # decoded dm id

    @property
    def ancestors(self) -> tuple[str, ...]:
        if self.kind == "workspace":
            return (WORKSPACE,)
        if self.kind == "thread":
            assert self.channel is not None
            return (self.key, f"channel:{encode_id(self.channel)}", WORKSPACE)
        return (self.key, WORKSPACE)

    @property
    def channel_key(self) -> str | None:
        return f"channel:{encode_id(self.channel)}" if self.channel is not None else None


def gate_key(context: ListeningContext) -> str | None:
    """The registered context that decides whether this listening context is usable:
    a DM itself, a channel or a thread's channel; ``None`` for the workspace."""
    if context.kind == "dm":
        return context.key
    return context.channel_key  # a thread follows its channel; None for the workspace


def encode_id(raw: str) -> str:
    """Percent-encode an id the canonical way (uppercase hex, unreserved kept)."""
    return quote(raw, safe="-._~")


def _decode_id(encoded: str, *, what: str) -> str:
    if not encoded:
        raise invalid(f"context {what} id may not be empty")
    if not _ENCODED_ID_RE.fullmatch(encoded):
        raise invalid(
            f"context {what} id must be percent-encoded UTF-8 "
            "(letters, digits, '-._~' bare; everything else as %XX with uppercase hex)"
        )
    raw_bytes = unquote_to_bytes(encoded)
    if len(raw_bytes) > CONTEXT_ID_MAX_BYTES:
        raise invalid(f"context {what} id is longer than {CONTEXT_ID_MAX_BYTES} bytes")
    try:
        raw = raw_bytes.decode("utf-8")
    except UnicodeDecodeError:
        raise invalid(f"context {what} id is not valid UTF-8 once decoded") from None
    if encode_id(raw) != encoded:
        raise invalid(f"context {what} id is not in canonical percent-encoding")
    if any(unicodedata.category(c).startswith("C") for c in raw):
        raise invalid(f"context {what} id may not contain control or invisible characters")
    if unicodedata.normalize("NFC", raw) != raw:
        raise invalid(f"context {what} id must be in Unicode NFC form")
    return raw


def parse_context(value: str | None) -> ListeningContext:
    """Parse a ``Memory-Context`` value; empty or absent means the workspace."""
    if value is None or value == "" or value == WORKSPACE:
        return ListeningContext(WORKSPACE, "workspace")
    if not isinstance(value, str):
        raise invalid("context must be a string")
    if value.startswith("channel:"):
        channel_part, sep, thread_part = value[len("channel:") :].partition("/")
        channel = _decode_id(channel_part, what="channel")
        if not sep:
            return ListeningContext(value, "channel", channel=channel)
        if not thread_part.startswith("thread:"):
            raise invalid("context must be channel:{id}/thread:{id} below a channel")
        thread = _decode_id(thread_part[len("thread:") :], what="thread")
        return ListeningContext(value, "thread", channel=channel, thread=thread)
    if value.startswith("dm:"):
        return ListeningContext(value, "dm", dm=_decode_id(value[len("dm:") :], what="dm"))
    raise invalid(
        "context must be empty, 'workspace', channel:{id}, channel:{id}/thread:{id} or dm:{id}"
    )


def parse_target_context(value: str | None, listening: ListeningContext) -> str:
    """The context a new record lands in: the listening one or a named ancestor of it."""
    if value is None:
        return listening.key
    target = parse_context(value)
    if target.key not in listening.ancestors:
        raise invalid("context must be the listening context or one of its ancestors")
    return target.key
