"""Scale benchmark: how load, disk, memory and recall latency grow with the number of memories.

For each size and scope layout, a fresh persistent Chroma store is filled through
``MemoryStore.store_many`` with distinct LoCoMo-based memory texts (see
:mod:`cogito_lc.bench.scale_corpus`), in one scope or spread evenly over many
(``--scopes``, 100 by default: recall then runs in a scope holding 1% of the
collection). Then, in the same process and on the same scope, for each LoCoMo
question:

- plain vector search (``MemoryStore.search``, k=10) and recall (RecallB through
  ``MemoryStore.as_retriever()``, k=10) with no writes in between (*idle*);
- one ``MemoryStore.store()`` of a new memory, then recall (*after write*; only
  the recall is timed, the write is reported on its own).

A second process then opens the same directory, as after a restart, calls
``MemoryStore.warm_up()`` (timed on its own) and times the first recall. Each case
runs in its own worker processes, so peak RSS is that case's.

Embeddings: ``minilm`` is the local all-MiniLM-L6-v2 model for every memory;
``pool`` embeds the few thousand LoCoMo base texts once with MiniLM and gives each
memory its base text's vector plus a small hashed offset
(:class:`~cogito_lc.bench.pool_embeddings.PoolEmbeddings`; queries and the writes
between recalls still go to the model, and RecallB embeds its queries with the
model itself, so it takes the sub-query path it takes over a store built with
MiniLM: ``subquery_vectors`` in each row), so a million memories load in minutes and
the vector index sees MiniLM's geometry; ``hash`` is
:class:`~cogito_lc.bench.hash_embeddings.HashEmbeddings`, a deterministic feature
hashing function with no model at all (smoke runs; its recall quality means
nothing); ``auto`` uses MiniLM up to 100,000 memories and the pool above. Every row
says which one it used. Timings depend on the machine and on what else runs on it.

Usage:
    ```bash
    python benchmarks/scale.py [PATH] [--sizes 10000 100000] [--layouts one spread]
    python benchmarks/scale.py --sizes 1000000  # auto: MiniLM pool vectors above 100,000
    python benchmarks/scale.py --quick
    python benchmarks/scale.py --store postgres  # a private Postgres (pgserver), or:
    python benchmarks/scale.py --store postgres --database-url postgresql://...
    python benchmarks/scale.py --store qdrant  # Qdrant's embedded local mode
    ```

With ``--store postgres`` each case is a table of one Postgres
(:meth:`~cogito_lc.MemoryStore.from_database_url`: pgvector HNSW, full-text
lexical run); "disk" is then the table's total relation size.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import logging
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any

from cogito_lc._core.metadata import METADATA_KEY
from cogito_lc.bench.results import add_out_argument, narrowing_flags, results_path

DEFAULT_DATA = Path("../shared/data/locomo/locomo10-dev.json")
"""The LoCoMo development split, relative to the repository root the benchmark runs from."""
DEFAULT_OUT = Path("benchmarks/results/scale.json")
DEFAULT_SIZES = (10_000, 100_000)
DEFAULT_QUERIES = 30
DEFAULT_SCOPES = 100
LAYOUTS = ("one", "spread")
FULL_RUN: dict[str, Any] = {
    "quick": False,
    "sizes": DEFAULT_SIZES,
    "queries": DEFAULT_QUERIES,
    "layouts": LAYOUTS,
    "store": "chroma",
    "embeddings": "auto",
}
"""The flags that narrow or change the run, at their values in a full default run (the
published file holds the default store's figures)."""
QUICK_SIZES = (1_000,)
QUICK_QUERIES = 5
MINILM_MAX_MEMORIES = 100_000
"""With ``--embeddings auto``, larger sizes use the pool embeddings."""
LOAD_CHUNK = 2_000
"""Memories handed to one ``store_many`` call (it validates a whole call before writing)."""
TOP_K = 10
TARGET_SCOPE = "user-000"
HASH_LABEL = "hash-384 (deterministic feature hashing: measures the indexes, not a model)"
POOL_LABEL = (
    "minilm-pool (each memory: the all-MiniLM-L6-v2 vector of the LoCoMo text it was built "
    "from plus a hashed offset; queries and writes between recalls embedded by the model)"
)
EMBEDDINGS = ("auto", "minilm", "pool", "hash")
COLLECTION = "scale"
STORES = ("chroma", "postgres", "qdrant")


@dataclass
class CaseSpec:
    """One size and layout, as handed to the worker processes."""

    data: str
    directory: str
    memories: int
    layout: str
    scopes: int
    queries: int
    embeddings: str
    batch_size: int | None = None
    progress: bool = True
    pool_file: str = ""
    """Where the pool embeddings' vectors are cached (``.npy``), shared by the cases."""
    spawned_at: float = 0.0
    """When the orchestrator started the worker (``time.time()``)."""
    database_url: str = ""
    """The Postgres to load into (``--store postgres``); empty: embedded Chroma."""
    store: str = "chroma"
    """The backend: ``chroma``, ``postgres`` or ``qdrant`` (embedded local mode)."""

    @property
    def table(self) -> str:
        """The Postgres table of this case."""
        return f"{COLLECTION}_{self.memories}_{self.layout}"

    def blocks(self) -> list[tuple[str, int]]:
        """``(user_id, count)`` per scope, in load order; the first is the recall scope."""
        if self.layout == "one":
            return [(TARGET_SCOPE, self.memories)]
        base, rest = divmod(self.memories, self.scopes)
        return [(f"user-{i:03d}", base + (1 if i < rest else 0)) for i in range(self.scopes)]


# -- worker side ------------------------------------------------------------------------


def _embeddings(kind: str) -> tuple[Any, str]:
    """The embeddings a worker queries with (the pool's model for ``pool``)."""
    if kind == "hash":
        from cogito_lc.bench.hash_embeddings import HashEmbeddings

        return HashEmbeddings(), HASH_LABEL
    from cogito_lc.embeddings.local import LOCAL_MODEL_NAME, local_embeddings

    return local_embeddings(), POOL_LABEL if kind == "pool" else LOCAL_MODEL_NAME


def _pool(spec: CaseSpec, model: Any, corpus: Any) -> Any:
    """The pool embeddings over ``model``, its vectors read from the cache or computed once."""
    import numpy as np

    from cogito_lc.bench.pool_embeddings import PoolEmbeddings

    cache = Path(spec.pool_file)
    if cache.is_file():
        return PoolEmbeddings(model, np.load(cache))
    print(f"embedding {len(corpus.bases):,} base texts for the pool", file=sys.stderr)
    pool = PoolEmbeddings.build(model, [base.canonical() for base in corpus.bases])
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.save(cache, pool.vectors)
    return pool


def _open(spec: CaseSpec, embeddings: Any) -> Any:
    from langchain_chroma import Chroma

    from cogito_lc import MemoryStore

    if spec.database_url:
        return MemoryStore.from_database_url(
            spec.database_url, embeddings=embeddings, collection=spec.table
        )
    if spec.store == "qdrant":
        return MemoryStore.from_qdrant(
            embeddings=embeddings, path=spec.directory, collection=COLLECTION
        )
    store = Chroma(COLLECTION, embeddings, persist_directory=spec.directory)
    return MemoryStore(store)


def _rss_mb() -> float:
    """The resident set size now (Linux); the peak so far elsewhere."""
    statm = Path("/proc/self/statm")
    if not statm.is_file():
        return _peak_rss_mb()
    pages = int(statm.read_text().split()[1])
    return round(pages * os.sysconf("SC_PAGE_SIZE") / 2**20, 1)


def _peak_rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (2**20 if sys.platform == "darwin" else 2**10), 1)


