"""The embedder port: texts in, unit vectors out (docs/store.md, "Embeddings").

Two adapters implement :class:`Embedder`: ``memory_server.data.bedrock_embedder``
(Amazon Bedrock, deployed) and ``memory_local.embedder`` (a small model on CPU, for
``make dev`` and the tests; never in the Lambda layer). Callers depend on this module
only.

Errors split by when they can happen and what the caller does:

- :class:`EmbedderError` is raised when an adapter is built (the model file is missing
  or corrupt, a dimension the model does not offer): the process refuses to start,
  instead of failing at its first search;
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
