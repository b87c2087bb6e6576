"""PostgresLexicalIndex: BM25 in Postgres over the memories table itself."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.documents import Document

from cogito_lc.stores._fts_ranking import K1, B, fts5_idf, rarest_terms
from cogito_lc.stores.base import Vector
from cogito_lc.stores.lexical_index import LexicalHit, lexical_terms
from cogito_lc.stores.postgres import (
    SELECT_COLUMNS,
    PostgresAdapter,
    row_document,
    split_vectors,
    where_to_sql,
)
from cogito_lc.stores.postgres_bm25 import MAX_WORD_BYTES, scope_part, stats_table

__all__ = ["PostgresLexicalIndex", "scope_part"]

POSTING_BUDGET = 2_000
"""Rows a search ranks, at most: past it the candidates come from the rarest terms only.

Lower than :data:`~cogito_lc.stores.sqlite_fts.POSTING_BUDGET`: each candidate's
``tsvector`` is read from its row to score it; FTS5 reads posting lists only."""

COUNT_LIMIT = 500
"""A query term the planner's statistics show in more rows of a scope takes their
estimate; the others are counted (up to the posting budget). Past this many rows a
term's idf barely moves with its exact count (from 500 to 600 rows of 100,000: 5.29
to 5.11), while counting it reads every row holding it to check the scope."""

PAIRED_TERMS = 4
"""When the rarest query term alone holds more rows than the posting budget, the rows
holding two of the query's this many rarest terms are taken first: otherwise
``LIMIT`` keeps an arbitrary part of that term's rows, and the best rows often hold
two mid-rare terms. Measured with the budget and count limit divided by ten on
100,000 memories (as 1,000,000 memories meet the real ones): over 150 questions the
bounded top 10 kept 0.73 of the exact one instead of 0.48 (BM25 score share 0.94
instead of 0.88); 6 or 8 terms did no better."""

_WEIGHTS_KEPT_SECONDS = 1.0
"""How long a query's BM25 weights are reused (the statistics of a scope barely move)."""
_WEIGHTS_KEPT = 256
"""Queries whose weights are kept at most."""
_WeightsKey = tuple[tuple[str, ...], str]
_SHARES_KEPT_SECONDS = 60.0
"""How long the planner's term statistics are reused before they are read again."""

# Values go in as parameters; the SQL text formats in only the checked table name and
# conditions built by ``where_to_sql``: hence the S608 exemptions below.
_CANDIDATE_COLUMNS = "seq, id, content_tsv, lexical_length"
_SCORED = (
    "WITH c AS ({candidates}), s AS (SELECT x.hit, x.hit_id, "
    "sum((%s::float8[])[array_position(%s::text[], (x.u).lexeme)] "
    "* (cardinality((x.u).positions) * %s) / (cardinality((x.u).positions) "
    "+ %s * (1 - %s + %s * x.length / %s))) AS score "
    "FROM (SELECT c.seq AS hit, c.id AS hit_id, c.lexical_length AS length, "
    "unnest(ts_filter(setweight(c.content_tsv, 'A', %s::text[]), '{{a}}')) AS u FROM c) AS x "
    "GROUP BY x.hit, x.hit_id{ranked})"
)
"""Each candidate's BM25 score, as FTS5's ``bm25()`` computes it: each query term's
idf times its saturated frequency (the term's positions in the row's ``tsvector``),
normalised by the row's ``lexical_length`` against the scope's average.

The query terms are picked out of each ``tsvector`` whole (``setweight`` marks
them, ``ts_filter`` keeps them), so a candidate costs one pass over its vector;
they are unnested in the select list (no function scan per row) and each finds
its idf by its place in the query's terms. Measured on 150 questions over
100,000 memories: a fifth faster than a lateral join on the weights, the same
rows and scores."""
_RANKED = " ORDER BY score DESC, x.hit LIMIT %s"