def _timed_ms(fn: Callable[[], Any]) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def _progress(spec: CaseSpec, total: int, desc: str) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="mem", disable=not spec.progress, file=sys.stderr)


def _load(memory: Any, spec: CaseSpec, entries: Iterator[tuple[str, int]], pool: Any) -> float:
    """Write every memory through ``store_many``; returns the seconds spent in it."""
    spent = 0.0
    with _progress(spec, spec.memories, f"load {spec.memories:,} ({spec.layout})") as bar:
        for user, count in spec.blocks():
            left = count
            while left:
                chunk = list(itertools.islice(entries, min(LOAD_CHUNK, left)))
                if pool is not None:
                    pool.expect(chunk)
                texts = [text for text, _ in chunk]
                started = time.perf_counter()
                memory.store_many(texts, scope={"user_id": user}, batch_size=spec.batch_size)
                spent += time.perf_counter() - started
                if pool is not None:
                    pool.forget()
                left -= len(chunk)
                bar.update(len(chunk))
    return spent


def disk_mb(directory: str | Path) -> float:
    """Space the files under ``directory`` take on disk (allocated blocks where known)."""
    total = 0
    for path in Path(directory).rglob("*"):
        if path.is_file():
            stat = path.stat()
            blocks = getattr(stat, "st_blocks", None)
            total += blocks * 512 if blocks is not None else stat.st_size
    return round(total / 2**20, 1)


