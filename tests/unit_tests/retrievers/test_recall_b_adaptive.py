"""RecallB's decisiveness-scaled lexical weight and its squashed-BM25 blend term."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore

from cogito_lc import METADATA_KEY, RecallB
from cogito_lc.retrievers.adaptive_fusion import bm25_sigmoid, load_lexicon
from cogito_lc.stores import Bm25Index
from tests.unit_tests.conftest import HashEmbeddings

TEXTS = {
    "a": "the lighthouse keeper paints boats",
    "b": "the lighthouse keeper mends nets",
    "c": "a gardener waters tomato plants",
    "d": "the baker bakes rye bread daily",
}


def _rrf(store: InMemoryVectorStore, query: str, **options: Any) -> dict[str, float]:
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


def test_floor_one_keeps_the_weight_fixed() -> None:
    store = _store()
    query = "lighthouse keeper"  # flat: the default floor halves the weight, 1.0 does not
    assert _rrf(store, query, lexical_floor=1.0) != _rrf(store, query)


def _top(store: InMemoryVectorStore, query: str, **options: float) -> list[str]:
    docs = RecallB(vectorstore=store, k=4, **options).invoke(query)
    return [str(d.id) for d in docs]


def test_a_zero_lexical_blend_leaves_the_rank_and_cosine_blend() -> None:
    store = _store()
    query = "gardener keeper paints"
    docs = RecallB(vectorstore=store, k=4, lexical_blend_weight=0.0).invoke(query)
    blended = RecallB(vectorstore=store, k=4).invoke(query)
    assert [d.metadata[METADATA_KEY]["score"] for d in docs] != [
        d.metadata[METADATA_KEY]["score"] for d in blended
    ]
    assert max(d.metadata[METADATA_KEY]["score"] for d in docs) == pytest.approx(1.0)


def test_a_full_lexical_blend_orders_by_the_squashed_bm25_score() -> None:
    store = _store()
    query = "gardener keeper paints"  # a matches two words, b and c one each
    docs = RecallB(vectorstore=store, k=4, lexical_blend_weight=1.0).invoke(query)
    assert str(docs[0].id) == "a"
    scores = [d.metadata[METADATA_KEY]["score"] for d in docs]
    assert scores == sorted(scores, reverse=True)
    assert scores[-1] == 0.0  # d shares no word with the query
    shift = RecallB.model_fields["lexical_blend_shift"].default
    assert scores[0] == pytest.approx(bm25_sigmoid(_bm25(store, query)["a"], terms=3, shift=shift))


def test_the_lexical_blend_works_with_every_lexical_run_off() -> None:
    store = _store()
    query = "gardener keeper paints"
    off = {"corpus_bm25_weight": 0.0, "bm25_weight": 0.0}
    assert _top(store, query, lexical_blend_weight=1.0, **off)[0] == "a"
    scores = [
        d.metadata[METADATA_KEY]["score"]
        for d in RecallB(vectorstore=store, k=4, **off, lexical_blend_weight=0.0).invoke(query)
    ]
    assert scores[0] > 0.0


def test_a_lexical_blend_weight_above_one_is_rejected() -> None:
    with pytest.raises(ValueError, match="lexical_blend_weight"):
        RecallB(vectorstore=_store(), lexical_blend_weight=1.5)


def test_the_lexical_query_leaves_out_stop_words() -> None:
    retriever = RecallB(vectorstore=_store())
    assert retriever.lexical_query("When did the keeper paint her boats?") == "keeper paint boats"
    kept = RecallB(vectorstore=_store(), lexical_stop_words=frozenset())
    assert kept.lexical_query("When did the keeper paint?") == "When did the keeper paint?"


def _chatty_store() -> InMemoryVectorStore:
    store = InMemoryVectorStore(embedding=HashEmbeddings())
    texts = {"chat": "when did you say you would go, when did we agree", **TEXTS}
    store.add_texts(list(texts.values()), ids=list(texts))
    return store


def test_stop_words_of_the_query_earn_no_lexical_score() -> None:
    store = _chatty_store()
    query = "when did the baker bake"
    full = {"lexical_blend_weight": 1.0}
    plain = RecallB(vectorstore=store, k=5, lexical_stop_words=frozenset(), **full).invoke(query)
    stripped = RecallB(vectorstore=store, k=5, **full).invoke(query)
    score = {str(d.id): d.metadata[METADATA_KEY]["score"] for d in stripped}
    assert {str(d.id): d.metadata[METADATA_KEY]["score"] for d in plain}["chat"] > 0.0
    assert score["chat"] == 0.0
    assert str(stripped[0].id) == "d"


def test_a_query_of_stop_words_only_gets_no_lexical_run() -> None:
    store = _chatty_store()
    query = "when did you"
    stripped = _rrf(store, query)
    assert stripped == _rrf(store, query, corpus_bm25_weight=0.0, lexical_blend_weight=0.0)
    assert _rrf(store, query, lexical_stop_words=frozenset()) != stripped


def _bm25(store: InMemoryVectorStore, query: str) -> dict[str, float]:
    documents = [Document(page_content=text, id=key) for key, text in TEXTS.items()]
    return Bm25Index(documents).hits(query).scores(list(TEXTS))


def test_the_lexical_search_holds_the_query_words_inflections() -> None:
    retriever = RecallB(vectorstore=_store())
    assert retriever.lexical_query("When did she sign up?") == "sign"
    searched = retriever.lexical_search_query("When did she sign up?").split()
    assert {"sign", "signed", "signing"} <= set(searched)
    off = RecallB(vectorstore=_store(), lexical_inflections=False)
    assert off.lexical_search_query("When did she sign up?") == "sign"


def test_the_lexical_search_adds_no_stop_word_as_an_inflection() -> None:
    retriever = RecallB(vectorstore=_store())
    searched = retriever.lexical_search_query("What has she liked since she went there?").split()
    assert {"liked", "likes", "go", "gone"} <= set(searched)
    assert "like" not in searched  # a stop word: it would match nearly every memory
    custom = RecallB(vectorstore=_store(), lexical_stop_words=frozenset({"what", "she"}))
    assert "like" in custom.lexical_search_query("What has she liked?").split()


def test_an_inflected_query_word_finds_the_memory_by_its_lexical_run() -> None:
    store = _store()
    query = "who paint boat"  # "a" holds "paints" and "boats" only
    index = Bm25Index([Document(page_content=t, id=k) for k, t in TEXTS.items()])
    assert _rrf(store, query, lexical_index=index)["a"] > _rrf(
        store, query, lexical_index=index, lexical_inflections=False
    ).get("a", 0.0)


def test_the_lexicon_loads_when_recall_b_is_built_not_in_its_first_recall() -> None:
    load_lexicon.cache_clear()
    RecallB(vectorstore=_store(), lexical_inflections=False)
    assert load_lexicon.cache_info().currsize == 0
    RecallB(vectorstore=_store())
    assert load_lexicon.cache_info().currsize == 1
