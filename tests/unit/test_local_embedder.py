"""The local embedder with the real model on real text, and its refusals at load."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import onnxruntime
import pytest
from memory_local.embedder import (
    MODEL_DISTRIBUTION,
    MODEL_FILE,
    MODEL_SHA256,
    TOKENIZER_DISTRIBUTION,
    TOKENIZER_FILE,
    LocalEmbedder,
    packaged_file,
    unit_vector,
)
from memory_server.domain.embedding import Embedder, EmbedderError

# Each pair says one thing twice with few words in common; the pairs are unrelated.
PARAPHRASES = [
    (
        "The deploy freeze starts Friday at noon.",
        "No releases go out after midday on Fridays.",
    ),
    (
        "Priya prefers async written updates over meetings.",
        "Priya would rather read a status note than join a call.",
    ),
    (
        "The checkout API went down for 40 minutes after the certificate expired.",
        "An expired TLS cert caused a payment service outage lasting most of an hour.",
    ),
    (
        "We renewed the Datadog contract for three years at 40,000 EUR annually.",
        "Our monitoring vendor agreement was extended until 2028 for forty thousand a year.",
    ),
]


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return LocalEmbedder()


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_it_is_an_embedder_with_a_stable_model_id(embedder: LocalEmbedder) -> None:
    port: Embedder = embedder
    assert port.dimensions == 384
    assert port.model == f"all-MiniLM-L6-v2@{MODEL_SHA256[:12]}+q8"


def test_vectors_are_unit_length_one_per_text_in_order(embedder: LocalEmbedder) -> None:
    texts = [
        "Rollbacks need a second approver.",
        "ok",
        "Die Datenbank wird jeden Sonntag um 3 Uhr gesichert.",  # non-English text
        "障害対応の連絡先は佐藤さんです。",
        "x" * 5000,
    ]
    vectors = embedder.embed(texts)
    assert len(vectors) == len(texts)
    for vector in vectors:
        assert len(vector) == 384
        assert math.isclose(math.sqrt(sum(v * v for v in vector)), 1.0, rel_tol=1e-5)
    # A text's vector does not depend on the texts embedded with it (a search embeds
    # its question alone, a record may be embedded among others).
    for text, vector in zip(texts, vectors, strict=True):
        assert embedder.embed([text])[0] == vector


def test_paraphrases_score_higher_than_unrelated_text(embedder: LocalEmbedder) -> None:
    flat = [text for pair in PARAPHRASES for text in pair]
    vectors = embedder.embed(flat)
    for n in range(len(PARAPHRASES)):
        same = _cosine(vectors[2 * n], vectors[2 * n + 1])
        others = [
            _cosine(vectors[2 * n + side], vectors[m])
            for side in (0, 1)
            for m in range(len(flat))
            if m // 2 != n
        ]
        assert same > 0.4, PARAPHRASES[n]
        assert same > max(others) + 0.1, PARAPHRASES[n]


def test_vectors_are_close_to_the_model_files_own(embedder: LocalEmbedder) -> None:
    # The 8-bit graph rounds each layer's input: vectors near those of the model file
    # run as it is (its int8 weights turned to float32 at load), not the same.
    path = packaged_file(MODEL_DISTRIBUTION, MODEL_FILE)
    tokenizer = embedder._tokenizer  # the same word pieces for both
    reference = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    inputs = {i.name for i in reference.get_inputs()}
    texts = [
        "migration",
        "who approves a rollback during an incident?",
        "Die Datenbank wird jeden Sonntag um 3 Uhr gesichert.",
        "障害対応の連絡先は佐藤さんです。",
    ]
    for text, vector in zip(texts, embedder.embed(texts), strict=True):
        exact = unit_vector(reference, inputs, tokenizer, text)
        assert 0.97 < _cosine(exact, vector) < 0.9999, text


def test_a_question_finds_its_paraphrase_first(embedder: LocalEmbedder) -> None:
    records = embedder.embed([second for _, second in PARAPHRASES])
    for n, (question, _) in enumerate(PARAPHRASES):
        (asked,) = embedder.embed([question])
        best = max(range(len(records)), key=lambda m: _cosine(asked, records[m]))
        assert best == n, question


def test_a_long_text_is_read_up_to_the_models_bound(embedder: LocalEmbedder) -> None:
    words = " ".join(f"note{n} about the staging database" for n in range(3000))  # ~100 KB
    first, more = embedder.embed([words, words + " and a closing sentence about tea"])
    assert _cosine(first, more) > 0.9999  # what lies past 256 word pieces is not read


def test_empty_text_has_no_vector(embedder: LocalEmbedder) -> None:
    with pytest.raises(ValueError, match="empty"):
        embedder.embed(["a memory", " \n "])
    assert embedder.embed([]) == []


def _copy(name: str, distribution: str, tmp_path: Path) -> Path:
    copy = tmp_path / Path(name).name
    shutil.copyfile(packaged_file(distribution, name), copy)
    return copy


def test_a_corrupted_model_file_is_refused_at_construction(tmp_path: Path) -> None:
    model = _copy(MODEL_FILE, MODEL_DISTRIBUTION, tmp_path)
    with model.open("r+b") as stream:  # one byte in the middle of the weights
        stream.seek(model.stat().st_size // 2)
        byte = stream.read(1)
        stream.seek(-1, 1)
        stream.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(EmbedderError, match=rf"SHA-256 .* expected {MODEL_SHA256}"):
        LocalEmbedder(model_path=model)


def test_a_truncated_tokenizer_file_is_refused_at_construction(tmp_path: Path) -> None:
    tokenizer = _copy(TOKENIZER_FILE, TOKENIZER_DISTRIBUTION, tmp_path)
    tokenizer.write_bytes(tokenizer.read_bytes()[:1000])
    with pytest.raises(EmbedderError, match=r"tokenizer file .* SHA-256"):
        LocalEmbedder(tokenizer_path=tokenizer)


def test_a_missing_model_file_is_refused_at_construction(tmp_path: Path) -> None:
    with pytest.raises(EmbedderError, match="cannot be read"):
        LocalEmbedder(model_path=tmp_path / "model.onnx")


def test_a_file_that_is_no_model_is_refused_even_with_its_own_checksum(tmp_path: Path) -> None:
    """The checksum is not the only guard: what onnxruntime cannot load fails at start."""
    import hashlib

    bogus = tmp_path / "model.onnx"
    bogus.write_bytes(b"not an onnx graph")
    with pytest.raises(EmbedderError, match="cannot be loaded"):
        LocalEmbedder(model_path=bogus, model_sha256=hashlib.sha256(bogus.read_bytes()).hexdigest())


def test_a_missing_package_is_named() -> None:
    with pytest.raises(EmbedderError, match="no-such-model-package is not installed"):
        packaged_file("no-such-model-package", "model.onnx")
