"""LoCoMo retrieval benchmark: vector search, BM25, EnsembleRetriever and RecallB side by side.

Each conversation gets its own embedded Chroma collection (all-MiniLM-L6-v2,
loaded offline). A question (category 5 excluded) is scored by the rank of the
first retrieved item whose ``dia_id`` is in its evidence. Two retrieval units:
``turns`` (each dialogue turn as ``Speaker: text``) and ``facts`` (each
``observation`` entry, which cites the turn it came from).

``recall_b`` ranks with the in-memory bm25s index a non-persistent store gets;
``recall_b_fts`` is the same retriever over the SQLite FTS5 index a persistent
store gets, so both lexical engines are measured side by side. ``recall_b_pg``
(opt-in) is RecallB over a Postgres store
(:meth:`~cogito_lc.MemoryStore.from_database_url`, a private pgserver started once
per run, one table per conversation, dropped afterwards), so its lexical run is
:class:`~cogito_lc.stores.PostgresLexicalIndex`. ``recall_b_qdrant`` (opt-in) is
RecallB over Qdrant's local mode in a temporary directory
(:meth:`~cogito_lc.MemoryStore.from_qdrant`, SQLite FTS5 lexical run beside it).

The two-stage CogitoRetriever (RecallB, then an integer-pointer filter with a chat
model) is opt-in: ``--methods ... cogito`` with ``--llm`` naming the model:

- ``ollama``: Ollama at ``$OLLAMA_HOST`` (default ``http://localhost:11434``) with the
  model ``$COGITO_OLLAMA_MODEL`` (default ``qwen2.5:3b``);
- an ``http(s)://`` base URL of an OpenAI-compatible endpoint, with the model in
  ``$COGITO_FILTER_MODEL`` (or ``$OPENAI_MODEL``) and the key, if any, in
  ``$COGITO_FILTER_TOKEN`` (or ``$OPENAI_API_KEY``);
- ``llama-cpp``: start llama-cpp-python's server on loopback with the packaged
  Gemma 3 270M, as the integration tests do;
- ``none``: no model (every run is ``fallback_no_llm``; measures the two-stage path).

``--embeddings`` names the constructions to compare, each on its own store, with
rows side by side (a second table gives each RecallB row's sub-query path and
its p50 latency as a multiple of vector search's on the same embeddings):

- ``local``: :func:`cogito_lc.embeddings.local_embeddings` (the default);
- ``plain-hf``: ``HuggingFaceEmbeddings(model_name=<the same model's path>)``, as a
  LangChain user builds it;
- ``openai-compatible``: ``OpenAIEmbeddings`` against ``$COGITO_EMBEDDINGS_URL``
  (model in ``$COGITO_EMBEDDINGS_MODEL``) or, when unset, the llama.cpp server the
  tests use, serving the packaged Gemma 3 270M's mean-pooled embeddings (its quality
  is not MiniLM's: the rows measure the round trip).

Usage:
    ```bash
    python benchmarks/locomo.py [PATH] [--units turns facts] [--out FILE]
    python benchmarks/locomo.py [PATH] --embeddings local plain-hf --methods vector recall_b
    python benchmarks/locomo.py [PATH] --methods recall_b cogito --llm llama-cpp \\
        --conversations 2 --questions 20 --units facts
    python benchmarks/locomo.py [PATH] --methods vector recall_b recall_b_fts recall_b_pg
    python benchmarks/locomo.py [PATH] --methods recall_b_fts recall_b_qdrant
    ```
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import functools
import json
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import partial
from pathlib import Path
from typing import Any

import bm25s
from langchain_chroma import Chroma
from langchain_core.callbacks import BaseCallbackHandler, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from pydantic import ConfigDict, PrivateAttr, SecretStr

from cogito_lc import MemoryStore, RecallB, __version__
from cogito_lc.bench.mem0_hybrid import Mem0HybridRetriever
from cogito_lc.bench.results import add_out_argument, narrowing_flags, results_path
from cogito_lc.bench.scale import drop_table, private_postgres
from cogito_lc.embeddings.local import LOCAL_MODEL_NAME, local_embeddings, local_model_path
from cogito_lc.retrievers.cogito_retriever import RETRIEVAL_EVENT, CogitoRetriever
from cogito_lc.stores import SqliteLexicalIndex
from cogito_lc.stores.postgres import postgres_binding

DEFAULT_DATA = Path("../shared/data/locomo/locomo10-dev.json")
"""The development split, relative to the repository root the benchmark runs from."""
DEFAULT_OUT = Path("benchmarks/results/locomo.json")
FULL_RUN: dict[str, Any] = {
    "conversations": None,
    "questions": None,
    "units": ("turns", "facts"),
    "methods": None,
}
"""The flags that narrow the data, as the published run (``make bench``) leaves them."""
TOP_K = 10
EXCLUDED_CATEGORY = 5
FILTER_MAX_TOKENS = 256
LLAMA_CPP_CONTEXT = 4096


def split_ids(raw: Any) -> set[str]:
    """Normalise a ``dia_id`` field (a string, a ``;``/``,`` separated list, or a list)."""
    items = raw if isinstance(raw, list) else [raw]
    ids: set[str] = set()
    for item in items:
        for part in str(item).replace(",", ";").split(";"):
            if part.strip():
                ids.add(part.strip())
    return ids


@dataclass
class Unit:
    """One retrieval unit of one conversation: its documents and scorable questions."""

    documents: list[Document]
    questions: list[tuple[str, set[str]]] = field(default_factory=list)


SESSION_DATE_FORMAT = "%I:%M %p on %d %B, %Y"
"""How LoCoMo writes a session's ``date_time`` ("1:56 pm on 8 May, 2023")."""


