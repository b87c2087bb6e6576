"""Zero-LLM grouping of memories into topics, for snapshots built without a model."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from langchain_core.documents import Document

from cogito_lc._core.text import STOP_WORDS, tokenize

__all__ = ["group_memories"]

_GROUP_KEYS = ("kind", "h2", "h1", "source")
_MIN_KEYWORD_LEN = 4


def _keywords(documents: Sequence[Document]) -> list[set[str]]:
    return [
        {t for t in tokenize(d.page_content) if len(t) >= _MIN_KEYWORD_LEN and t not in STOP_WORDS}
        for d in documents
    ]


def _by_keyword(documents: Sequence[Document]) -> dict[str, list[int]]:
    """Group by each memory's most shared keyword (BM25-style: frequent in the pool, not rare)."""
    words = _keywords(documents)
    frequency = Counter(word for doc_words in words for word in doc_words)
    groups: dict[str, list[int]] = {}
    for index, doc_words in enumerate(words):
        shared = [w for w in doc_words if frequency[w] > 1]
        label = max(shared, key=lambda w: (frequency[w], w)) if shared else "other"
        groups.setdefault(label, []).append(index)
    return groups


def group_memories(documents: Sequence[Document]) -> list[tuple[str, list[int]]]:
    """Topic headings and the 0-based indexes of the memories under each.

    Memories are grouped by the first metadata key they carry among ``kind``,
    ``h2``, ``h1`` and ``source``; the rest by their most shared keyword.
    Groups come largest first.
    """
    groups: dict[str, list[int]] = {}
    ungrouped: list[int] = []
    for index, doc in enumerate(documents):
        label = next((str(doc.metadata[k]) for k in _GROUP_KEYS if doc.metadata.get(k)), None)
        if label is None:
            ungrouped.append(index)
        else:
            groups.setdefault(label, []).append(index)
    rest = [documents[i] for i in ungrouped]
    for label, members in _by_keyword(rest).items():
        groups.setdefault(label, []).extend(ungrouped[m] for m in members)
    return sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