_WEIGHTS = (
    "WITH s AS (SELECT coalesce(sum(rows), 0) AS rows, coalesce(sum(tokens), 0) AS tokens "
    "FROM {stats} WHERE {scope}) "
    "SELECT s.rows, s.tokens, ARRAY(SELECT CASE WHEN s.rows = 0 OR t.share * s.rows > %s "
    "THEN NULL ELSE (SELECT count(*) FROM (SELECT 1 FROM {table} AS m "
    "WHERE content_tsv @@ t.query::tsquery AND {scope} LIMIT %s) AS c) END "
    "FROM unnest(%s::text[], %s::float8[]) WITH ORDINALITY AS t(query, share, n) "
    "ORDER BY t.n) FROM s"
)
"""The scope's counters, and each query term's rows in the scope, counted up to a limit;
NULL for a term the planner's share of the rows puts past the count limit (estimated)."""


class PostgresLexicalIndex:
    """The :class:`~cogito_lc.stores.LexicalIndex` of a Postgres memories table, ranked by BM25.

    The table made by :meth:`MemoryStore.from_database_url
    <cogito_lc.MemoryStore.from_database_url>` has a generated ``tsvector``
    column of its words as :func:`~cogito_lc.stores.lexical_terms` splits text
    (no text-search parser), with a GIN index, each row's
    length in lexical terms, and per-scope counters of rows and lengths kept by
    triggers in the same transaction as every write (:mod:`cogito_lc.stores.postgres_bm25`).
    So the index is the table: every committed write is searchable at once by
    every replica, and :meth:`upsert`, :meth:`delete`, :meth:`reindex` and
    :meth:`mark_pending` have nothing to do. A query is turned into its
    :func:`~cogito_lc.stores.lexical_terms`, each term quoted and joined with
    OR into a ``tsquery`` (no parser runs: a term is matched as the row's words
    were split), so no text is read as query syntax and any text is a valid query.

    Ranked by BM25 as SQLite FTS5's ``bm25()`` ranks (k1 1.2, b 0.75, the same
    idf), in SQL. The corpus statistics are those of the scope: the scope keys
    ``where`` requires (:func:`scope_part`), the whole table without any. Other
    conditions of ``where`` narrow what is returned in the same statement.

    A query's cost is bounded: the rows of the scope holding each term are
    counted first, each count stopping past ``posting_budget``, in the statement
    that reads the scope's counters. When the terms match more rows than
    ``posting_budget`` in all, the candidates are the rows holding the
    rarest terms that fit the budget (at most ``posting_budget`` rows), each
    scored with every query term. A term the planner's statistics of
    the column show in more rows than ``count_limit`` (or the budget, when
    lower) is not counted: its document frequency is their estimate. Results
    are exact when every term is held by fewer rows than that limit and all
    together by fewer than the budget; past
    the budget a memory holding none of the rare terms is not considered. The
    rows of counted terms are taken first, so an estimate below a term's true
    count never pushes a rarer term's rows out. What the budget leaves goes
    to the rows holding both of the two rarest terms left out. When the rarest
    term alone holds more rows than the budget, the rows holding two of the
    rarest :data:`PAIRED_TERMS` terms come before the rest of its rows.

    Example:
        ```python
        # needs: a Postgres database
        from cogito_lc import MemoryStore, local_embeddings
        from cogito_lc.stores import PostgresLexicalIndex

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
    runs_in_database = True
    """Searches run in the database server: a recall sends one beside its vector searches."""

    def __init__(
        self,
        adapter: PostgresAdapter,
        *,
        posting_budget: int | None = None,
        count_limit: int | None = None,
    ) -> None:
        budget = POSTING_BUDGET if posting_budget is None else posting_budget
        if budget < 1:
            msg = f"posting_budget must be at least 1 (rows ranked per search), got {budget}."
            raise ValueError(msg)
        limit = COUNT_LIMIT if count_limit is None else count_limit
        if limit < 1:
            msg = f"count_limit must be at least 1 (rows counted per query term), got {limit}."
            raise ValueError(msg)
        self.adapter = adapter
        self.table = adapter.table
        self.posting_budget = budget
        """Rows a search ranks, at most (default :data:`POSTING_BUDGET`)."""
        self.count_limit = limit
        """Rows of the scope past which, by the planner's statistics, a query term is
        estimated, not counted (default :data:`COUNT_LIMIT`); the posting budget
        when lower."""
        self.stats = f'"{stats_table(adapter.binding.table)}"'
        """The table of per-scope BM25 counters."""
        self._kept_weights: dict[_WeightsKey, tuple[float, _TermWeights | None]] = {}
        self._shares: tuple[float, Mapping[str, float]] = (float("-inf"), {})

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
        """The ``k`` best memories for ``query`` matching ``where``, best first (BM25)."""
        return self._search(query, k, where, None)

    def search_with_vectors(
        self, query: str, k: int, where: Mapping[str, Any] | None = None
    ) -> tuple[list[LexicalHit], dict[str, Vector]]:
        """:meth:`search`, and each hit's stored vector by id, read in the same statement."""
        vectors: dict[str, Vector] = {}
        return self._search(query, k, where, vectors), vectors

    def _search(
        self,
        query: str,
        k: int,
        where: Mapping[str, Any] | None,
        vectors: dict[str, Vector] | None,
    ) -> list[LexicalHit]:
        terms = _terms(query)
        if not terms or k < 1:
            return []
        sql, params = where_to_sql(where)
        columns = SELECT_COLUMNS if vectors is None else f"{SELECT_COLUMNS}, m.embedding"
        with self.adapter.database.connection() as conn:
            weights = self._weights(conn, terms, where, reuse=False)
            if weights is None:
                return []
            candidates, candidate_params = self._candidates(weights, sql, params)
            ranked = _SCORED.format(candidates=candidates, ranked=_RANKED)
            # The candidate branches must run in order (the first rows win the budget):
            # no parallel plan. Setting, search and commit go in one round trip.
            with conn.pipeline(), conn.transaction():
                conn.execute("SET LOCAL max_parallel_workers_per_gather = 0")
                cursor = conn.execute(
                    f"{ranked} SELECT {columns}, s.score FROM {self.table} AS m "  # noqa: S608
                    f"JOIN s ON m.seq = s.hit WHERE {sql} ORDER BY s.score DESC, s.hit",
                    [*candidate_params, *weights.params(), k, *params],
                    binary=vectors is not None,
                )
            rows = cursor.fetchall()
        if vectors is not None:
            rows, read = split_vectors(rows)
            vectors.update(read)
        return [(row_document(row[:-1]), float(row[-1])) for row in rows]

    def _candidates(
        self, weights: _TermWeights, sql: str, params: list[Any]
    ) -> tuple[str, list[Any]]:
        """The statement picking the rows a search scores, and its parameters.

        No more rows than the posting budget (see :func:`_chosen_terms`): the
        rows of the counted terms chosen, then those of the estimated ones that
        hold none of them, then the rows holding both of the two rarest terms
        left out (:func:`_left_out_pair`). When the rarest term alone holds more
        rows than the budget, the rows holding two of the rarest terms come
        before its other rows (:data:`PAIRED_TERMS`).
        """
        budget = self.posting_budget
        counted, estimated, held = _chosen_terms(weights, budget)
        chosen = counted + estimated
        select = f"SELECT {_CANDIDATE_COLUMNS} FROM {self.table} WHERE "  # noqa: S608
        branches = _Branches(select, sql, params)
        if _cut_short(weights, chosen, budget):  # then one term, counted or estimated
            taken = branches.add_pairs(_paired_terms(weights), budget)
            branches.add(_tsquery(chosen), budget, without=_any_of(taken))
            return branches.statement(budget)
        if counted and estimated:
            branches.add(_tsquery(counted), held)
            branches.add(_tsquery(estimated), budget - held, without=_tsquery(counted))
        else:
            branches.add(_tsquery(chosen), budget)
        left_out = _left_out_pair(weights, chosen)
        if left_out is not None:
            branches.add(left_out, budget, without=_tsquery(chosen))
        return branches.statement(budget)

    def scores(
        self, query: str, ids: Sequence[str], where: Mapping[str, Any] | None = None
    ) -> dict[str, float]:
        """The BM25 score of each of these memories for ``query`` (0.0 when it shares no word).

        ``where`` names the corpus the statistics come from, as in :meth:`search`,
        so the scores compare with the ones a search of the same ``where`` gives;
        a memory outside it scores 0.0.
        """
        result = dict.fromkeys(ids, 0.0)
        terms = _terms(query)
        if not terms or not ids:
            return result
        with self.adapter.database.connection() as conn:
            weights = self._weights(conn, terms, where, reuse=True)
            if weights is None:
                return result
            sql, params = where_to_sql(where)
            candidates = (
                f"SELECT {_CANDIDATE_COLUMNS} FROM {self.table} "  # noqa: S608
                f"WHERE id = ANY(%s) AND {sql}"
            )
            rows = conn.execute(
                _SCORED.format(candidates=candidates, ranked="") + " SELECT hit_id, score FROM s",  # noqa: S608
                [list(ids), *params, *weights.params()],
            ).fetchall()
        result.update({row[0]: float(row[1]) for row in rows if row[1] is not None})
        return result

    def _weights(
        self, conn: Any, terms: list[str], where: Mapping[str, Any] | None, *, reuse: bool
    ) -> _TermWeights | None:
        """The BM25 weights of ``terms`` in the scope of ``where``; None when none is held.

        A search reads them afresh (a write just made is found) and keeps them a
        moment (:data:`_WEIGHTS_KEPT_SECONDS`); with ``reuse``, weights kept for the
        same terms and scope are taken: a recall asks for the scores of its pool
        right after its search, on the same scale.
        """
        key = (tuple(terms), repr(scope_part(where)))
        now = time.monotonic()
        kept = self._kept_weights.get(key) if reuse else None
        if kept is not None and now - kept[0] < _WEIGHTS_KEPT_SECONDS:
            return kept[1]
        weights = self._read_weights(conn, terms, where)
        if len(self._kept_weights) >= _WEIGHTS_KEPT:
            self._kept_weights.clear()
        self._kept_weights[key] = (now, weights)
        return weights

    def _read_weights(
        self, conn: Any, terms: list[str], where: Mapping[str, Any] | None
    ) -> _TermWeights | None:
        """The scope's counters and each term's rows in it, in one statement.

        A term the planner's statistics show in more rows of the scope than
        ``count_limit`` (or the posting budget, when lower) is not counted row
        by row: its frequency is their estimate. The others are counted, each count
        stopping past the posting budget (past it, the count is a lower bound).
        """
        scope_sql, scope_params = where_to_sql(scope_part(where))
        limit = min(self.posting_budget, self.count_limit)
        shares = self._term_shares(conn)
        row = conn.execute(
            _WEIGHTS.format(stats=self.stats, table=self.table, scope=scope_sql),
            [
                *scope_params,
                limit,
                *scope_params,
                self.posting_budget + 1,
                [_tsquery([term]) for term in terms],
                [shares.get(term, 0.0) for term in terms],
            ],
        ).fetchone()
        rows, tokens = (int(row[0]), int(row[1])) if row else (0, 0)
        if rows <= 0:
            return None
        counts: list[int | None] = row[2]
        held: dict[str, int] = {}
        estimated: set[str] = set()
        for term, counted in zip(terms, counts, strict=True):
            frequency = counted
            if frequency is None:  # past the count limit by the statistics: their estimate
                estimated.add(term)
                frequency = min(rows, round(shares.get(term, 0.0) * rows))
            if frequency:
                held[term] = frequency
        if not held:
            return None
        return _TermWeights(
            rows=rows, tokens=tokens, frequency=held, estimated=frozenset(estimated)
        )

    def _term_shares(self, conn: Any) -> Mapping[str, float]:
        """The share of the table's rows holding each common term (the planner's statistics).

        ``ANALYZE`` (run by autovacuum) keeps them; read at most once per
        :data:`_SHARES_KEPT_SECONDS`. Empty before the table was first analysed.
        """
        now = time.monotonic()
        if now - self._shares[0] < _SHARES_KEPT_SECONDS:
            return self._shares[1]
        row = conn.execute(
            "SELECT most_common_elems::text::text[], most_common_elem_freqs FROM pg_stats "
            "WHERE schemaname = current_schema() AND tablename = %s AND attname = 'content_tsv'",
            [self.adapter.binding.table],
        ).fetchone()
        shares = dict(zip(row[0], map(float, row[1]), strict=False)) if row and row[0] else {}
        self._shares = (now, shares)
        return shares

    def covers_all(self, where: Mapping[str, Any]) -> bool:
        """Whether every memory matches ``where``.

        Read from the BM25 counters (one row per scope) when ``where`` is made of
        scope keys only; otherwise asked of the rows, stopping at the first that
        does not match.
        """
        sql, params = where_to_sql(where)
        counted = scope_part(where) == where
        source = f"{self.stats} WHERE rows > 0 AND" if counted else f"{self.table} WHERE"
        with self.adapter.database.connection() as conn:
            row = conn.execute(
                f"SELECT EXISTS (SELECT 1 FROM {source} NOT coalesce({sql}, FALSE))",  # noqa: S608
                params,
            ).fetchone()
        return not (row and row[0])

    def count(self, where: Mapping[str, Any] | None = None) -> int:
        """How many memories match ``where``."""
        return self.adapter.count(where)

    def ids(self) -> set[str]:
        """The ids of every memory."""
        return set(self.adapter.ids_in(None))