def session_time(text: str) -> datetime | None:
    """A session's ``date_time`` as an aware UTC datetime (the data gives no zone), or None."""
    try:
        return datetime.strptime(" ".join(text.split()), SESSION_DATE_FORMAT).replace(
            tzinfo=timezone.utc
        )
    except ValueError:
        return None


def session_times(conversation: Mapping[str, Any]) -> dict[str, datetime]:
    """Each session's start (``session_1`` ...) parsed from its ``date_time``."""
    times: dict[str, datetime] = {}
    for key, value in conversation.items():
        if key.startswith("session_") and key.endswith("_date_time") and isinstance(value, str):
            when = session_time(value)
            if when is not None:
                times[key.removesuffix("_date_time")] = when
    return times


def created_at(start: datetime | None, index: int) -> dict[str, str]:
    """``{"created_at": ...}`` for the ``index``-th item of a session, or nothing without a date.

    ISO 8601 UTC: the session's start plus ``index`` seconds, so items keep their order.
    """
    if start is None:
        return {}
    return {"created_at": (start + timedelta(seconds=index)).isoformat()}


def turn_documents(conversation: dict[str, Any], captions: bool = False) -> list[Document]:
    """One document per turn; with ``captions``, a shared photo's caption is appended.

    Each carries its session (``session``), the session's date as written (``date``) and,
    when that date parses, ``created_at``: the session's start plus the turn's index in
    seconds, so turns keep their order in time.
    """
    docs: list[Document] = []
    times = session_times(conversation)
    for key, turns in conversation.items():
        if not key.startswith("session_") or not isinstance(turns, list):
            continue
        date = conversation.get(f"{key}_date_time", "")
        docs.extend(
            Document(
                page_content=f"{turn['speaker']}: {turn['text']}" + photo_caption(turn, captions),
                metadata={
                    "dia_id": turn["dia_id"],
                    "session": key,
                    "date": date,
                    **created_at(times.get(key), index),
                },
                id=f"turn-{turn['dia_id']}",
            )
            for index, turn in enumerate(turns)
        )
    return docs


def photo_caption(turn: dict[str, Any], captions: bool) -> str:
    caption = turn.get("blip_caption") if captions else None
    return f" [shares a photo: {caption}]" if caption else ""


