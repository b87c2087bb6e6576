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
from cogito_lc.retrievers.lexical_index import LexicalHit, lexical_terms

__all__ = ["PostgresLexicalIndex"]

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

    def __init__(self, adapter: PostgresAdapter) -> None:
        self.adapter = adapter
        self.table = adapter.table

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
        tsquery = _tsquery(query)
        if tsquery is None or k < 1:
            return []
        sql, params = where_to_sql(where)
        with self.adapter.database.connection() as conn:
            rows = conn.execute(
                f"SELECT {SELECT_COLUMNS}, {_RANK} AS rank "  # noqa: S608
                f"FROM {self.table}, to_tsquery('simple', %s) AS q(query) "
                f"WHERE content_tsv @@ q.query AND {sql} ORDER BY rank DESC, seq LIMIT %s",
                [tsquery, *params, k],
            ).fetchall()
        return [(row_document(row[:-1]), float(row[-1])) for row in rows if row[-1] > 0]

    def scores(self, query: str, ids: Sequence[str]) -> dict[str, float]:
        """The rank of each of these memories for ``query`` (0.0 when it shares no word)."""
        result = dict.fromkeys(ids, 0.0)
        tsquery = _tsquery(query)
        if tsquery is None or not ids:
            return result
        with self.adapter.database.connection() as conn:
            rows = conn.execute(
                f"SELECT id, {_RANK} FROM {self.table}, "  # noqa: S608
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


def _tsquery(query: str) -> str | None:
    """``query``'s terms as a tsquery matching any of them, or None when it has none."""
    terms = dict.fromkeys(lexical_terms(query))
    if not terms:
        return None
    return " | ".join(f"'{term}'" for term in terms)
