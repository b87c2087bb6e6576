"""RecallB's decisiveness-scaled lexical weight (``lexical_floor``)."""

from __future__ import annotations

from langchain_core.vectorstores import InMemoryVectorStore

from cogito_lc import METADATA_KEY, RecallB
from tests.unit_tests.conftest import HashEmbeddings

TEXTS = {
    "a": "the lighthouse keeper paints boats",
    "b": "the lighthouse keeper mends nets",
    "c": "a gardener waters tomato plants",
    "d": "the baker bakes rye bread daily",
}


def _rrf(store: InMemoryVectorStore, query: str, **options: float) -> dict[str, float]:
    docs = RecallB(vectorstore=store, k=4, bm25_weight=0.0, **options).invoke(query)
    return {str(d.id): d.metadata[METADATA_KEY]["rrf"] for d in docs}


def _store() -> InMemoryVectorStore:
    store = InMemoryVectorStore(embedding=HashEmbeddings())
    store.add_texts(list(TEXTS.values()), ids=list(TEXTS))
    return store


def test_a_flat_lexical_run_weighs_only_the_floor() -> None:
    store = _store()
    query = "lighthouse keeper"  # a and b score the same: decisiveness 0
    adaptive = _rrf(store, query, lexical_floor=0.0)
    assert adaptive == _rrf(store, query, corpus_bm25_weight=0.0)
    assert adaptive != _rrf(store, query)


def test_a_decisive_lexical_run_keeps_its_full_weight() -> None:
    store = _store()
    query = "who paints boats"  # only a matches: decisiveness 1
    assert _rrf(store, query, lexical_floor=0.0) == _rrf(store, query)


def test_the_default_floor_keeps_the_weight_fixed() -> None:
    assert RecallB(vectorstore=_store()).lexical_floor == 1.0