def first_id(raw: Any) -> str:
    """The first ``dia_id`` a field cites, in the data's order."""
    items = raw if isinstance(raw, list) else [raw]
    return next(p.strip() for i in items for p in str(i).replace(",", ";").split(";") if p.strip())


def fact_documents(
    observation: dict[str, Any],
    evidence: str = "all",
    times: Mapping[str, datetime] | None = None,
) -> list[Document]:
    """One document per observation; ``evidence="first"`` keys it to its first cited turn.

    With ``times`` (:func:`session_times` of the conversation), each also carries
    ``created_at``: its session's start plus its index in the session in seconds.
    """
    docs: list[Document] = []
    for session, speakers in observation.items():
        start = (times or {}).get(session.removesuffix("_observation"))
        index = 0
        for speaker, facts in speakers.items():
            for fact, dia_id in facts:
                docs.append(
                    Document(
                        page_content=fact,
                        metadata={
                            "dia_id": first_id(dia_id)
                            if evidence == "first"
                            else ";".join(sorted(split_ids(dia_id))),
                            "session": session,
                            "speaker": speaker,
                            **created_at(start, index),
                        },
                        id=f"fact-{len(docs)}",
                    )
                )
                index += 1
    return docs


def build_unit(
    sample: dict[str, Any], unit: str, captions: bool = False, fact_evidence: str = "all"
) -> Unit:
    if unit == "turns":
        docs = turn_documents(sample["conversation"], captions)
    else:
        times = session_times(sample["conversation"])
        docs = fact_documents(sample["observation"], fact_evidence, times)
    covered = set().union(*(split_ids(d.metadata["dia_id"]) for d in docs))
    questions = []
    for qa in sample["qa"]:
        evidence = split_ids(qa.get("evidence", []))
        if qa.get("category") != EXCLUDED_CATEGORY and evidence & covered:
            questions.append((qa["question"], evidence))
    return Unit(documents=docs, questions=questions)


class BM25SRetriever(BaseRetriever):
    """BM25 (bm25s) over a fixed corpus, the benchmark's lexical baseline."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    documents: list[Document]
    k: int = TOP_K
    _index: Any = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        self._index = bm25s.BM25()
        tokens = bm25s.tokenize(
            [d.page_content for d in self.documents], stopwords="en", show_progress=False
        )
        self._index.index(tokens, show_progress=False)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        words = bm25s.tokenize([query], stopwords="en", return_ids=False, show_progress=False)[0]
        if not words:
            return []
        scores = self._index.get_scores(words)
        order = sorted(range(len(scores)), key=lambda i: -scores[i])[: self.k]
        return [self.documents[i] for i in order if scores[i] > 0]


class VectorRetriever(BaseRetriever):
    """Plain top-k vector search on the Chroma store."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    store: Chroma
    k: int = TOP_K

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return self.store.similarity_search(query, k=self.k)


def build_methods(
    store: Chroma,
    docs: list[Document],
    recall_b_options: dict[str, Any],
    only: set[str],
    cogito: CogitoSetup | None,
    postgres: MemoryStore | None = None,
    qdrant: MemoryStore | None = None,
) -> dict[str, BaseRetriever]:
    from langchain_classic.retrievers import EnsembleRetriever

    vector = VectorRetriever(store=store)
    bm25 = BM25SRetriever(documents=docs)
    methods: dict[str, BaseRetriever] = {
        "vector": vector,
        "bm25": bm25,
        "ensemble": EnsembleRetriever(retrievers=[bm25, vector], weights=[0.5, 0.5]),
        "recall_b": RecallB(vectorstore=store, k=TOP_K, **recall_b_options),
        "recall_b_batch": RecallB(
            vectorstore=store, k=TOP_K, **{"subquery_vectors": "batch", **recall_b_options}
        ),
    }
    if not only or "mem0_hybrid" in only:
        methods["mem0_hybrid"] = Mem0HybridRetriever(store=store, documents=docs)
    if not only or "recall_b_fts" in only:
        methods["recall_b_fts"] = RecallB(
            vectorstore=store, k=TOP_K, lexical_index=fts_index(docs), **recall_b_options
        )
    if postgres is not None and "recall_b_pg" in only:
        methods["recall_b_pg"] = postgres.as_retriever(k=TOP_K, **recall_b_options)
    if qdrant is not None and "recall_b_qdrant" in only:
        methods["recall_b_qdrant"] = qdrant.as_retriever(k=TOP_K, **recall_b_options)
    if cogito is not None and "cogito" in only:
        stage1 = RecallB(vectorstore=store, k=TOP_K, **recall_b_options)
        methods["cogito"] = CogitoRetriever.from_llm(stage1, cogito.llm, k=TOP_K, **cogito.options)
    if cogito is not None and "recall_b_vocab" in only:
        methods["recall_b_vocab"] = RecallB(
            vectorstore=store, k=TOP_K, vocab_map=calibrated_map(store, cogito), **recall_b_options
        )
    return methods


