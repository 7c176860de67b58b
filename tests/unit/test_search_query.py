"""How a search query is split into words, phrases and exclusions."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from memory_server.domain.search_query import ParsedQuery, parse_query


@pytest.mark.parametrize(
    ("text", "words", "phrases", "excluded"),
    [
        ("when did Priya sign the lease", "when did Priya sign the lease", [], []),
        ('"release train" leaves', "leaves", ["release train"], []),
        ("release -noon", "release", [], ["noon"]),
        ('-"release train" noon', "noon", [], ["release train"]),
        ('a "unclosed phrase', "a", ["unclosed phrase"], []),
        ("x-ray e-mail", "x-ray e-mail", [], []),  # a hyphen inside a word is the word's
        ("- x -", "- x -", [], []),  # a lone hyphen excludes nothing
        ('a"b c"d', "a d", ["b c"], []),
        ('""  ""', "", [], []),
        ("O'Brien C:\\temp", "O'Brien C:\\temp", [], []),
    ],
)
def test_parts(text: str, words: str, phrases: list[str], excluded: list[str]) -> None:
    assert parse_query(text) == ParsedQuery(words, phrases, excluded)


@given(st.text(max_size=60))
def test_every_character_outside_quotes_and_markers_is_kept(text: str) -> None:
    """Nothing is lost or invented: the parts hold the query's text minus quotes, the
    exclusion markers and whitespace."""
    parsed = parse_query(text)
    kept = parsed.words + "".join(parsed.phrases) + "".join(parsed.excluded)
    squeeze = "".join(c for c in kept if not c.isspace())
    source = "".join(c for c in text if not c.isspace() and c != '"')
    assert len(squeeze) <= len(source)
    assert len(source) - len(squeeze) <= len(parsed.excluded)  # one '-' per exclusion
