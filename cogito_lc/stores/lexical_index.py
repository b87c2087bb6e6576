"""The lexical index protocol: what RecallB's corpus run searches and MemoryStore writes to.

RecallB fuses a BM25 run over the whole corpus (or scope) with its vector runs.
The index behind that run is kept up to date by the writes themselves, never
rebuilt on the read path: :class:`~cogito_lc.stores.SqliteLexicalIndex`
(SQLite FTS5, persisted beside an embedded Chroma store) and
:class:`~cogito_lc.stores.Bm25LexicalIndex` (bm25s in memory, for stores
without persistence) implement it; a database backend can implement it with its
own full-text search. :class:`~cogito_lc.stores.LexicalSync` keeps one in
step with its vector store.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from bm25s.stopwords import STOPWORDS_EN
from langchain_core.documents import Document

__all__ = ["LEXICAL_STOP_WORDS", "LexicalHit", "LexicalIndex", "lexical_terms"]

LexicalHit = tuple[Document, float]
"""A document found by a lexical search and its BM25 score (higher is better, above 0)."""

LEXICAL_STOP_WORDS: frozenset[str] = frozenset(STOPWORDS_EN)
"""English stop words left out of the lexical index and of lexical queries (bm25s's list)."""

_TERM_RE = re.compile(r"(?u)\b\w\w+\b")


def lexical_terms(text: str) -> list[str]:
    """The terms of ``text`` a lexical index stores and a query searches for.

    Lower-case words of two characters or more, stop words left out: the
    tokenisation of bm25s (``bm25s.tokenize(..., stopwords="en")``), so every
    index ranks the same words.

    Example:
        ```python
        from cogito_lc.stores import lexical_terms

        assert lexical_terms("Which port does billing use? 8083!") == [
            "which", "port", "does", "billing", "use", "8083"
        ]
        ```
    """
    return [term for term in _TERM_RE.findall(text.lower()) if term not in LEXICAL_STOP_WORDS]


@runtime_checkable
class LexicalIndex(Protocol):
    """A full-text index of memories, searched with BM25 and filtered by metadata.

    Documents are keyed by ``Document.id``. ``where`` is a Chroma-style
    metadata filter (see :func:`cogito_lc._core.filters.where_predicate`).
    """

    def upsert(self, documents: Sequence[Document]) -> None:
        """Add these documents, replacing any held under the same ids."""

    def delete(self, ids: Sequence[str]) -> None:
        """Remove the documents with these ids (unknown ids are ignored)."""

    def search(
        self, query: str, k: int, where: Mapping[str, Any] | None = None
    ) -> list[LexicalHit]:
        """The ``k`` best documents for ``query`` matching ``where``, best first.

        Any text is a valid query: it is searched as plain words, never parsed
        as query syntax. Documents sharing no word with it are left out.
        """

    def scores(
        self, query: str, ids: Sequence[str], where: Mapping[str, Any] | None = None
    ) -> dict[str, float]:
        """The score of each of these documents for ``query`` (0.0 when it shares no word).

        On the scale of :meth:`search` with the same ``where``: an index whose
        statistics depend on the scope (Postgres) reads them for ``where``.
        """

    def count(self, where: Mapping[str, Any] | None = None) -> int:
        """How many documents matching ``where`` the index holds."""

    def ids(self) -> set[str]:
        """The ids of every document the index holds."""

    def reindex(self, documents: Iterable[Document]) -> None:
        """Replace the whole content of the index with ``documents``."""

    def mark_pending(self, ids: Sequence[str]) -> None:
        """Record, before a vector-store write, the ids it touches.

        A durable index keeps them until an :meth:`upsert` or :meth:`delete` of
        the same ids, so a crash between the two writes leaves a list of what
        to check against the vector store on the next start. An index that
        lives in memory has nothing to recover and may ignore it.
        """

    def pending(self) -> set[str]:
        """The ids marked pending and not yet written."""