def fts_index(docs: list[Document]) -> SqliteLexicalIndex:
    """The SQLite FTS5 index a persistent store gets, filled with ``docs`` (a temp file)."""
    directory = Path(_scratch().name) / uuid.uuid4().hex
    index = SqliteLexicalIndex(directory / "lexical.sqlite3")
    index.upsert(docs)
    return index


@functools.cache
def _scratch() -> tempfile.TemporaryDirectory[str]:
    return tempfile.TemporaryDirectory(prefix="locomo-fts-")


def calibrated_map(store: Chroma, cogito: CogitoSetup) -> dict[str, list[str]] | None:
    """Calibrate a vocabulary map on this conversation's memories with the filter model."""
    from cogito_lc import MemoryStore, VocabCalibrator

    mode = cogito.options.get("structured_output", "auto")
    calibrator = VocabCalibrator.from_llm(cogito.llm, structured_output=mode)
    result = calibrator.calibrate(MemoryStore(store), dry_run=True)
    cogito.calibrations.append(
        {"method": result.method, "keys": len(result.vocab_map), "dropped": len(result.dropped)}
    )
    return result.vocab_map or None


@dataclass
class CogitoSetup:
    """The filter model and options of the opt-in two-stage method."""

    llm: Any
    label: str
    options: dict[str, Any]
    calibrations: list[dict[str, Any]] = field(default_factory=list)


class MethodTags(BaseCallbackHandler):
    """Collects the method tag of every CogitoRetriever run."""

    def __init__(self) -> None:
        self.last: dict[str, Any] | None = None

    def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
        if name == RETRIEVAL_EVENT:
            self.last = data


@dataclass
class Tally:
    """Ranks and latencies of one method on one unit."""

    ranks: list[int | None] = field(default_factory=list)
    paths: collections.Counter[str] = field(default_factory=collections.Counter)
    latencies_ms: list[float] = field(default_factory=list)
    tags: collections.Counter[str] = field(default_factory=collections.Counter)
    filter_tags: collections.Counter[str] = field(default_factory=collections.Counter)

    def summary(self) -> dict[str, Any]:
        n = len(self.ranks)

        def recall_at(cut: int) -> float:
            return sum(1 for r in self.ranks if r is not None and r <= cut) / n

        lat = sorted(self.latencies_ms)
        return {
            "questions": n,
            "R@1": round(recall_at(1), 3),
            "R@5": round(recall_at(5), 3),
            "R@10": round(recall_at(10), 3),
            "MRR": round(sum(1 / r for r in self.ranks if r is not None) / n, 3),
            "p50_ms": round(statistics.median(lat), 2),
            "p95_ms": round(lat[min(len(lat) - 1, int(0.95 * len(lat)))], 2),
            **({"filter_tags": dict(self.filter_tags.most_common())} if self.filter_tags else {}),
            **({"subquery_vectors": dict(self.paths.most_common())} if self.paths else {}),
            **({"tags": dict(self.tags.most_common())} if self.tags else {}),
        }


def first_hit(docs: Sequence[Document], evidence: set[str]) -> int | None:
    for rank, doc in enumerate(docs[:TOP_K], start=1):
        if split_ids(doc.metadata.get("dia_id", "")) & evidence:
            return rank
    return None


