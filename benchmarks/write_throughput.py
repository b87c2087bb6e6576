"""Write throughput of MemoryStore: store_many (batched) vs one store() call per memory.

Both runs write the same number of distinct memories into fresh persistent
Chroma collections with the local all-MiniLM-L6-v2 model, in one process.

Usage:
    python benchmarks/write_throughput.py [--memories 2000] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path

from langchain_chroma import Chroma

from cogito_lc import MemoryStore
from cogito_lc.bench.results import add_out_argument, narrowing_flags, results_path
from cogito_lc.embeddings import LOCAL_MODEL_NAME, local_embeddings

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "write_throughput.json"
FULL_RUN_MEMORIES = 2000
TOPICS = ["billing", "auth", "deploys", "search", "on-call", "schema", "cache", "alerts"]


def memories(count: int, salt: str) -> list[str]:
    return [
        f"Memory {i} ({salt}): the {TOPICS[i % len(TOPICS)]} team decided item {i * 7 % 1009} "
        f"after incident {i // 3}, with a budget of {100 + i % 400} ms."
        for i in range(count)
    ]


def timed_run(label: str, directory: Path, texts: list[str], batched: bool) -> dict[str, float]:
    store = Chroma(f"writes-{label}", local_embeddings(), persist_directory=str(directory / label))
    memory = MemoryStore(store)
    started = time.perf_counter()
    if batched:
        memory.store_many(texts)
    else:
        for text in texts:
            memory.store(text)
    elapsed = time.perf_counter() - started
    if memory.count() != len(texts):
        msg = f"{label}: stored {memory.count()} of {len(texts)} memories"
        raise RuntimeError(msg)
    return {"seconds": round(elapsed, 2), "memories_per_s": round(len(texts) / elapsed, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=FULL_RUN_MEMORIES)
    add_out_argument(
        parser,
        what="JSON results",
        published="benchmarks/results/write_throughput.json",
        flags="--memories",
    )
    args = parser.parse_args(argv)
    narrowed = narrowing_flags(args, {"memories": FULL_RUN_MEMORIES})
    args.out = results_path(args.out, DEFAULT_OUT, narrowed)
    local_embeddings().embed_documents(["warm up"])
    with tempfile.TemporaryDirectory(prefix="cogito-writes-") as tmp:
        directory = Path(tmp)
        results = {
            "store_many": timed_run("many", directory, memories(args.memories, "a"), True),
            "store_each": timed_run("each", directory, memories(args.memories, "b"), False),
        }
    report = {
        "memories": args.memories,
        "embeddings": LOCAL_MODEL_NAME,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "results": results,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    print("| method | seconds | memories/s |\n|---|---|---|")
    for name, row in results.items():
        print(f"| {name} | {row['seconds']} | {row['memories_per_s']} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
