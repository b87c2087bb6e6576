"""RecallB's sub-query paths with the embeddings users build: real models, real servers."""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from langchain_chroma import Chroma
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.embeddings import Embeddings
from langchain_huggingface import HuggingFaceEmbeddings
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.modules import Dense, Normalize, Pooling

from cogito_lc import METADATA_KEY, RecallB
from cogito_lc.embeddings import LazyEmbeddings, local_embeddings, local_model_path
from cogito_lc.retrievers._subquery_vectors import embed_with_plan, plan_subqueries
from cogito_lc.retrievers.recall_b import RECALL_B_EVENT
from tests.integration_tests.conftest_llm import SKIP_LLM_TESTS_ENV_VAR
from tests.integration_tests.llm_server import (
    EMBEDDING_ARGS,
    LlamaServer,
    llama_cpp_server_available,
    start_llama_server,
)
from tests.integration_tests.retrievers.test_recall_b_integration import sample_memories

QUERY = "how long do auth tokens last after login?"
QUERIES = [
    QUERY,
    "which database did we choose for billing?",
    "what is the p95 latency target of the API?",
    "who reviews the deploy pipeline on fridays",
]


class SentenceTransformerEmbeddings(Embeddings):
    """A bare SentenceTransformer in LangChain's interface, as a user writes it."""

    def __init__(self, model: SentenceTransformer, *, normalize: bool = False) -> None:
        self.model = model
        self.normalize = normalize

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        vectors = self.model.encode(texts, normalize_embeddings=self.normalize)
        return [[float(x) for x in row] for row in vectors]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


@pytest.fixture(scope="module")
def minilm_model() -> SentenceTransformer:
    return SentenceTransformer(local_model_path(), device="cpu")


def with_modules(base: SentenceTransformer, *modules: Any) -> SentenceTransformer:
    return SentenceTransformer(modules=[base[0], *modules], device="cpu")


@pytest.fixture(scope="module")
def unnormalised_model_dir(
    minilm_model: SentenceTransformer, tmp_path_factory: pytest.TempPathFactory
) -> str:
    """All-MiniLM-L6-v2 without its Normalize module, saved as a model directory."""
    path = tmp_path_factory.mktemp("minilm-raw")
    with_modules(minilm_model, Pooling(384, pooling_mode="mean")).save(str(path))
    return str(path)


def build_store(embeddings: Embeddings, *, space: str = "cosine") -> Chroma:
    store = Chroma(
        collection_name=f"paths-{uuid.uuid4().hex[:12]}",
        embedding_function=embeddings,
        collection_metadata={"hnsw:space": space},
    )
    docs = sample_memories()
    store.add_documents(docs, ids=[d.id for d in docs])
    return store


HF_CONSTRUCTIONS = {
    "plain": {},
    "normalised": {"encode_kwargs": {"normalize_embeddings": True}},
    "common_kwargs": {
        "model_kwargs": {"device": "cpu", "trust_remote_code": False},
        "encode_kwargs": {"batch_size": 16, "convert_to_numpy": True, "precision": "float32"},
    },
}


@pytest.mark.parametrize("construction", list(HF_CONSTRUCTIONS))
def test_hugging_face_constructions_take_the_span_path(construction: str) -> None:
    embeddings = HuggingFaceEmbeddings(
        model_name=local_model_path(), **HF_CONSTRUCTIONS[construction]
    )
    plan = plan_subqueries(embeddings)
    assert (plan.mode, plan.pooling, plan.reason) == ("span", "mean", "")
    queries = [QUERY, "auth tokens", "login"]
    reference = embed_with_plan(plan_subqueries(local_embeddings()), local_embeddings(), queries)
    np.testing.assert_allclose(embed_with_plan(plan, embeddings, queries), reference, atol=1e-5)


def test_lazy_embeddings_take_the_span_path_once_built() -> None:
    lazy = LazyEmbeddings(local_embeddings)
    store = build_store(lazy)
    docs = RecallB(vectorstore=store, k=3).invoke(QUERY)
    assert docs[0].metadata[METADATA_KEY]["subquery_vectors"] == "span"
    assert "3600" in docs[0].page_content
    queries = [QUERY, "auth tokens", "login"]
    reference = embed_with_plan(plan_subqueries(local_embeddings()), local_embeddings(), queries)
    np.testing.assert_allclose(
        embed_with_plan(plan_subqueries(lazy), lazy, queries), reference, atol=1e-5
    )


def test_a_wrapped_sentence_transformer_takes_the_span_path(
    minilm_model: SentenceTransformer,
) -> None:
    store = build_store(SentenceTransformerEmbeddings(minilm_model))
    docs = RecallB(vectorstore=store, k=3).invoke(QUERY)
    assert docs[0].metadata[METADATA_KEY]["subquery_vectors"] == "span"
    assert "3600" in docs[0].page_content


@pytest.mark.parametrize(
    ("pooling", "extra"), [("max", []), ("mean_sqrt_len_tokens", []), ("mean", ["dense"])]
)
def test_span_vectors_follow_the_declared_pooling(
    minilm_model: SentenceTransformer, pooling: str, extra: list[str]
) -> None:
    modules: list[Any] = [Pooling(384, pooling_mode=pooling)]
    if extra:
        modules += [Dense(384, 128), Normalize()]
    embeddings = SentenceTransformerEmbeddings(with_modules(minilm_model, *modules))
    plan = plan_subqueries(embeddings)
    assert (plan.mode, plan.pooling) == ("span", pooling)
    vectors = embed_with_plan(plan, embeddings, [QUERY, "auth tokens", "latency"])
    assert vectors.shape == (3, 128 if extra else 384)
    # the original row is the model's own vector; a span is close to, not equal to, its own
    np.testing.assert_allclose(vectors[0], embeddings.embed_query(QUERY), atol=1e-4)
    alone = np.asarray(embeddings.embed_query("auth tokens"))
    cosine = vectors[1] @ alone / (np.linalg.norm(vectors[1]) * np.linalg.norm(alone))
    assert 0.3 < cosine < 0.9999
    np.testing.assert_allclose(vectors[2], embeddings.embed_query("latency"), atol=1e-4)