def timed(fn: Callable[[], list[Document]]) -> tuple[list[Document], float]:
    start = time.perf_counter()
    docs = fn()
    return docs, (time.perf_counter() - start) * 1000


@contextlib.contextmanager
def postgres_store(
    database_url: str | None, embeddings: Embeddings, docs: list[Document]
) -> Iterator[MemoryStore | None]:
    """A Postgres MemoryStore holding ``docs`` in a new table, dropped afterwards."""
    if database_url is None:
        yield None
        return
    table = f"locomo_{uuid.uuid4().hex[:12]}"
    memory = MemoryStore.from_database_url(database_url, embeddings=embeddings, collection=table)
    try:
        memory.vectorstore.add_documents(docs, ids=[d.id for d in docs])
        yield memory
    finally:
        binding = postgres_binding(memory.vectorstore)
        if binding is not None:
            binding.database.close()
        drop_table(database_url, table)


@contextlib.contextmanager
def qdrant_store(
    wanted: bool, embeddings: Embeddings, docs: list[Document]
) -> Iterator[MemoryStore | None]:
    """A MemoryStore on Qdrant's local mode in a temporary directory holding ``docs``."""
    if not wanted:
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="locomo-qdrant-") as directory:
        memory = MemoryStore.from_qdrant(embeddings=embeddings, path=directory)
        try:
            memory.vectorstore.add_documents(docs, ids=[d.id for d in docs])
            yield memory
        finally:
            memory.vectorstore.client.close()  # type: ignore[attr-defined]


def make_store(embeddings: Embeddings, docs: list[Document]) -> Chroma:
    store = Chroma(collection_name=f"locomo-{uuid.uuid4().hex[:12]}", embedding_function=embeddings)
    store.add_documents(docs, ids=[d.id for d in docs])
    return store


def measure(tally: Tally, retriever: BaseRetriever, question: str, evidence: set[str]) -> None:
    """Run one question, adding its rank, latency and tags to ``tally``."""
    tags = MethodTags()
    config: RunnableConfig = {"callbacks": [tags]}
    docs, ms = timed(partial(retriever.invoke, question, config))
    tally.ranks.append(first_hit(docs, evidence))
    tally.latencies_ms.append(ms)
    if docs and "subquery_vectors" in docs[0].metadata.get("cogito", {}):
        tally.paths[docs[0].metadata["cogito"]["subquery_vectors"]] += 1
    if tags.last is not None:
        tally.tags[tags.last["method"]] += 1
        tally.filter_tags[tags.last["filter_method"]] += 1


def run_unit(
    samples: list[dict[str, Any]],
    unit: str,
    embeddings: Embeddings,
    recall_b_options: dict[str, Any],
    only: set[str] | None,
    cogito: CogitoSetup | None = None,
    max_questions: int | None = None,
    variant: dict[str, Any] | None = None,
    database_url: str | None = None,
) -> dict[str, Tally]:
    tallies: dict[str, Tally] = {}
    for sample in samples:
        data = build_unit(sample, unit, **(variant or {}))
        questions = data.questions[:max_questions] if max_questions else data.questions
        store = make_store(embeddings, data.documents)
        with (
            postgres_store(database_url, embeddings, data.documents) as postgres,
            qdrant_store("recall_b_qdrant" in (only or ()), embeddings, data.documents) as qdrant,
        ):
            methods = build_methods(
                store, data.documents, recall_b_options, only or set(), cogito, postgres, qdrant
            )
            active = {name: r for name, r in methods.items() if not only or name in only}
            for retriever in active.values():
                retriever.invoke("warm up")
            # methods take turns on each question, so a load change on the machine hits all alike
            for question, evidence in questions:
                for name, retriever in active.items():
                    measure(tallies.setdefault(name, Tally()), retriever, question, evidence)
        store.delete_collection()
        print(
            f"  {unit}: {sample.get('sample_id')} done ({len(questions)} questions)",
            file=sys.stderr,
        )
    return tallies


