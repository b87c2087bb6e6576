"""A mem0-style hybrid retriever: the strongest zero-LLM baseline users pick instead of RecallB.

mem0 2.2.1 (``Memory._search_vector_store``) searches a store with keyword
support like this: a semantic run of ``max(4 * top_k, 60)`` memories, a BM25
run of as many over the query with spaCy's stop words removed, each BM25 score squashed
to 0..1 by a logistic curve whose midpoint and steepness depend on the number
of query terms, then every semantic candidate whose cosine is at least 0.1 is
scored ``(cosine + bm25) / 2`` (only ``cosine`` when the keyword run is empty).
Memories found only by the keyword run are never returned. Entity boosts need
an LLM-built entity store and are left out. Here the BM25 run is bm25s with its
English stop words (``k1=1.2, b=0.75``, as Qdrant's BM25) instead of spaCy
lemmas, and the stop words are scikit-learn's English list (the Glasgow list
spaCy's is built on) plus the forms of "do" spaCy adds.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import bm25s
import numpy as np
from langchain_chroma import Chroma
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, PrivateAttr

from cogito_lc.retrievers.adaptive_fusion import bm25_sigmoid

__all__ = [
    "Mem0HybridRetriever",
    "bm25_sigmoid",
    "hybrid_order",
    "keyword_terms",
    "keyword_tokens",
    "stop_words",
]

SEMANTIC_K = 60
"""mem0's semantic pool for ``top_k=10``: ``max(4 * top_k, 60)``."""
SEMANTIC_THRESHOLD = 0.1
"""mem0's default ``threshold``: candidates with a lower cosine are dropped."""


@functools.cache
def stop_words() -> list[str]:
    """scikit-learn's English stop words and the forms of "do" spaCy adds (needs scikit-learn)."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS  # type: ignore[import-untyped]

    return sorted(ENGLISH_STOP_WORDS | {"did", "does", "doing", "done"})


def _tokenize(texts: list[str], *, return_ids: bool = True) -> Any:
    return bm25s.tokenize(texts, stopwords=stop_words(), return_ids=return_ids, show_progress=False)


def keyword_terms(text: str) -> list[str]:
    """The BM25 terms of ``text``: lower-cased words without English stop words."""
    return [str(token) for token in _tokenize([text], return_ids=False)[0]]


def hybrid_order(
    semantic: Sequence[tuple[str, float]],
    keyword: Sequence[tuple[str, float]],
    terms: int,
    k: int,
    threshold: float = SEMANTIC_THRESHOLD,
) -> list[str]:
    """Rank semantic candidates the way mem0's ``score_and_rank`` does.

    Args:
        semantic: ``(key, cosine)`` of the semantic run, best first.
        keyword: ``(key, raw BM25 score)`` of the keyword run.
        terms: How many terms the keyword query has (sets the sigmoid).
        k: How many keys to return.
        threshold: Semantic candidates below this cosine are dropped.

    Returns:
        The ``k`` best keys, best first.

    Example:
        ```python
        from cogito_lc.bench.mem0_hybrid import hybrid_order

        order = hybrid_order([("a", 0.6), ("b", 0.5)], [("b", 12.0)], terms=2, k=2)
        assert order == ["b", "a"]
        ```
    """
    bm25 = {key: bm25_sigmoid(raw, terms) for key, raw in keyword if raw > 0}
    divisor = 2.0 if bm25 else 1.0
    scored = [
        (min((cosine + bm25.get(key, 0.0)) / divisor, 1.0), key)
        for key, cosine in semantic
        if cosine >= threshold
    ]
    scored.sort(key=lambda item: -item[0])
    return [key for _, key in scored[:k]]


def keyword_tokens(documents: Sequence[Document]) -> Any:
    """The documents' BM25 tokens, for ``bm25s.BM25.index``."""
    return _tokenize([d.page_content for d in documents])


class Mem0HybridRetriever(BaseRetriever):
    """mem0-style hybrid search over a Chroma store of normalised vectors and a bm25s index."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    store: Chroma
    documents: list[Document]
    k: int = 10
    _index: Any = PrivateAttr()
    _by_id: dict[str, Document] = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        self._index = bm25s.BM25(k1=1.2, b=0.75)
        self._index.index(keyword_tokens(self.documents), show_progress=False)
        self._by_id = {str(d.id): d for d in self.documents}

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        found = self.store.similarity_search_with_score(query, k=SEMANTIC_K)
        # Chroma's default space is squared L2: for unit vectors cosine = 1 - d / 2.
        semantic = [(str(doc.id), 1.0 - distance / 2.0) for doc, distance in found]
        terms = keyword_terms(query)
        keyword: list[tuple[str, float]] = []
        if terms:
            scores = np.asarray(self._index.get_scores(terms))
            top = np.argsort(-scores, kind="stable")[:SEMANTIC_K]
            keyword = [(str(self.documents[i].id), float(scores[i])) for i in top]
        order = hybrid_order(semantic, keyword, len(terms), self.k)
        return [self._by_id[key] for key in order]
