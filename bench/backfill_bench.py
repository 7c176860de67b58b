"""The backfill rate: ``memoryctl embeddings backfill`` over every record of a stack.

Starts the embedded PostgreSQL of a stack-bench root (``--root``, loaded by
``bench.stack_bench``; the stack itself is not started, so nothing else embeds),
deletes every stored vector, then times ``memoryctl embeddings backfill`` (the local
model) as a subprocess, from its start to its exit (loading the model included).
Results, with the load average before and after, go to ``--output``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import psycopg
from memory_local.postgres import EmbeddedPostgres
from memory_server.data.provision import Passwords, provision

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.backfill_bench", description=__doc__)
    parser.add_argument("--root", type=Path, default=ROOT / ".tmp" / "stack-bench")
    parser.add_argument("--limit", type=int, default=0, help="memoryctl's --limit (0: all)")
    parser.add_argument("--output", type=Path, default=ROOT / "bench/results/backfill.json")
    args = parser.parse_args(argv)
    creds = json.loads((args.root / "credentials.json").read_text())
    postgres = EmbeddedPostgres(args.root / "postgres", durable=True)
    admin_url = postgres.start()
    try:
        roles = provision(
            admin_url,
            Passwords(creds["owner"], creds["runtime"], creds["auditor"]),
            database="memory",
        )
        with psycopg.connect(roles.owner_url, autocommit=True) as owner:
            owner.execute("DELETE FROM memory.search_embeddings")
            owner.execute("VACUUM ANALYZE memory.search_embeddings")
            row = owner.execute("SELECT count(*) FROM memory.search_documents").fetchone()
            records = int(row[0]) if row else 0
        env = {
            **os.environ,
            "MEMORY_DATABASE_URL": roles.owner_url,
            "EMBEDDER": "python:memory_local.embedder:LocalEmbedder",
        }
        load_before = os.getloadavg()
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "memory_cli", "--json", "embeddings", "backfill"]
            + (["--limit", str(args.limit)] if args.limit else []),
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        seconds = time.monotonic() - started
        load_after = os.getloadavg()
    finally:
        postgres.stop()
    answer = json.loads(done.stdout)
    report = {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": "python -m bench.backfill_bench"
        + (f" --limit {args.limit}" if args.limit else ""),
        "records": records,
        "answer": answer,
        "seconds": round(seconds, 1),
        "records_per_s": round(int(answer["embedded"]) / seconds, 1),
        "load_average_before": load_before,
        "load_average_after": load_after,
        "cpus": os.cpu_count(),
        "note": "the local model with one onnxruntime thread (LocalEmbedder's default)",
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