def _disk_mb(spec: CaseSpec, memory: Any) -> float:
    if not spec.database_url:
        return disk_mb(spec.directory)
    with memory._store.database.connection() as conn:
        row = conn.execute("SELECT pg_total_relation_size(%s)", (spec.table,)).fetchone()
    return round(int(row[0]) / 2**20, 1)


def run_load(spec: CaseSpec) -> dict[str, Any]:
    """Worker: load the store, then time vector search and recall, idle and after writes."""
    from cogito_lc.bench.scale_corpus import ScaleCorpus

    corpus = ScaleCorpus.from_file(spec.data)
    queries = corpus.queries(spec.queries)
    embeddings, label = _embeddings(spec.embeddings)
    embeddings.embed_documents(["warm up"])
    pool = _pool(spec, embeddings, corpus) if spec.embeddings == "pool" else None
    rss_base = _rss_mb()
    memory = _open(spec, pool or embeddings)
    entries = corpus.entries()
    load_s = _load(memory, spec, entries, pool)
    stored = memory.count()
    if stored != spec.memories:
        msg = f"stored {stored} of {spec.memories} memories; the texts were not all distinct."
        raise RuntimeError(msg)
    rss_loaded = _rss_mb()
    target = memory.scoped({"user_id": TARGET_SCOPE})
    # Queries are embedded by the model, as over a store built with it: the pool
    # only stands in for the model on the memories' side.
    recall = target.as_retriever(k=TOP_K, embeddings=embeddings)
    first_ms = _timed_ms(lambda: recall.invoke(queries[0]))
    path = _subquery_path(recall, queries[0])
    target.search(queries[0], k=TOP_K)
    vector: list[float] = []
    idle: list[float] = []
    for query in _bar(spec, queries, "idle recall"):
        vector.append(_timed_ms(partial(target.search, query, k=TOP_K)))
        idle.append(_timed_ms(partial(recall.invoke, query)))
    rss_idle = _rss_mb()
    lexical = lexical_quality(recall, queries, {"user_id": TARGET_SCOPE})
    writes: list[float] = []
    after_write: list[float] = []
    for query in _bar(spec, queries, "recall after write"):
        writes.append(_timed_ms(partial(target.store, next(entries)[0])))
        after_write.append(_timed_ms(partial(recall.invoke, query)))
    return {
        "embeddings": label,
        "stored": stored,
        "recall_scope_memories": target.count() - len(writes),
        "load_s": round(load_s, 2),
        "load_memories_per_s": round(spec.memories / load_s, 1),
        "disk_mb": _disk_mb(spec, memory),
        "peak_rss_mb": _peak_rss_mb(),
        "rss_mb": {
            "after_model": rss_base,
            "after_load": rss_loaded,
            "after_idle_queries": rss_idle,
            "after_write_queries": _rss_mb(),
        },
        "first_recall_after_load_ms": round(first_ms, 1),
        "subquery_vectors": path,
        **({"lexical_top10_agreement": None} | lexical),
        "latency_ms": {
            "vector": _stats(vector),
            "recall_idle": _stats(idle),
            "recall_after_write": _stats(after_write),
            "store": _stats(writes),
        },
    }


