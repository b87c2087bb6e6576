"""The corpus statistics BM25 needs, kept by Postgres itself beside the memories table.

BM25 weighs each query term by its inverse document frequency, which needs the
number of documents and their total length in the corpus searched (here: a
scope), and normalises by each document's length. A memories table made by
:func:`~cogito_lc.stores.postgres.open_postgres_store` (schema version 3) holds:

- ``content_tsv``: each row's words as :func:`~cogito_lc.stores.lexical_terms`
  splits a query (lower-cased runs of two word characters or more), with their
  positions, a generated column. Postgres's text-search parser is not used: it
  keeps an e-mail address, a path, a version or ``billing-port`` as one token
  and splits ``foo_bar``, where the query and every other cogito-lc index do not;
- ``lexical_length``: each row's length in lexical terms (the same words, stop
  words left out, as every cogito-lc lexical index counts them), a generated column;
- ``<table>_bm25``: one counter row per scope (``user_id``, ``agent_id``,
  ``run_id``) with its row count and total length, kept by statement-level
  triggers in the transaction of every insert, delete and update, whatever
  client writes (``PGVectorStore`` included). A scope's counters are summed at
  query time; no statistics are ever read from the rows themselves.

Plain SQL and PL/pgSQL only: it works on every managed Postgres, with no
extension beyond pgvector. :func:`check_bm25_statistics` runs at start-up and
rebuilds counters found out of step with the rows (a ``TRUNCATE``, triggers
disabled by hand), with a log line.
"""

# ruff: noqa: S608 - the SQL formats in only checked table names and fixed column lists

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from bm25s.stopwords import STOPWORDS_EN

from cogito_lc._core.metadata import SCOPE_KEYS

__all__ = [
    "bm25_steps",
    "check_bm25_statistics",
    "drop_bm25_statements",
    "scope_part",
    "stats_table",
    "text_index_statement",
]

logger = logging.getLogger(__name__)

MAX_WORD_BYTES = 2047
"""Words of this many UTF-8 bytes or more are left out: Postgres takes at most 2046 in a
``tsvector`` or ``tsquery`` word."""

_SCOPE_COLUMNS = ", ".join(f'"{key}"' for key in SCOPE_KEYS)
_SCOPE_KEY = f"jsonb_build_array({_SCOPE_COLUMNS})::text"
"""One text per scope; a missing key (NULL) and an empty one stay apart."""


def stats_table(table: str) -> str:
    """The name of the BM25 counter table of the memories table ``table`` (unquoted)."""
    return f"{table}_bm25"


def _stop_words_sql() -> str:
    words = ", ".join("'" + word.replace("'", "''") + "'" for word in sorted(STOPWORDS_EN))
    return f"ARRAY[{words}]::text[]"


def _length_function() -> str:
    return f"""
        CREATE OR REPLACE FUNCTION cogito_lexical_length(tsvector) RETURNS integer
        LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $fn$
            SELECT coalesce(sum(cardinality(positions)), 0)::integer FROM unnest($1)
            WHERE length(lexeme) > 1 AND lexeme <> ALL ({_stop_words_sql()})
        $fn$"""


def _trigger_function(table: str) -> str:
    stats = f'"{stats_table(table)}"'
    upsert = (
        f"INSERT INTO {stats} AS s (scope, {_SCOPE_COLUMNS}, rows, tokens) "
        f"SELECT {_SCOPE_KEY}, {_SCOPE_COLUMNS}, sum(d_rows), sum(d_tokens) "
        f"FROM ({{changes}}) AS c GROUP BY {_SCOPE_COLUMNS} "
        "HAVING sum(d_rows) <> 0 OR sum(d_tokens) <> 0 ORDER BY 1 "
        "ON CONFLICT (scope) DO UPDATE SET rows = s.rows + EXCLUDED.rows, "
        "tokens = s.tokens + EXCLUDED.tokens"
    )
    added = f"SELECT {_SCOPE_COLUMNS}, 1 AS d_rows, lexical_length AS d_tokens FROM new_rows"
    removed = f"SELECT {_SCOPE_COLUMNS}, -1 AS d_rows, -lexical_length AS d_tokens FROM old_rows"
    return f"""
        CREATE OR REPLACE FUNCTION "{table}_bm25_sync"() RETURNS trigger
        LANGUAGE plpgsql AS $fn$
        BEGIN
            IF TG_OP = 'INSERT' THEN
                {upsert.format(changes=added)};
            ELSIF TG_OP = 'DELETE' THEN
                {upsert.format(changes=removed)};
            ELSE
                {upsert.format(changes=f"{added} UNION ALL {removed}")};
            END IF;
            RETURN NULL;
        END
        $fn$"""


