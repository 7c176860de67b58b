"""The fusion of the words' and the meaning's candidates (operations.memory_search.fuse).

The weights and scales were measured on the project's own sets (bench/hybrid_bench.py);
these tests pin the properties that measurement relies on.
"""

from __future__ import annotations

import itertools
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st
from memory_server.domain.ranking import DeterministicRanker
from memory_server.operations.memory_search import fuse

A, B, C = (uuid.UUID(int=n) for n in (1, 2, 3))
WEIGHT = 0.35


def order(
    words: list[tuple[uuid.UUID, float]],
    full_score: float,
    meaning: list[tuple[uuid.UUID, float]] | None,
) -> list[uuid.UUID]:
    offered, _ = fuse(words, full_score, meaning, WEIGHT)
    return [c.id for c in DeterministicRanker().rank("", offered, 8)]


def test_a_weak_words_match_does_not_bury_what_only_meaning_found() -> None:
    # A shares two everyday words of a long question (a tenth of its full score); B
    # was written in other words and is the nearest by meaning.
    assert order([(A, 1.2)], 12.0, [(B, 0.71), (A, 0.20)]) == [B, A]


def test_a_strong_words_match_stays_above_what_only_meaning_found() -> None:
    # A holds every word of the question (more than the full score: in its title);
    # B is only near in meaning. Meaning's whole weight cannot lift B over A.
    assert order([(A, 14.0), (C, 3.0)], 12.0, [(B, 0.9), (C, 0.1)]) == [A, B, C]


def test_words_alone_keep_their_scores_and_order() -> None:
    offered, matched = fuse([(A, 5.0), (B, 7.0)], 12.0, None, WEIGHT)
    assert {(c.id, c.score) for c in offered} == {(A, 5.0), (B, 7.0)}
    assert matched == {A: "words", B: "words"}


def test_each_hit_says_which_side_found_it() -> None:
    _, matched = fuse([(A, 3.0), (B, 2.0)], 6.0, [(B, 0.5), (C, 0.4)], WEIGHT)
    assert matched == {A: "words", B: "both", C: "meaning"}


def test_an_empty_meaning_side_leaves_the_words_scaled() -> None:
    offered, matched = fuse([(A, 3.0)], 6.0, [], WEIGHT)
    assert [c.id for c in offered] == [A]
    assert offered[0].score == pytest.approx((1 - WEIGHT) * 0.5)
    assert matched == {A: "words"}


def test_a_record_pointing_away_counts_nothing_by_meaning() -> None:
    offered, _ = fuse([], 0.0, [(A, 0.5), (B, -0.2)], WEIGHT)
    assert {c.id: c.score for c in offered} == {A: pytest.approx(WEIGHT), B: 0.0}


scores = st.floats(min_value=0.0, max_value=50.0, allow_nan=False)
similarities = st.floats(min_value=-1.0, max_value=1.0, allow_nan=False)


@given(
    st.lists(scores, max_size=6),
    scores,
    st.lists(similarities, max_size=6),
    st.floats(min_value=0.0, max_value=1.0),
)
def test_fused_scores_stay_within_zero_and_one_and_keep_each_sides_order(
    word_scores: list[float], full_score: float, sims: list[float], weight: float
) -> None:
    words = [(uuid.UUID(int=n), s) for n, s in enumerate(word_scores)]
    meaning = [(uuid.UUID(int=100 + n), s) for n, s in enumerate(sims)]
    offered, matched = fuse(words, full_score, meaning, weight)
    fused = {c.id: c.score for c in offered}
    assert set(fused) == set(matched) == {i for i, _ in words} | {i for i, _ in meaning}
    assert all(-1e-9 <= s <= 1 + 1e-9 for s in fused.values())
    # Within one side (the sides here share no record), a higher score never fuses lower.
    for side in (words, meaning):
        for (i, s), (j, t) in itertools.permutations(side, 2):
            if s > t:
                assert fused[i] >= fused[j]
