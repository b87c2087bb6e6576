"""The Postgres helpers that need no database: URL redaction, filter SQL, error mapping."""

from __future__ import annotations

import pytest

from cogito_lc.stores.lexical_index import lexical_terms
from cogito_lc.stores.postgres import (
    DatabaseUnavailableError,
    PostgresDatabase,
    redact_url,
    where_to_sql,
)
from cogito_lc.stores.postgres_lexical import _tsquery


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://me:s3cret@db:5432/app", "postgresql://me:***@db:5432/app"),
        ("postgresql+psycopg://me:s3cret@db/app", "postgresql+psycopg://me:***@db/app"),
        ("postgresql://me@db/app", "postgresql://me@db/app"),
        ("postgresql://db/app?user=me&password=s3cret", "postgresql://db/app?user=me&password=***"),
    ],
)
def test_redact_url_hides_the_password(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_the_database_repr_hides_the_password() -> None:
    database = PostgresDatabase.__new__(PostgresDatabase)
    database.safe_url = redact_url("postgresql://me:s3cret@db/app")
    assert "s3cret" not in repr(database)


def test_scope_keys_use_their_columns_and_other_keys_jsonb() -> None:
    sql, params = where_to_sql({"$and": [{"user_id": "a"}, {"topic": {"$in": ["x", "y"]}}]})
    assert '("user_id" = %s)' in sql
    assert "langchain_metadata -> %s" in sql
    assert params == ["a", "topic", ['"x"', '"y"']]


def test_a_number_never_matches_a_text_column() -> None:
    assert where_to_sql({"user_id": 3}) == ("(FALSE)", [])
    assert where_to_sql({"user_id": {"$ne": 3}}) == ("(TRUE)", [])


def test_bad_filters_are_rejected() -> None:
    with pytest.raises(ValueError, match="not supported"):
        where_to_sql({"$not": {"a": 1}})
    with pytest.raises(ValueError, match="str, int, float or bool"):
        where_to_sql({"a": {"$eq": [1]}})


@pytest.mark.parametrize(
    "query", ["'; DROP TABLE x; --", "a & b | !c <-> d", "???", "", "(((", "it's \\ 'quoted'"]
)
def test_any_text_becomes_plain_quoted_terms(query: str) -> None:
    tsquery = _tsquery(lexical_terms(query))
    if tsquery:
        for term in tsquery.split(" | "):
            assert term.startswith("'")
            assert term.endswith("'")
            assert "'" not in term[1:-1]
            assert "\\" not in term[1:-1]


def test_a_database_that_stopped_answering_is_503_with_retry_after() -> None:
    pytest.importorskip("fastapi")
    from cogito_lc.service._service import http_error_for

    error = http_error_for(DatabaseUnavailableError("the database at postgresql://... is down"))
    assert error is not None
    assert error.status_code == 503
    assert error.headers == {"Retry-After": "2"}