def _rebuild(table: str) -> str:
    stats = f'"{stats_table(table)}"'
    return (
        f"DELETE FROM {stats}; "
        f"INSERT INTO {stats} (scope, {_SCOPE_COLUMNS}, rows, tokens) "
        f"SELECT {_SCOPE_KEY}, {_SCOPE_COLUMNS}, count(*), coalesce(sum(lexical_length), 0) "
        f'FROM "{table}" GROUP BY {_SCOPE_COLUMNS}'
    )


_WORD_MATCHES = r"regexp_matches(lower($1), E'\\w\\w+', 'g') WITH ORDINALITY AS t(m, n)"
"""Each word of the text, in order: the runs ``lexical_terms`` finds (``\\w\\w+``, lower-cased).

The pattern is an escape string: a plain literal's backslashes would be read as
escapes (``\\w`` as ``w``) by a session with ``standard_conforming_strings`` off,
and the body of an SQL function is parsed with the settings of the session that runs it.
"""


def _words_functions() -> str:
    quote = "''''"  # one quote, as an SQL literal
    return f"""
        CREATE OR REPLACE FUNCTION cogito_lexical_tsvector(text) RETURNS tsvector
        LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $fn$
            SELECT coalesce(
                string_agg({quote} || t.m[1] || {quote} || ':' || least(t.n, 16383), ' ')
                    ::tsvector,
                ''::tsvector)
            FROM {_WORD_MATCHES} WHERE octet_length(t.m[1]) < {MAX_WORD_BYTES}
        $fn$;
        CREATE OR REPLACE FUNCTION cogito_lexical_count(text) RETURNS integer
        LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $fn$
            SELECT count(*)::integer FROM {_WORD_MATCHES}
            WHERE t.m[1] <> ALL ({_stop_words_sql()})
        $fn$"""


def text_index_statement(table: str) -> str:
    """The GIN index of ``table``'s ``tsvector`` column, with no pending list."""
    return (
        f'CREATE INDEX IF NOT EXISTS "{table}_content_tsv" ON "{table}" '
        "USING gin (content_tsv) WITH (fastupdate = off)"
    )


def _cleared_on_truncate(table: str) -> str:
    """A trigger emptying the counters when ``table`` is truncated (no row trigger fires)."""
    stats = f'"{stats_table(table)}"'
    return f"""
        CREATE OR REPLACE FUNCTION "{table}_bm25_clear"() RETURNS trigger
        LANGUAGE plpgsql AS $fn$
        BEGIN
            DELETE FROM {stats};
            RETURN NULL;
        END
        $fn$;
        CREATE TRIGGER "{table}_bm25_truncate" AFTER TRUNCATE ON "{table}"
        FOR EACH STATEMENT EXECUTE FUNCTION "{table}_bm25_clear"()"""


def _words_step(table: str) -> str:
    """The schema step that indexes ``table``'s text as ``lexical_terms`` splits it.

    Replaces the ``tsvector`` and length columns of schema version 2, made by
    Postgres's parser (a table rewrite and a text index build, once), and
    recounts the BM25 counters. Each word goes into the ``tsvector`` quoted, so
    no parser runs; one longer than the 2,047 bytes a ``tsvector`` holds is left
    out, as the parser leaves it out. A ``TRUNCATE`` now empties the counters too.
    """
    name = f'"{table}"'
    return ";\n".join(
        [
            _words_functions(),
            f"ALTER TABLE {name} DROP COLUMN IF EXISTS lexical_length, "
            "DROP COLUMN IF EXISTS content_tsv, "
            "ADD COLUMN content_tsv tsvector "
            "GENERATED ALWAYS AS (cogito_lexical_tsvector(content)) STORED, "
            "ADD COLUMN lexical_length integer "
            "GENERATED ALWAYS AS (cogito_lexical_count(content)) STORED",
            text_index_statement(table),
            _cleared_on_truncate(table),
            _rebuild(table),
        ]
    )