def run_restart(spec: CaseSpec) -> dict[str, Any]:
    """Worker: open the loaded directory as a new process would and time the first recall.

    Then vector search and recall take turns on every question, as a replica
    started over an existing store serves them.
    """
    from cogito_lc.bench.scale_corpus import ScaleCorpus

    queries = ScaleCorpus.from_file(spec.data).queries(spec.queries)
    started = time.perf_counter()
    embeddings, _ = _embeddings(spec.embeddings)
    embeddings.embed_documents(["warm up"])
    model_s = time.perf_counter() - started
    started = time.perf_counter()
    target = _open(spec, embeddings).scoped({"user_id": TARGET_SCOPE})
    recall = target.as_retriever(k=TOP_K)
    open_s = time.perf_counter() - started
    warm_up_ms = _timed_ms(target.warm_up)  # as a library process starting up would
    first_ms = _timed_ms(lambda: recall.invoke(queries[0]))
    since_start = time.time() - spec.spawned_at
    second_ms = _timed_ms(lambda: recall.invoke(queries[-1]))
    vector: list[float] = []
    served: list[float] = []
    for text in _bar(spec, queries, "recall after restart"):
        vector.append(_timed_ms(partial(target.search, text, k=TOP_K)))
        served.append(_timed_ms(partial(recall.invoke, text)))
    vector_stats, recall_stats = _stats(vector), _stats(served)
    return {
        "vector": vector_stats,
        "recall": recall_stats,
        "recall_to_vector": round(recall_stats["p50"] / (vector_stats["p50"] or 1e-9), 2),
        "model_load_s": round(model_s, 2),
        "open_s": round(open_s, 3),
        "warm_up_ms": round(warm_up_ms, 1),
        "first_recall_ms": round(first_ms, 1),
        "open_and_first_recall_s": round(open_s + first_ms / 1000, 3),
        "process_spawn_to_first_recall_s": round(since_start, 2),
        "second_recall_ms": round(second_ms, 1),
        "peak_rss_mb": _peak_rss_mb(),
    }


def _subquery_path(recall: Any, query: str) -> str | None:
    """The sub-query path RecallB took (``span``, ``batch`` or ``per_query``)."""
    docs = recall.invoke(query)
    return docs[0].metadata.get(METADATA_KEY, {}).get("subquery_vectors") if docs else None


def _bar(spec: CaseSpec, items: list[str], desc: str) -> Any:
    from tqdm.auto import tqdm

    return tqdm(items, desc=desc, unit="q", disable=not spec.progress, file=sys.stderr)


def _stats(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)

    def at(fraction: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(fraction * len(ordered)))], 2)

    return {"p50": at(0.5), "p95": at(0.95), "max": round(ordered[-1], 2), "n": len(ordered)}


WORKERS: dict[str, Callable[[CaseSpec], dict[str, Any]]] = {
    "load": run_load,
    "restart": run_restart,
}