@dataclass(frozen=True)
class _TermWeights:
    """What a BM25 score needs of the corpus, for one query."""

    rows: int
    tokens: int
    frequency: Mapping[str, int]
    """Rows holding each term (terms held only): counted, or past the count limit
    the planner's estimate."""
    estimated: frozenset[str] = frozenset()
    """The terms whose frequency is the planner's estimate, not a count."""

    def idf(self) -> dict[str, float]:
        """Each held term's inverse document frequency, as FTS5 computes it."""
        return {term: fts5_idf(self.rows, held) for term, held in self.frequency.items()}

    def params(self) -> list[Any]:
        """The parameters of :data:`_SCORED`, in order."""
        idf = self.idf()
        average = self.tokens / self.rows if self.tokens > 0 else 1.0
        terms = list(idf)
        return [list(idf.values()), terms, K1 + 1, K1, B, B, average, terms]


def _chosen_terms(weights: _TermWeights, budget: int) -> tuple[list[str], list[str], int]:
    """The counted and the estimated terms whose rows are a search's candidates.

    The rarest counted terms whose rows fit ``budget`` come first (all of them
    when they fit), then the rarest estimated terms whose rows fit what is left.
    A table-wide estimate can be far below a scope's own count: an estimated
    term never takes a counted term's place. The third value is the counted
    terms' rows (the budget at most). With no counted term, the rarest estimated
    terms that fit the budget, at least the rarest one.
    """
    frequency = weights.frequency
    counts = {term: n for term, n in frequency.items() if term not in weights.estimated}
    estimates = {term: n for term, n in frequency.items() if term in weights.estimated}
    counted = rarest_terms(counts, budget)
    held = min(budget, sum(counts[term] for term in counted))
    estimated = rarest_terms(estimates, budget - held, at_least_one=not counted)
    return counted, estimated, held


