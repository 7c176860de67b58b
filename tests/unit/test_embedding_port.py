"""The embedder port's text rules: what a model is given, and what has no vector."""

from __future__ import annotations

import pytest
from memory_server.domain.embedding import EmbeddingUnavailable, prepare_text, require_text


def test_whitespace_is_collapsed_and_empty_text_has_no_vector() -> None:
    assert prepare_text("  Deploys\n\tfreeze   on Fridays \n", 100) == "Deploys freeze on Fridays"
    assert prepare_text("", 100) is None
    assert prepare_text(" \n\t\u00a0 ", 100) is None  # a no-break space is whitespace too


def test_a_cut_ends_on_a_word_boundary() -> None:
    text = "alpha beta gamma delta epsilon"
    assert prepare_text(text, 13) == "alpha beta"  # "gamma" would be cut in half
    assert prepare_text(text, 16) == "alpha beta gamma"  # the bound falls on a space
    assert prepare_text(text, len(text)) == text


def test_a_long_run_without_spaces_is_cut_where_it_is() -> None:
    run = "x" * 500
    assert prepare_text(run, 100) == "x" * 100
    cjk = "部署は金曜日に凍結" * 50
    assert prepare_text(cjk, 40) == cjk[:40]


def test_the_bound_must_be_positive() -> None:
    with pytest.raises(ValueError):
        prepare_text("text", 0)


def test_require_text_names_the_empty_one_and_refuses_a_bare_string() -> None:
    assert require_text(["a  b", "c"], 10) == ["a b", "c"]
    with pytest.raises(ValueError, match="text 1 is empty"):
        require_text(["fine", "   "], 10)
    with pytest.raises(TypeError):
        require_text("one text", 10)


def test_unavailable_carries_its_reason() -> None:
    error = EmbeddingUnavailable("throttled", "ThrottlingException (429)")
    assert error.reason == "throttled"
    assert str(error) == "throttled: ThrottlingException (429)"
    assert str(EmbeddingUnavailable("timeout")) == "timeout"