@pytest.mark.parametrize("pooling", ["cls", "lasttoken", "weightedmean"])
def test_sequence_poolings_fall_back_to_one_batch_with_a_reason(
    minilm_model: SentenceTransformer, pooling: str
) -> None:
    embeddings = SentenceTransformerEmbeddings(
        with_modules(minilm_model, Pooling(384, pooling_mode=pooling))
    )
    plan = plan_subqueries(embeddings)
    assert plan.mode == "batch"
    assert f"{pooling} pooling" in plan.reason
    with pytest.raises(ValueError, match="subquery_vectors='span' cannot run"):
        plan_subqueries(embeddings, "span")


def test_a_query_prompt_falls_back_to_per_query_and_logs_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    embeddings = HuggingFaceEmbeddings(
        model_name=local_model_path(), query_encode_kwargs={"prompt": "query: "}
    )
    retriever = RecallB(vectorstore=build_store(embeddings), k=3)
    with caplog.at_level(logging.INFO, logger="cogito_lc.retrievers.recall_b"):
        first = retriever.invoke(QUERY)
        retriever.invoke(QUERIES[1])
    assert first[0].metadata[METADATA_KEY]["subquery_vectors"] == "per_query"
    lines = [r.getMessage() for r in caplog.records if "sub-query vectors" in r.getMessage()]
    assert len(lines) == 1
    assert "per_query" in lines[0]
    assert "query prompt" in lines[0]
    assert "Fix:" in lines[0]


def test_ranking_does_not_depend_on_the_normalisation_setting(unnormalised_model_dir: str) -> None:
    raw = HuggingFaceEmbeddings(model_name=unnormalised_model_dir)
    unit = HuggingFaceEmbeddings(
        model_name=unnormalised_model_dir, encode_kwargs={"normalize_embeddings": True}
    )
    assert abs(np.linalg.norm(raw.embed_query(QUERY)) - 1.0) > 0.1  # really unnormalised
    retrievers = [RecallB(vectorstore=build_store(e), k=10) for e in (raw, unit)]
    assert [r.subquery_plan().normalise for r in retrievers] == [False, True]
    for query in QUERIES:
        raw_docs, unit_docs = (r.invoke(query) for r in retrievers)
        assert [d.id for d in raw_docs] == [d.id for d in unit_docs], query
        assert all(d.metadata[METADATA_KEY]["subquery_vectors"] == "span" for d in raw_docs)
        raw_scores = [d.metadata[METADATA_KEY]["score"] for d in raw_docs]
        unit_scores = [d.metadata[METADATA_KEY]["score"] for d in unit_docs]
        np.testing.assert_allclose(raw_scores, unit_scores, atol=1e-3)


class RecallEvents(BaseCallbackHandler):
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
        if name == RECALL_B_EVENT:
            self.events.append(data)


async def test_the_path_is_in_the_run_trace(minilm: Embeddings) -> None:
    retriever = RecallB(vectorstore=build_store(minilm), k=3)
    events = RecallEvents()
    retriever.invoke(QUERY, config={"callbacks": [events]})
    await retriever.ainvoke(QUERY, config={"callbacks": [events]})
    assert [e["subquery_vectors"] for e in events.events] == ["span", "span"]
    assert events.events[0]["returned"] == 3
    assert events.events[0]["method"].startswith("decompose_")


# Remote embeddings: the llama.cpp server's OpenAI-compatible /v1/embeddings.


@pytest.fixture(scope="module")
def embedding_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    if os.environ.get(SKIP_LLM_TESTS_ENV_VAR) == "1":
        pytest.skip(f"{SKIP_LLM_TESTS_ENV_VAR}=1")
    if not llama_cpp_server_available():
        pytest.fail("llama-cpp-python[server] is needed for the embeddings endpoint")
    log_dir: Path = tmp_path_factory.mktemp("embedding_server")
    server = start_llama_server(log_dir, n_ctx=512, extra_args=EMBEDDING_ARGS)
    try:
        yield server
    finally:
        server.stop()


def test_remote_embeddings_make_one_call_per_recall(embedding_server: LlamaServer) -> None:
    from langchain_openai import OpenAIEmbeddings

    requests: list[str] = []
    client = httpx.Client(event_hooks={"request": [lambda r: requests.append(r.url.path)]})
    embeddings = OpenAIEmbeddings(
        model=embedding_server.model,
        base_url=embedding_server.base_url,
        api_key="unused",  # type: ignore[arg-type]
        check_embedding_ctx_length=False,
        http_client=client,
    )
    retriever = RecallB(vectorstore=build_store(embeddings), k=3)
    assert retriever.decompose(QUERY).queries[1:]  # the query has sub-queries
    requests.clear()
    docs = retriever.invoke(QUERY)
    assert requests == ["/v1/embeddings"]
    assert docs[0].metadata[METADATA_KEY]["subquery_vectors"] == "batch"
    assert "not a local sentence-transformers model" in retriever.subquery_plan().reason