def _cut_short(weights: _TermWeights, terms: list[str], budget: int) -> bool:
    """Whether the rows of the chosen ``terms`` overflow ``budget`` (the rarest alone does)."""
    return sum(weights.frequency[term] for term in terms) > budget


def _paired_terms(weights: _TermWeights) -> list[tuple[str, str]]:
    """The pairs of the query's :data:`PAIRED_TERMS` rarest terms, likely fewest rows first.

    A pair's rows are expected to be few when the product of its terms' rows is
    small (terms held independently). Counts stop past the budget, so terms past
    it tie, and ties keep the query's order.
    """
    frequency = weights.frequency
    rarest = sorted(frequency, key=frequency.__getitem__)[:PAIRED_TERMS]
    return sorted(
        itertools.combinations(rarest, 2),
        key=lambda pair: frequency[pair[0]] * frequency[pair[1]],
    )


def _left_out_pair(weights: _TermWeights, chosen: list[str]) -> str | None:
    """A tsquery of the two rarest terms whose rows are not candidates; None without two.

    Rows holding both often outscore rows holding one chosen term. Measured on
    100,000 memories at the real budget, over 150 questions not used to choose it:
    the bounded top 10 kept 0.97 of the exact one instead of 0.92 (worst question
    0.92 of its BM25 score instead of 0.65), for 0.0-0.6 ms more per recall (p50
    of paired runs); the six pairs of four such terms gave 0.98 for 1.8 ms more.
    """
    frequency = weights.frequency
    left = sorted((term for term in frequency if term not in chosen), key=frequency.__getitem__)
    return _all_of(left[:2]) if len(left) > 1 else None


