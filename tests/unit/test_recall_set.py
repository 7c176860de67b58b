"""The recall-quality set is what the benchmark says it is, on every machine."""

from __future__ import annotations

from bench.recall_set import CHECKSUM, generate


def test_the_set_is_reproducible_and_well_formed() -> None:
    recall = generate()
    assert recall.checksum() == CHECKSUM  # a changed generator must update the checksum
    assert generate().canonical() == recall.canonical()
    assert len(recall.memories) >= 2000 and len(recall.questions) >= 300
    keys = {m.key for m in recall.memories}
    assert len(keys) == len(recall.memories)
    assert len({m.uri for m in recall.memories}) == len(recall.memories)
    for question in recall.questions:
        assert 1 <= len(question.evidence) <= 3 and set(question.evidence) <= keys
    writers = {m.writer for m in recall.memories}
    assert len(writers) == 3  # several speakers
    assert sum(1 for m in recall.memories if m.facts) >= 30  # profiles grown fact by fact


def test_a_slice_keeps_every_question_answerable() -> None:
    part = generate().slice(40)
    keys = {m.key for m in part.memories}
    assert len(part.questions) == 40
    assert all(set(q.evidence) <= keys for q in part.questions)
    assert len(part.memories) >= 5 * 40
