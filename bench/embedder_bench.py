"""The local embedder's cost: load time, memory, and latency per text and per batch.

Run as ``python -m bench.embedder_bench`` (docs/store.md, "Embeddings: the local
model"); it writes ``bench/results/embedder.json``. The texts are the paraphrase set's
notes and questions (``bench/paraphrase_set.py``), real in length and wording. For each
onnxruntime thread count (1, the default, and 2): one text at a time (a question, a
note) and batches of 32, after a warm-up, with resident memory (``VmRSS``) read before
the model is imported, after it is loaded and after the runs (two embedders loaded
then). Last, hit@5 on the paraphrase set for the model alone and for a plain BM25,
every note a candidate.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import itertools
import re
import time
from pathlib import Path
from typing import Any

import numpy as np
from memory_local.embedder import LocalEmbedder
from rank_bm25 import BM25Okapi

from .paraphrase_set import generate, memory_text
from .recall_set import RecallSet
from .timing import durations_ms, percentiles, save_results


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def run(model: LocalEmbedder, texts: list[str], size: int, calls: int) -> list[float]:
    """Milliseconds per ``embed`` call of ``size`` texts, taken in turn from ``texts``."""
    chunks = itertools.cycle([texts[n : n + size] for n in range(0, len(texts) - size, size)])
    return durations_ms(lambda: model.embed(next(chunks)), calls)


def paraphrase_hits(model: LocalEmbedder, recall: RecallSet, k: int = 5) -> dict[str, float]:
    """hit@k on the paraphrase set, every note a candidate: the model's cosine alone,
    and a plain BM25 (lowercase word tokens) over the same texts, in Python."""
    keys = [m.key for m in recall.memories]
    texts = [memory_text(m) for m in recall.memories]
    notes = np.array(model.embed(texts))
    asked = np.array(model.embed([q.text for q in recall.questions]))
    bm25 = BM25Okapi([re.findall(r"\w+", t.lower()) for t in texts])
    hits = {"model": 0, "bm25": 0}
    for n, question in enumerate(recall.questions):
        lexical = np.asarray(bm25.get_scores(re.findall(r"\w+", question.text.lower())))
        for name, scores in (
            ("model", notes @ asked[n]),
            ("bm25", lexical),
        ):
            top = np.argsort(-scores, kind="stable")[:k]
            hits[name] += any(keys[i] in question.evidence for i in top)
    return {f"{name}_hit_at_{k}": round(h / len(recall.questions), 3) for name, h in hits.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.embedder_bench", description=__doc__)
    parser.add_argument("--single", type=int, default=300, help="one-text calls per run")
    parser.add_argument("--batches", type=int, default=30, help="32-text batches per run")
    args = parser.parse_args(argv)

    recall = generate()
    notes = [memory_text(m) for m in recall.memories]
    questions = [q.text for q in recall.questions]
    results: dict[str, Any] = {
        "onnxruntime": importlib.metadata.version("onnxruntime"),
        "rss_before_onnxruntime_mb": round(rss_mb(), 1),
    }
    started = time.perf_counter()
    import onnxruntime  # noqa: F401 (what the import costs, apart from the load)

    imported = time.perf_counter()
    embedder = LocalEmbedder()
    loaded = time.perf_counter()
    results |= {
        "model": embedder.model,
        "import_ms": round((imported - started) * 1000, 1),
        "load_ms": round((loaded - imported) * 1000, 1),
        "rss_after_load_mb": round(rss_mb(), 1),
        "runs": {},
    }
    for threads in (1, 2):
        model = embedder if threads == 1 else LocalEmbedder(threads=threads)
        run(model, questions, 1, 10)  # warm-up
        single_q = run(model, questions, 1, args.single)
        single_n = run(model, notes, 1, args.single)
        batches = run(model, notes, 32, args.batches)
        results["runs"][f"threads_{threads}"] = {
            "question_ms": {k: round(v, 2) for k, v in percentiles(single_q).items()},
            "note_ms": {k: round(v, 2) for k, v in percentiles(single_n).items()},
            "batch_32_ms": {k: round(v, 1) for k, v in percentiles(batches).items()},
            "notes_per_s": round(32 * 1000 / percentiles(batches)["p50"], 1),
        }
    results["paraphrase_set"] = paraphrase_hits(embedder, recall)
    # Two sessions are loaded by now (one per thread count), each with its buffers grown.
    results["rss_after_runs_mb"] = round(rss_mb(), 1)
    save_results("embedder", results)


if __name__ == "__main__":
    main()