def print_paths(results: dict[str, dict[str, Any]], constructions: Sequence[str]) -> None:
    """Each RecallB row's sub-query path and p50 latency as a multiple of vector search's."""
    rows = []
    for construction in constructions:
        suffix = "" if len(constructions) == 1 else f" [{construction}]"
        vector = results.get(f"vector{suffix}")
        for name, row in results.items():
            if not (name.startswith("recall_b") and name.endswith(suffix) and vector):
                continue
            paths = ", ".join(row.get("subquery_vectors", {}))
            ratio = row["p50_ms"] / vector["p50_ms"]
            rows.append(f"| {name} | {paths} | {ratio:.2f}x |")
    if rows:
        print("\n| method | sub-query path | p50 / vector p50 |")
        print("|---|---|---|")
        print("\n".join(rows))


def print_table(unit: str, results: dict[str, dict[str, Any]]) -> None:
    print(f"\nUnit = {unit} ({next(iter(results.values()))['questions']} questions)\n")
    print("| method | R@1 | R@5 | R@10 | MRR | p50 ms | p95 ms |")
    print("|---|---|---|---|---|---|---|")
    for name, row in results.items():
        print(
            f"| {name} | {row['R@1']:.3f} | {row['R@5']:.3f} | {row['R@10']:.3f} | "
            f"{row['MRR']:.3f} | {row['p50_ms']:.1f} | {row['p95_ms']:.1f} |"
        )
    tagged = {name: row["filter_tags"] for name, row in results.items() if "filter_tags" in row}
    if tagged:
        print("\n| method | stage-2 method tags (count) |")
        print("|---|---|")
        for name, counts in tagged.items():
            print(f"| {name} | {', '.join(f'{tag}: {n}' for tag, n in counts.items())} |")


def iter_samples(path: Path, limit: int | None) -> Iterator[dict[str, Any]]:
    samples = json.loads(path.read_text())
    yield from samples[:limit] if limit else samples


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "data",
        nargs="?",
        type=Path,
        default=DEFAULT_DATA,
        help="LoCoMo JSON file (default: %(default)s)",
    )
    parser.add_argument(
        "--units", nargs="+", choices=["turns", "facts"], default=["turns", "facts"]
    )
    parser.add_argument(
        "--methods",
        nargs="+",
        default=None,
        help="only these methods (vector bm25 ensemble mem0_hybrid recall_b recall_b_batch "
        "recall_b_fts; "
        "cogito is opt-in and needs --llm; recall_b_pg is opt-in and starts a private "
        "Postgres (pgserver) unless --database-url is given; recall_b_qdrant is opt-in: "
        "Qdrant's local mode)",
    )
    parser.add_argument(
        "--conversations", type=int, default=None, help="only the first N conversations"
    )
    parser.add_argument(
        "--questions", type=int, default=None, help="only the first N questions per conversation"
    )
    parser.add_argument(
        "--llm",
        default=None,
        help="filter model for cogito: 'ollama' (model in $COGITO_OLLAMA_MODEL), an "
        "OpenAI-compatible base URL (model in $COGITO_FILTER_MODEL), 'llama-cpp' (start the "
        "local llama.cpp server with the packaged Gemma 3 270M) or 'none'",
    )
    parser.add_argument(
        "--cogito",
        default="{}",
        help="CogitoRetriever/PointerFilter options as JSON, e.g. "
        '\'{"filter_when": "low_confidence", "timeout": 30}\'',
    )
    parser.add_argument(
        "--recall-b", default="{}", help="RecallB options as JSON, e.g. '{\"cosine_weight\": 0.8}'"
    )
    parser.add_argument(
        "--embeddings",
        nargs="+",
        choices=list(EMBEDDINGS),
        default=["local"],
        help="embeddings constructions to compare, rows side by side (default: local)",
    )
    add_out_argument(
        parser,
        what="JSON results",
        published=DEFAULT_OUT,
        flags="--conversations, --questions, --units, --methods",
    )
    parser.add_argument(
        "--database-url", default=None, help="Postgres for recall_b_pg (default: pgserver)"
    )
    parser.add_argument(
        "--turn-captions",
        action="store_true",
        help="append a shared photo's caption to its turn: ' [shares a photo: ...]'",
    )
    parser.add_argument(
        "--fact-evidence",
        choices=["all", "first"],
        default="all",
        help="key each fact to all its evidence turns or to the first (default: %(default)s)",
    )
    parser.add_argument(
        "--cv",
        action="store_true",
        help="leave-one-conversation-out cross-validation of the fusion over every unit "
        "variant (cogito_lc.bench.locomo_cv; runs are cached in /tmp/locomo-cv)",
    )
    args = parser.parse_args(argv)
    args.out = results_path(args.out, DEFAULT_OUT, narrowing_flags(args, FULL_RUN))
    return args