def worker_main(phase: str, spec_file: str, result_file: str) -> int:
    """Entry point of a worker process: run one phase of one case, write its JSON."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    spec = CaseSpec(**json.loads(Path(spec_file).read_text()))
    result = WORKERS[phase](spec)
    Path(result_file).write_text(json.dumps(result))
    return 0


# -- orchestrator side ------------------------------------------------------------------


def _run_worker(phase: str, spec: CaseSpec, scratch: Path) -> dict[str, Any]:
    spec_file, result_file = scratch / f"{phase}-spec.json", scratch / f"{phase}-result.json"
    spec.spawned_at = time.time()
    spec_file.write_text(json.dumps(asdict(spec)))
    command = [sys.executable, "-m", "cogito_lc.bench.scale", "--worker", phase]
    # The worker imports the same cogito_lc as this process, installed or not.
    package_root = str(Path(__file__).resolve().parents[2])
    path = os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path}
    subprocess.run([*command, str(spec_file), str(result_file)], check=True, env=env)
    result: dict[str, Any] = json.loads(result_file.read_text())
    return result


def run_case(spec: CaseSpec, scratch: Path) -> dict[str, Any]:
    """Load and query in one worker, then restart in another; one result row."""
    loaded = _run_worker("load", spec, scratch)
    restart = _run_worker("restart", spec, scratch)
    latency = loaded["latency_ms"]
    vector_p50 = latency["vector"]["p50"] or 1e-9
    idle_p50 = latency["recall_idle"]["p50"] or 1e-9
    return {
        "memories": spec.memories,
        "layout": spec.layout,
        "store": spec.store,
        "scopes": len(spec.blocks()),
        **loaded,
        "ratios": {
            "recall_idle_to_vector": round(idle_p50 / vector_p50, 2),
            "recall_after_write_to_vector": round(
                latency["recall_after_write"]["p50"] / vector_p50, 2
            ),
            "recall_after_write_to_idle": round(latency["recall_after_write"]["p50"] / idle_p50, 2),
        },
        "restart": restart,
    }


def embeddings_for(choice: str, memories: int) -> str:
    """The embeddings a size runs with: ``auto`` picks MiniLM up to 100,000 memories."""
    if choice != "auto":
        return choice
    return "minilm" if memories <= MINILM_MAX_MEMORIES else "pool"


def table_lines(runs: list[dict[str, Any]]) -> list[str]:
    """The results as a Markdown table (plain text in a terminal, pasteable in docs)."""
    lines = [
        "| store | memories | scopes (recall scope size) | embeddings | load mem/s | disk MB "
        "| peak RSS MB | vector p50 | recall idle p50 / p95 | recall after write p50 / p95 "
        "| idle / vector | after write / vector | after write / idle | restart: first recall "
        "| reopened: vector / recall p50 |",
        "|" + "---|" * 15,
    ]
    for run in runs:
        latency, ratios, restart = run["latency_ms"], run["ratios"], run["restart"]
        cells = [
            run.get("store", "chroma"),
            f"{run['memories']:,}",
            f"{run['scopes']} ({run['recall_scope_memories']:,})",
            run["embeddings"].split(" ")[0],
            f"{run['load_memories_per_s']:,.0f}",
            f"{run['disk_mb']:,.0f}",
            f"{run['peak_rss_mb']:,.0f}",
            f"{latency['vector']['p50']:.1f} ms",
            f"{latency['recall_idle']['p50']:.1f} / {latency['recall_idle']['p95']:.1f} ms",
            f"{latency['recall_after_write']['p50']:.1f} / "
            f"{latency['recall_after_write']['p95']:.1f} ms",
            f"{ratios['recall_idle_to_vector']:.1f}x",
            f"{ratios['recall_after_write_to_vector']:.1f}x",
            f"{ratios['recall_after_write_to_idle']:.1f}x",
            f"{restart['first_recall_ms']:,.0f} ms (open {restart['open_s']:.1f} s, "
            f"warm-up {restart.get('warm_up_ms', 0.0) / 1000:.1f} s)",
            _reopened(restart),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    labels = sorted({run["embeddings"] for run in runs} & {HASH_LABEL, POOL_LABEL})
    lines.extend(f"\n{label}" for label in labels)
    return lines


def _reopened(restart: dict[str, Any]) -> str:
    if "recall" not in restart:
        return "-"
    vector, recall = restart["vector"]["p50"], restart["recall"]["p50"]
    return f"{vector:.1f} / {recall:.1f} ms ({restart['recall_to_vector']:.1f}x)"


def lexical_quality(recall: Any, queries: list[str], where: dict[str, Any]) -> dict[str, float]:
    """How close RecallB's bounded lexical search comes to the exact BM25 top 10.

    The search is the one RecallB runs (through its :class:`LexicalSync`: in
    memory when the scope is the whole index, else FTS5 or Postgres, bounded); the
    exact top 10 comes from the same engine without a bound. Two views, each a
    mean over ``queries``:

    - ``lexical_top10_agreement``: the share of the exact top 10's memories found;
    - ``lexical_top10_score_share``: the exact BM25 score of what was found, as a
      share of the exact top 10's (near-duplicates of a missed memory count here),
      with its worst question as ``lexical_top10_worst_score_share``.

    Empty when the engine has no unbounded form (bm25s ranks exactly).
    """
    sync = getattr(recall, "lexical_sync", None)
    exact = None if sync is None or not queries else _unbounded(sync.index)
    if exact is None:
        return {}
    try:
        shares = [_lexical_shares(exact, sync, query, where) for query in queries]
    finally:
        getattr(exact, "close", lambda: None)()
    agreement, score_share = (list(values) for values in zip(*shares, strict=True))
    return {
        "lexical_top10_agreement": round(sum(agreement) / len(agreement), 3),
        "lexical_top10_score_share": round(sum(score_share) / len(score_share), 3),
        "lexical_top10_worst_score_share": round(min(score_share), 3),
    }


def _lexical_shares(exact: Any, bounded: Any, query: str, where: Any) -> tuple[float, float]:
    """The share of the exact top 10 ``bounded`` finds for ``query``, and of its BM25 score."""
    full = {doc.id: score for doc, score in exact.search(query, TOP_K, where)}
    if not full:
        return 1.0, 1.0
    found = [doc.id for doc, _ in bounded.search(query, TOP_K, where)]
    scores = exact.scores(query, found, where)
    return len(full.keys() & set(found)) / len(full), sum(scores.values()) / sum(full.values())


def _unbounded(index: Any) -> Any:
    """The lexical engine of ``index`` with no bound on the rows it counts and ranks."""
    from cogito_lc.stores import PostgresLexicalIndex, SqliteLexicalIndex

    if isinstance(index, SqliteLexicalIndex):
        return SqliteLexicalIndex(index.path, posting_budget=2**62, postings_in_memory=False)
    if isinstance(index, PostgresLexicalIndex):
        return PostgresLexicalIndex(index.adapter, posting_budget=2**62, count_limit=2**62)
    return None


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("data", nargs="?", type=Path, default=DEFAULT_DATA, help="LoCoMo JSON file")
    parser.add_argument("--sizes", nargs="+", type=int, default=None, help="memories per run")
    parser.add_argument("--queries", type=int, default=None, help="LoCoMo questions per phase")
    parser.add_argument("--layouts", nargs="+", choices=LAYOUTS, default=list(LAYOUTS))
    parser.add_argument("--scopes", type=int, default=DEFAULT_SCOPES, help="scopes of 'spread'")
    parser.add_argument("--embeddings", choices=EMBEDDINGS, default=None)
    parser.add_argument("--batch-size", type=int, default=None, help="store_many batch size")
    parser.add_argument("--workdir", type=Path, default=None, help="where the stores are built")
    parser.add_argument("--keep", action="store_true", help="keep the stores after the run")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument("--quick", action="store_true", help="smoke run: 1,000 memories, hash")
    add_out_argument(
        parser,
        what="JSON results",
        published=DEFAULT_OUT,
        flags="--quick, --sizes, --queries, --layouts, --store, --embeddings",
    )
    parser.add_argument("--store", choices=STORES, default="chroma", help="where to load")
    parser.add_argument("--database-url", default=None, help="Postgres for --store postgres")
    args = parser.parse_args(argv)
    args.sizes = args.sizes or list(QUICK_SIZES if args.quick else DEFAULT_SIZES)
    args.queries = args.queries or (QUICK_QUERIES if args.quick else DEFAULT_QUERIES)
    args.embeddings = args.embeddings or ("hash" if args.quick else "auto")
    args.out = results_path(args.out, DEFAULT_OUT, narrowing_flags(args, FULL_RUN))
    return args


def check_args(args: argparse.Namespace) -> str | None:
    """A message naming the bad flag, or None."""
    if not args.data.is_file():
        return f"LoCoMo file not found: {args.data}; pass its path as the first argument."
    if min(args.sizes) < 1 or args.queries < 1:
        return "--sizes and --queries must be >= 1."
    if args.scopes < 2 and "spread" in args.layouts:
        return "--scopes must be >= 2 for the 'spread' layout."
    if "spread" in args.layouts and min(args.sizes) < args.scopes:
        return f"--sizes must be >= --scopes ({args.scopes}) for the 'spread' layout."
    return None


@contextlib.contextmanager
def private_postgres(root: Path) -> Iterator[str]:
    """A Postgres 16 with pgvector from PyPI (pgserver) in ``root``, deleted afterwards."""
    import pgserver

    root.chmod(0o755)  # run as root, pgserver runs Postgres as its own user
    server = pgserver.get_server(root / "pg", cleanup_mode="delete")  # type: ignore[attr-defined]
    try:
        yield server.get_uri()
    finally:
        server.cleanup()


def drop_table(database_url: str, table: str) -> None:
    """Drop the memories table ``table``, its BM25 counters, and forget its schema version."""
    import psycopg

    from cogito_lc.stores.postgres_bm25 import drop_bm25_statements

    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f'DROP TABLE IF EXISTS "{table}"')
        for statement in drop_bm25_statements(table):
            conn.execute(statement)
        conn.execute("DELETE FROM cogito_schema WHERE component = %s", (f"memories:{table}",))


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    problem = check_args(args)
    if problem:
        print(problem, file=sys.stderr)
        return 2
    from cogito_lc import __version__

    report: dict[str, Any] = {
        "benchmark": "scale",
        "cogito_lc": __version__,
        "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "argv": list(argv if argv is not None else sys.argv[1:]),
        "data": str(args.data),
        "settings": {
            "queries": args.queries,
            "top_k": TOP_K,
            "scopes_spread": args.scopes,
            "load_chunk": LOAD_CHUNK,
            "batch_size": args.batch_size,
        },
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "runs": [],
    }
    with contextlib.ExitStack() as stack:
        root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="cogito-scale-")))
        workdir = args.workdir or root
        database_url = ""
        if args.store == "postgres":
            database_url = args.database_url or stack.enter_context(private_postgres(root))
            report["settings"]["store"] = "postgres"
        for memories, layout in itertools.product(args.sizes, args.layouts):
            directory = workdir / f"{memories}-{layout}"
            scratch = root / f"{memories}-{layout}-io"
            scratch.mkdir(parents=True)
            spec = CaseSpec(
                data=str(args.data.resolve()),
                directory=str(directory),
                memories=memories,
                layout=layout,
                scopes=args.scopes,
                queries=args.queries,
                embeddings=embeddings_for(args.embeddings, memories),
                batch_size=args.batch_size,
                progress=not args.no_progress,
                pool_file=str(root / "pool-vectors.npy"),
                database_url=database_url,
                store=args.store,
            )
            print(f"scale: {memories:,} memories, layout {layout}", file=sys.stderr)
            report["runs"].append(run_case(spec, scratch))
            if not args.keep:
                shutil.rmtree(directory, ignore_errors=True)
                if database_url:
                    drop_table(database_url, spec.table)
    print("\n".join(table_lines(report["runs"])))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--worker":
        sys.exit(worker_main(*sys.argv[2:]))
    sys.exit(main())
