"""The paraphrase set is what the benchmark says it is: reproducible, answerable, and
asked in other words than its memories use."""

from __future__ import annotations

import pytest

from bench import paraphrase_set
from bench.paraphrase_set import (
    CHECKSUM,
    MAX_OVERLAP,
    content_words,
    generate,
    load_paraphrase_set,
    memory_text,
    overlap_report,
    word_overlap,
)
from bench.recall_set import COLLEAGUES, READER


def test_the_set_is_reproducible_and_well_formed() -> None:
    recall = load_paraphrase_set()
    assert recall.checksum() == CHECKSUM
    assert generate().canonical() == recall.canonical()
    assert len(recall.questions) >= 300
    assert len(recall.memories) >= len(recall.questions)  # every question has competitors
    keys = {m.key for m in recall.memories}
    assert len(keys) == len(recall.memories)
    assert len({m.uri for m in recall.memories}) == len(recall.memories)
    assert len({q.key for q in recall.questions}) == len(recall.questions)
    assert {m.writer for m in recall.memories} == {READER, *COLLEAGUES}
    for question in recall.questions:
        assert 1 <= len(question.evidence) <= 3 and set(question.evidence) <= keys
    assert len({q.topic for q in recall.questions}) >= 8


def test_questions_share_few_words_with_their_memories() -> None:
    recall = generate()
    texts = {m.key: memory_text(m) for m in recall.memories}
    for question in recall.questions:
        share = word_overlap(question.text, [texts[k] for k in question.evidence])
        assert share <= MAX_OVERLAP, question
    report = overlap_report(recall)
    assert report["mean"] < 0.1 and report["none"] > 0.5


def test_word_overlap_counts_content_words_with_their_word_forms() -> None:
    assert content_words("Who approves the Deploys on Fridays?") == {"approv", "deploy", "friday"}
    assert word_overlap("who approves deploys?", ["Deploy rule: approved by the CTO"]) == 1.0
    assert word_overlap("can I ship at the end of the week?", ["No deploys on Friday"]) == 0.0
    assert word_overlap("the", ["the"]) == 0.0  # no content word: nothing shared


def test_the_loader_refuses_a_changed_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(paraphrase_set, "CHECKSUM", "0" * 64)
    with pytest.raises(RuntimeError, match="checksum"):
        load_paraphrase_set()
    assert load_paraphrase_set(verify=False).checksum() == CHECKSUM


def test_a_slice_keeps_every_question_answerable() -> None:
    part = generate().slice(60)
    keys = {m.key for m in part.memories}
    assert len(part.questions) == 60
    assert all(set(q.evidence) <= keys for q in part.questions)