def ollama_chat_model() -> Any:
    from langchain_ollama import ChatOllama

    host = os.environ.get("OLLAMA_HOST", "http://localhost:11434")
    if not host.startswith(("http://", "https://")):
        host = f"http://{host}"
    model = os.environ.get("COGITO_OLLAMA_MODEL", "qwen2.5:3b")
    return ChatOllama(model=model, base_url=host, temperature=0, num_predict=FILTER_MAX_TOKENS)


def openai_compatible_chat_model(base_url: str, model: str | None = None) -> Any:
    from langchain_openai import ChatOpenAI

    model = model or os.environ.get("COGITO_FILTER_MODEL") or os.environ.get("OPENAI_MODEL")
    if not model:
        msg = "--llm with a URL needs the model name in $COGITO_FILTER_MODEL."
        raise SystemExit(msg)
    api_key = os.environ.get("COGITO_FILTER_TOKEN") or os.environ.get("OPENAI_API_KEY") or "unused"
    # llama-cpp-python reads max_tokens, not the max_completion_tokens langchain-openai sends.
    return ChatOpenAI(
        model=model,
        base_url=base_url,
        api_key=api_key,
        temperature=0,
        max_tokens=FILTER_MAX_TOKENS,
        max_retries=0,
        extra_body={"max_tokens": FILTER_MAX_TOKENS},
    )


def llama_cpp_server(stack: contextlib.ExitStack) -> Any:
    root = Path.cwd()
    if not (root / "tests" / "integration_tests" / "llm_server.py").is_file():
        msg = "--llm llama-cpp starts the test tier's server: run from a source checkout's root."
        raise SystemExit(msg)
    sys.path.insert(0, str(root))
    from tests.integration_tests.llm_server import start_llama_server

    log_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="locomo-llama-")))
    server = start_llama_server(log_dir, n_ctx=LLAMA_CPP_CONTEXT)
    stack.callback(server.stop)
    print(f"  llama.cpp server with {server.model} at {server.base_url}", file=sys.stderr)
    return server


def plain_hf_embeddings(stack: contextlib.ExitStack) -> Embeddings:
    from langchain_huggingface import HuggingFaceEmbeddings

    return HuggingFaceEmbeddings(model_name=local_model_path())


def openai_compatible_embeddings(stack: contextlib.ExitStack) -> Embeddings:
    from langchain_openai import OpenAIEmbeddings

    base_url = os.environ.get("COGITO_EMBEDDINGS_URL")
    model = os.environ.get("COGITO_EMBEDDINGS_MODEL", "")
    if not base_url:
        root = Path.cwd()
        sys.path.insert(0, str(root))
        from tests.integration_tests.llm_server import EMBEDDING_ARGS, start_llama_server

        log_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="locomo-emb-")))
        server = start_llama_server(log_dir, n_ctx=LLAMA_CPP_CONTEXT, extra_args=EMBEDDING_ARGS)
        stack.callback(server.stop)
        print(f"  llama.cpp embeddings at {server.base_url}", file=sys.stderr)
        base_url, model = server.base_url, server.model
    api_key = os.environ.get("COGITO_EMBEDDINGS_TOKEN") or "unused"
    return OpenAIEmbeddings(
        model=model,
        openai_api_base=base_url,
        openai_api_key=SecretStr(api_key),
        check_embedding_ctx_length=False,
    )


