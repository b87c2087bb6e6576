"""PostgresLexicalIndex: Postgres full-text search over the memories table itself."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langchain_core.documents import Document

from cogito_lc._core.postgres import (
    SELECT_COLUMNS,
    PostgresAdapter,
    row_document,
    where_to_sql,
)
from cogito_lc.retrievers._fts_ranking import rarest_terms
from cogito_lc.retrievers.lexical_index import LexicalHit, lexical_terms

__all__ = ["PostgresLexicalIndex"]

POSTING_BUDGET = 2_000
"""Rows a search ranks, at most: past it the candidates come from the rarest terms only.

Lower than :data:`~cogito_lc.retrievers.fts_index.POSTING_BUDGET`: ``ts_rank_cd``
reads and ranks each row's ``tsvector`` (about 10 µs a row), FTS5's ``bm25()``
reads posting lists only."""

# Values go in as parameters; the SQL text formats in only the checked table name and
# conditions built by ``where_to_sql``: hence the S608 exemptions below.
_RANK = "ts_rank_cd(content_tsv, q.query, 1)"
"""Cover density ranking, divided by 1 + log(document length) (shorter documents first)."""


class PostgresLexicalIndex:
    """The :class:`~cogito_lc.retrievers.LexicalIndex` of a Postgres memories table.

    The table made by :meth:`MemoryStore.from_database_url
    <cogito_lc.MemoryStore.from_database_url>` has a generated ``tsvector``
    column (``to_tsvector('simple', content)``) with a GIN index, so the index is
    the table: every committed write is searchable at once by every replica, and
    :meth:`upsert`, :meth:`delete`, :meth:`reindex` and :meth:`mark_pending` have
    nothing to do. A query is turned into its
    :func:`~cogito_lc.retrievers.lexical_terms`, each term quoted and joined with
    OR, so no text reaches the tsquery parser as syntax and any text is a valid
    query. Ranked in SQL with ``ts_rank_cd``; ``where`` filters go into the same
    statement (scope keys use their indexes).

    A query's cost is bounded: the rows matching each term (and ``where``) are
    counted first, each count stopping past ``posting_budget``. When the terms
    match more rows than that in all, the candidates are the rows holding the
    rarest terms that fit the budget (at most ``posting_budget`` rows) and only
    they are ranked, with every query term. Results are exact below the budget;
    above it a memory holding none of the rare terms is not considered.

    Example:
        ```python
        # needs: a Postgres database
        from cogito_lc import MemoryStore, local_embeddings
        from cogito_lc.retrievers import PostgresLexicalIndex

        memory = MemoryStore.from_database_url(
            "postgresql://me:secret@db/app", embeddings=local_embeddings()
        )
        memory.store("billing runs on port 8083", scope={"user_id": "a"})
        index = PostgresLexicalIndex(memory._store)
        [(doc, score)] = index.search("port 8083?", k=3, where={"user_id": "a"})
        ```
    """

    mirrors_store = True
    """The index is the store's own table: it cannot be out of step with it."""

    def __init__(self, adapter: PostgresAdapter, *, posting_budget: int | None = None) -> None:
        budget = POSTING_BUDGET if posting_budget is None else posting_budget
        if budget < 1:
            msg = f"posting_budget must be at least 1 (rows ranked per search), got {budget}."
            raise ValueError(msg)
        self.adapter = adapter
        self.table = adapter.table
        self.posting_budget = budget
        """Rows a search ranks, at most (default :data:`POSTING_BUDGET`)."""

    # -- writes: the generated column follows the table --------------------------

    def upsert(self, documents: Sequence[Document]) -> None:
        """Nothing to do: the row's ``tsvector`` was written with it."""

    def delete(self, ids: Sequence[str]) -> None:
        """Nothing to do: the row's ``tsvector`` was deleted with it."""

    def reindex(self, documents: Iterable[Document]) -> None:
        """Nothing to do: the ``tsvector`` column is generated from the text."""

    def mark_pending(self, ids: Sequence[str]) -> None:
        """Nothing to record: no write can reach the table without its ``tsvector``."""

    def pending(self) -> set[str]:
        """Always empty (see :meth:`mark_pending`)."""
        return set()

    # -- reads --------------------------------------------------------------------

    def search(
        self, query: str, k: int, where: Mapping[str, Any] | None = None
    ) -> list[LexicalHit]:
        """The ``k`` best memories for ``query`` matching ``where``, best first."""
        terms = _terms(query)
        if not terms or k < 1:
            return []
        sql, params = where_to_sql(where)
        with self.adapter.database.connection() as conn:
            frequency = self._frequency(conn, terms, sql, params)
            held = {term: rows for term, rows in frequency.items() if rows}
            if not held:
                return []
            tsquery = _tsquery(list(held))
            if sum(held.values()) <= self.posting_budget:
                rows = conn.execute(
                    f"SELECT {SELECT_COLUMNS}, {_RANK} AS rank "  # noqa: S608
                    f"FROM {self.table} AS m, to_tsquery('simple', %s) AS q(query) "
                    f"WHERE content_tsv @@ q.query AND {sql} ORDER BY rank DESC, seq LIMIT %s",
                    [tsquery, *params, k],
                ).fetchall()
            else:
                rare = _tsquery(rarest_terms(held, self.posting_budget))
                rows = conn.execute(
                    f"SELECT {SELECT_COLUMNS}, {_RANK} AS rank FROM "  # noqa: S608
                    f"(SELECT {SELECT_COLUMNS}, seq, content_tsv FROM {self.table} "
                    f"WHERE content_tsv @@ to_tsquery('simple', %s) AND {sql} LIMIT %s) AS m, "
                    "to_tsquery('simple', %s) AS q(query) ORDER BY rank DESC, seq LIMIT %s",
                    [rare, *params, self.posting_budget, tsquery, k],
                ).fetchall()
        return [(row_document(row[:-1]), float(row[-1])) for row in rows if row[-1] > 0]

    def _frequency(
        self, conn: Any, terms: list[str], sql: str, params: list[Any]
    ) -> dict[str, int]:
        """How many rows matching ``sql`` hold each term, counted up to the budget + 1."""
        counts = conn.execute(
            "SELECT (SELECT count(*) FROM (SELECT 1 FROM "  # noqa: S608
            f"{self.table} AS m WHERE content_tsv @@ to_tsquery('simple', t.term) AND {sql} "
            "LIMIT %s) AS s) FROM unnest(%s::text[]) WITH ORDINALITY AS t(term, n) ORDER BY t.n",
            [*params, self.posting_budget + 1, [_tsquery([term]) for term in terms]],
        ).fetchall()
        return {term: int(row[0]) for term, row in zip(terms, counts, strict=True)}

    def scores(self, query: str, ids: Sequence[str]) -> dict[str, float]:
        """The rank of each of these memories for ``query`` (0.0 when it shares no word)."""
        result = dict.fromkeys(ids, 0.0)
        terms = _terms(query)
        if not terms or not ids:
            return result
        tsquery = _tsquery(terms)
        with self.adapter.database.connection() as conn:
            rows = conn.execute(
                f"SELECT id, {_RANK} FROM {self.table} AS m, "  # noqa: S608
                "to_tsquery('simple', %s) AS q(query) "
                "WHERE id = ANY(%s) AND content_tsv @@ q.query",
                [tsquery, list(ids)],
            ).fetchall()
        result.update({row[0]: float(row[1]) for row in rows})
        return result

    def covers_all(self, where: Mapping[str, Any]) -> bool:
        """Whether every memory matches ``where`` (stops at the first that does not)."""
        sql, params = where_to_sql(where)
        with self.adapter.database.connection() as conn:
            row = conn.execute(
                f"SELECT EXISTS (SELECT 1 FROM {self.table} "  # noqa: S608
                f"WHERE NOT coalesce({sql}, FALSE))",
                params,
            ).fetchone()
        return not (row and row[0])

    def count(self, where: Mapping[str, Any] | None = None) -> int:
        """How many memories match ``where``."""
        return self.adapter.count(where)

    def ids(self) -> set[str]:
        """The ids of every memory."""
        return set(self.adapter.ids_in(None))


def _terms(query: str) -> list[str]:
    """``query``'s distinct terms, in order."""
    return list(dict.fromkeys(lexical_terms(query)))


def _tsquery(terms: list[str]) -> str:
    """A tsquery matching any of ``terms``, each quoted (never query syntax)."""
    return " | ".join(f"'{term}'" for term in terms)
