"""The embedder port: texts in, unit vectors out (docs/store.md, "Embeddings").

Two adapters implement :class:`Embedder`: ``memory_server.data.bedrock_embedder``
(Amazon Bedrock, deployed) and ``memory_local.embedder`` (a small model on CPU, for
``make dev`` and the tests; never in the Lambda layer). Callers depend on this module
only.

Errors split by when they can happen and what the caller does:

- :class:`EmbedderError` is raised when an adapter is built (the model file is missing
  or corrupt, a dimension the model does not offer), and its subclass
  :class:`EmbeddingSpaceMismatch` at start when the stored vectors are of another
  model or dimension: the process refuses to start, instead of failing (or ranking
  vectors of two spaces) at its first search;
- :class:`EmbeddingUnavailable` is raised by ``embed`` when the service cannot answer
  now (throttled, denied, timed out, down, or it refused this text): search falls back
  to words alone and says so, a writer leaves the record for a later pass.

Empty text has no vector. :func:`prepare_text` returns ``None`` for text that is empty
or only whitespace, and every adapter's ``embed`` refuses such a text with
``ValueError``: the caller stores no vector for that record (it stays findable by
words), rather than a vector of nothing that would sit close to every short query.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

# One run of whitespace becomes one space: newlines and indentation carry no meaning
# for the models, and collapsing them makes the character bounds below mean text.
_SPACES = re.compile(r"\s+")
# A cut goes back at most this far to end on a word boundary (a longer run without
# spaces, such as a URL or CJK text, is cut where it is).
_WORD_BACKTRACK = 32


class EmbedderError(Exception):
    """The embedder cannot be built: raised at construction, so at start."""


class EmbeddingSpaceMismatch(EmbedderError):
    """Stored vectors are of another model or dimension than the configured embedder's:
    raised at start, so that a search never ranks vectors of two spaces together."""

    def __init__(self, configured: tuple[str, int], stored: list[tuple[str, int]]) -> None:
        others = ", ".join(f"{m} ({d} dimensions)" for m, d in stored)
        super().__init__(
            f"the database holds vectors of {others}; the configured embedder makes "
            f"{configured[0]} ({configured[1]} dimensions), and vectors of two spaces are "
            "never compared. Re-embed every record first: `memoryctl embeddings backfill` "
            "with this EMBEDDER (deployed: the migrations function's `embed` task; "
            "`make dev` does it at start), or set EMBEDDER back to the stored model"
        )
        self.configured = configured
        self.stored = stored


def require_space(embedder: Embedder, stored: list[tuple[str, int]]) -> None:
    """:class:`EmbeddingSpaceMismatch` unless every stored vector is in
    ``embedder``'s space (none stored is fine: a new database, or one upgraded before
    its backfill, whose records are found by words until embedded)."""
    configured = (embedder.model, embedder.dimensions)
    others = [space for space in stored if space != configured]
    if others:
        raise EmbeddingSpaceMismatch(configured, others)


class EmbeddingUnavailable(Exception):
    """No vector now; the caller falls back to lexical search (or retries later).

    ``reason`` is a short word for the response flag and the logs: ``throttled``,
    ``denied``, ``timeout``, ``unavailable`` or ``refused`` (the service would not
    embed this text).
    """

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


class Embedder(Protocol):
    @property
    def model(self) -> str:
        """A stable id of the vector space, recorded next to each vector: a changed
        id means every vector must be computed again."""
        ...

    @property
    def dimensions(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One L2-normalised vector per text, in the order given.

        Raises ``ValueError`` for a text that :func:`prepare_text` maps to ``None``,
        :class:`EmbeddingUnavailable` when the service cannot answer.
        """
        ...


def prepare_text(text: str, max_chars: int) -> str | None:
    """The text an adapter embeds: whitespace collapsed, cut to ``max_chars``.

    ``None`` for empty or whitespace-only text (no vector). A cut ends on a word
    boundary when there is one close before the bound, so the model never sees a
    half word. Models read the start of a text and drop the rest themselves; cutting
    first bounds the work for a 64 KB record.
    """
    if max_chars < 1:
        raise ValueError("max_chars must be positive")
    flat = _SPACES.sub(" ", text).strip()
    if not flat:
        return None
    if len(flat) <= max_chars:
        return flat
    cut = flat[:max_chars]
    if flat[max_chars] != " ":
        space = cut.rfind(" ", max_chars - _WORD_BACKTRACK)
        if space > 0:
            cut = cut[:space]
    return cut.rstrip()


def require_text(texts: Sequence[str], max_chars: int) -> list[str]:
    """:func:`prepare_text` for each text, or ``ValueError`` naming an empty one."""
    if isinstance(texts, str):  # a str is a Sequence[str]: one text passed bare
        raise TypeError("embed takes a sequence of texts, not one str")
    prepared: list[str] = []
    for n, text in enumerate(texts):
        ready = prepare_text(text, max_chars)
        if ready is None:
            raise ValueError(f"text {n} is empty: empty text has no vector")
        prepared.append(ready)
    return prepared