EMBEDDINGS: dict[str, Callable[[contextlib.ExitStack], Embeddings]] = {
    "local": lambda stack: local_embeddings(),
    "plain-hf": plain_hf_embeddings,
    "openai-compatible": openai_compatible_embeddings,
}
"""The embeddings constructions ``--embeddings`` can compare."""


def cogito_setup(args: argparse.Namespace, stack: contextlib.ExitStack) -> CogitoSetup | None:
    if not {"cogito", "recall_b_vocab"} & set(args.methods or []):
        return None
    options = json.loads(args.cogito)
    spec = args.llm or "none"
    if spec == "none":
        print("  cogito without a filter model: every run is fallback_no_llm", file=sys.stderr)
        return CogitoSetup(None, "none", options)
    if spec == "ollama":
        llm = ollama_chat_model()
        return CogitoSetup(llm, f"ollama:{llm.model}", options)
    if spec == "llama-cpp":
        server = llama_cpp_server(stack)
        llm = openai_compatible_chat_model(server.base_url, server.model)
        options.setdefault("structured_output", "json_object")
        return CogitoSetup(llm, f"llama-cpp:{server.model}", options)
    if spec.startswith(("http://", "https://")):
        llm = openai_compatible_chat_model(spec)
        return CogitoSetup(llm, f"{spec}:{llm.model_name}", options)
    msg = f"--llm must be ollama, llama-cpp, none or an http(s) URL, got {spec!r}."
    raise SystemExit(msg)


def postgres_url(args: argparse.Namespace, stack: contextlib.ExitStack) -> str | None:
    """The database for ``recall_b_pg``: ``--database-url`` or a private pgserver, else None."""
    if "recall_b_pg" not in (args.methods or []):
        return None
    if args.database_url:
        return str(args.database_url)
    root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="locomo-pg-")))
    return stack.enter_context(private_postgres(root))


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if not args.data.is_file():
        print(
            f"LoCoMo file not found: {args.data}; pass its path as the first argument.",
            file=sys.stderr,
        )
        return 2
    if args.cv:
        msg = "--cv runs from cogito_lc.bench.locomo_cv.main (python benchmarks/locomo.py --cv)."
        raise SystemExit(msg)
    samples = list(iter_samples(args.data, args.conversations))
    options = json.loads(args.recall_b)
    with contextlib.ExitStack() as stack:
        constructions = {name: EMBEDDINGS[name](stack) for name in args.embeddings}
        cogito = cogito_setup(args, stack)
        database_url = postgres_url(args, stack)
        report: dict[str, Any] = {
            "data": str(args.data),
            "conversations": len(samples),
            "questions_per_conversation": args.questions,
            "top_k": TOP_K,
            "embeddings": LOCAL_MODEL_NAME,
            "embeddings_constructions": args.embeddings,
            "cogito_lc": __version__,
            "recall_b_options": options,
            "turn_captions": args.turn_captions,
            "fact_evidence": args.fact_evidence,
            "machine": {
                "cpus": os.cpu_count(),
                "platform": platform.platform(),
                "python": platform.python_version(),
            },
            "units": {},
        }
        if cogito is not None:
            report["cogito"] = {"llm": cogito.label, "options": cogito.options}
        for unit in args.units:
            results: dict[str, dict[str, Any]] = {}
            for construction, embeddings in constructions.items():
                tallies = run_unit(
                    samples,
                    unit,
                    embeddings,
                    options,
                    set(args.methods or []),
                    cogito,
                    args.questions,
                    {"captions": args.turn_captions, "fact_evidence": args.fact_evidence},
                    database_url,
                )
                suffix = "" if len(constructions) == 1 else f" [{construction}]"
                results.update({name + suffix: t.summary() for name, t in tallies.items()})
            report["units"][unit] = results
            print_table(unit, results)
            print_paths(results, list(constructions))
        if cogito is not None and cogito.calibrations:
            report["calibrations"] = cogito.calibrations
            print(f"\ncalibrations: {cogito.calibrations}")
    report["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(f"\npeak RSS: {report['peak_rss_mb']} MB")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