@dataclass
class _Branches:
    """A search's candidate statement: GIN searches of the scope run in order, first rows first.

    Each branch leaves out the rows an earlier one took (``without``), so no row
    is scored twice; the whole stops at the budget. GIN finds the rows of two
    terms from the rarer one's postings, so a pair costs about its rarer term's rows.
    """

    select: str
    sql: str
    params: list[Any]
    parts: list[str] = field(default_factory=list)
    values: list[Any] = field(default_factory=list)

    def add(self, holding: str, limit: int, *, without: str | None = None) -> None:
        """The rows matching the tsquery ``holding`` and not ``without``, at most ``limit``."""
        test = "content_tsv @@ %s::tsquery"
        excluded = f" AND NOT {test}" if without else ""
        self.parts.append(f"({self.select}{test}{excluded} AND {self.sql} LIMIT %s)")
        self.values += [holding, *([without] if without else []), *self.params, limit]

    def add_pairs(self, pairs: list[tuple[str, str]], limit: int) -> list[str]:
        """The rows holding both terms of each pair, pair by pair; returns their tsqueries."""
        taken: list[str] = []
        for first, second in pairs:
            both = _all_of([first, second])
            self.add(both, limit, without=_any_of(taken))
            taken.append(both)
        return taken

    def statement(self, budget: int) -> tuple[str, list[Any]]:
        """The statement and its parameters: the branches in order, ``budget`` rows at most."""
        if len(self.parts) == 1:
            return self.parts[0][1:-1], self.values
        union = " UNION ALL ".join(self.parts)
        return f"SELECT * FROM ({union}) AS p LIMIT %s", [*self.values, budget]  # noqa: S608


def _any_of(queries: list[str]) -> str | None:
    """A tsquery matching any of ``queries`` (each already quoted); None without any."""
    return " | ".join(f"({query})" for query in queries) or None


def _terms(query: str) -> list[str]:
    """``query``'s distinct terms, in order; as stored, none too long for a ``tsquery``."""
    terms = dict.fromkeys(lexical_terms(query))
    return [term for term in terms if len(term.encode()) < MAX_WORD_BYTES]


def _tsquery(terms: list[str]) -> str:
    """A tsquery matching any of ``terms``, each quoted (never query syntax)."""
    return " | ".join(f"'{term}'" for term in terms)


def _all_of(terms: list[str]) -> str:
    """A tsquery matching the rows holding every one of ``terms``, each quoted."""
    return " & ".join(f"'{term}'" for term in terms)