def bm25_steps(table: str) -> list[str]:
    """The schema steps that add the BM25 statistics to the memories table ``table``.

    The first adds the ``lexical_length`` column (a table rewrite, once), the
    counter table, its triggers, and fills the counters from the rows already
    there; the second splits the words again (see :func:`_words_step`); the
    third makes the words functions read the same under any session setting; the
    fourth leaves out words of 2047 bytes, which no row can hold.
    """
    name = f'"{table}"'
    stats = f'"{stats_table(table)}"'
    scope_columns = ", ".join(f'"{key}" TEXT' for key in SCOPE_KEYS)
    triggers = [
        (
            f'CREATE TRIGGER "{table}_bm25_{event.lower()}" AFTER {event} ON {name} '
            f"REFERENCING {transition} FOR EACH STATEMENT "
            f'EXECUTE FUNCTION "{table}_bm25_sync"()'
        )
        for event, transition in [
            ("INSERT", "NEW TABLE AS new_rows"),
            ("DELETE", "OLD TABLE AS old_rows"),
            ("UPDATE", "OLD TABLE AS old_rows NEW TABLE AS new_rows"),
        ]
    ]
    step = [
        _length_function(),
        f"ALTER TABLE {name} ADD COLUMN IF NOT EXISTS lexical_length INTEGER "
        "GENERATED ALWAYS AS (cogito_lexical_length(to_tsvector('simple', content))) STORED",
        f"CREATE TABLE IF NOT EXISTS {stats} (scope TEXT PRIMARY KEY, {scope_columns}, "
        "rows BIGINT NOT NULL, tokens BIGINT NOT NULL)",
        *(
            f'CREATE INDEX IF NOT EXISTS "{table}_bm25_{key}" ON {stats} ("{key}")'
            for key in SCOPE_KEYS
        ),
        _trigger_function(table),
        *triggers,
        _rebuild(table),
    ]
    return [";\n".join(step), _words_step(table), _words_functions(), _words_functions()]


def drop_bm25_statements(table: str) -> list[str]:
    """The statements that remove the BM25 counters of ``table`` (its triggers go with it)."""
    return [
        f'DROP TABLE IF EXISTS "{stats_table(table)}"',
        f'DROP FUNCTION IF EXISTS "{table}_bm25_sync"()',
        f'DROP FUNCTION IF EXISTS "{table}_bm25_clear"() CASCADE',
    ]


def check_bm25_statistics(conn: Any, table: str) -> bool:
    """Compare the counters of ``table`` with its rows, scope by scope; rebuild any out of step.

    Writes wait for the rebuild (the table is locked against them meanwhile), so
    the counters it writes are exact.

    Returns:
        Whether the counters were rebuilt.
    """
    if _in_step(conn, table):
        return False
    conn.execute(f'LOCK TABLE "{table}" IN SHARE MODE')
    if _in_step(conn, table):
        return False
    conn.execute(_rebuild(table))
    logger.warning("BM25 statistics of %s were out of step with its rows and were rebuilt.", table)
    return True


def _in_step(conn: Any, table: str) -> bool:
    """Whether every scope's counters equal its rows' count and total length."""
    stats = f'"{stats_table(table)}"'
    row = conn.execute(
        f"SELECT EXISTS (SELECT 1 FROM (SELECT {_SCOPE_KEY} AS scope, count(*) AS rows, "
        f'coalesce(sum(lexical_length), 0) AS tokens FROM "{table}" GROUP BY {_SCOPE_COLUMNS}) '
        f"AS r FULL JOIN {stats} AS s USING (scope) "
        "WHERE coalesce(r.rows, 0) <> coalesce(s.rows, 0) "
        "OR coalesce(r.tokens, 0) <> coalesce(s.tokens, 0))"
    ).fetchone()
    return bool(row) and not row[0]


def scope_part(where: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The conditions of ``where`` on scope keys that every match must meet, or None.

    The BM25 statistics of a search are those of this scope: a filter on other
    keys (kind, version) narrows what is returned, not the corpus.

    Example:
        ```python
        from cogito_lc.stores.postgres_bm25 import scope_part

        where = {"$and": [{"user_id": "a"}, {"kind": "rule"}]}
        assert scope_part(where) == {"user_id": "a"}
        assert scope_part({"$or": [{"user_id": "a"}, {"user_id": "b"}]}) is None
        ```
    """
    if not where:
        return None
    parts: list[dict[str, Any]] = []

    def walk(condition: Mapping[str, Any]) -> None:
        for key, value in condition.items():
            if key == "$and" and isinstance(value, list):
                for part in value:
                    if isinstance(part, Mapping):
                        walk(part)
            elif key in SCOPE_KEYS:
                parts.append({key: value})

    walk(where)
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else {"$and": parts}
