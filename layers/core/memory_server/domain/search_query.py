"""How memory_search reads a query (docs/contract.md §5).

A query is plain language. It is split here into three parts, and the database turns
each part into English lexemes (stemming, stop words) with the same text-search
configuration that indexed the records:

- ``words``: everything outside quotes that is not excluded. A record matches when
  it contains any of their lexemes; ranking decides the order.
- ``phrases``: each ``"quoted phrase"`` matches where its words stand in that order.
  An unclosed quote runs to the end of the query.
- ``excluded``: a word or quoted phrase right after a ``-`` that starts a token
  (``-noon``, ``-"release train"``) removes the records containing it.

Nothing here is syntax to the database: the parts travel as text parameters and are
only ever given to ``to_tsvector`` and ``phraseto_tsquery``.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    words: str = ""
    phrases: list[str] = field(default_factory=list)
    excluded: list[str] = field(default_factory=list)


def parse_query(text: str) -> ParsedQuery:
    words: list[str] = []
    phrases: list[str] = []
    excluded: list[str] = []
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char.isspace():
            i += 1
            continue
        negated = char == "-" and i + 1 < n and not text[i + 1].isspace()
        start = i + 1 if negated else i
        if start < n and text[start] == '"':
            end = text.find('"', start + 1)
            end = n if end < 0 else end
            part = text[start + 1 : end]
            i = end + 1
            if part.strip():
                (excluded if negated else phrases).append(part)
            continue
        end = start
        while end < n and not text[end].isspace() and text[end] != '"':
            end += 1
        part = text[start:end]
        i = end
        if part:
            (excluded if negated else words).append(part)
    return ParsedQuery(" ".join(words), phrases, excluded)
