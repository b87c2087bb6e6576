"""The Postgres helpers that need no database: URL redaction, filter SQL, error mapping."""

from __future__ import annotations

import pytest

from cogito_lc.stores.lexical_index import lexical_terms
from cogito_lc.stores.postgres import (
    DatabaseUnavailableError,
    PostgresDatabase,
    WriteLockTimeoutError,
    _scrub,
    redact_url,
    where_to_sql,
)
from cogito_lc.stores.postgres_lexical import (
    _chosen_terms,
    _cut_short,
    _left_out_pair,
    _paired_terms,
    _TermWeights,
    _tsquery,
)


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


def test_a_connection_error_keeps_the_words_that_hold_a_short_password() -> None:
    pytest.importorskip("psycopg")
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from cogito_lc import MemoryStore
    from cogito_lc.stores.postgres import DatabaseSetupError

    url = "postgresql://u:p@127.0.0.1:9/db"  # nothing listens on port 9
    with pytest.raises(DatabaseSetupError) as caught:
        MemoryStore.from_database_url(url, embeddings=DeterministicFakeEmbedding(size=8))
    message = str(caught.value)
    assert "postgresql://u:***@127.0.0.1:9/db" in message
    assert 'connection to server at "127.0.0.1", port 9 failed' in message


@pytest.mark.parametrize(
    ("url", "text", "shown"),
    [
        ("postgresql://u:s3cret@db/app", "bad s3cret for u", "bad *** for u"),
        ("postgresql://u:s3cret@db/app", "no such role s3crets", "no such role s3crets"),
        ("postgresql://u:p%40ss@db/app", "user u:p@ss, p@ss.", "user u:***, ***."),
        ("postgresql://db/app?password=s3cret", "(s3cret) refused", "(***) refused"),
        (
            "postgresql://u:s3cret@db/app",
            "at postgresql://u:s3cret@db/app: refused",
            "at postgresql://u:***@db/app: refused",
        ),
    ],
)
def test_a_driver_message_loses_the_url_and_the_password_as_a_whole_word(
    url: str, text: str, shown: str
) -> None:
    assert _scrub(text, url) == shown


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


def test_a_write_lock_held_too_long_by_another_replica_is_503_with_retry_after() -> None:
    pytest.importorskip("fastapi")
    from cogito_lc.service._service import http_error_for

    error = http_error_for(WriteLockTimeoutError("another writer held the write lock ..."))
    assert error is not None
    assert error.status_code == 503
    assert error.detail == "another replica held the store's write lock; retry shortly"
    assert error.headers == {"Retry-After": "2"}


def _weights(counted: dict[str, int], estimated: dict[str, int]) -> _TermWeights:
    return _TermWeights(
        rows=100_000,
        tokens=1_000_000,
        frequency={**counted, **estimated},
        estimated=frozenset(estimated),
    )


@pytest.mark.parametrize(
    ("counted", "estimated", "chosen"),
    [
        # Everything fits the budget: every term's rows.
        ({"zebra": 3, "port": 40}, {"the": 900}, (["zebra", "port"], ["the"], 43)),
        # An estimate below a counted term's count never takes its place.
        ({"billing": 1_500}, {"what": 600}, (["billing"], [], 1_500)),
        # Estimated terms fill what the counted ones leave, rarest first.
        ({"port": 1_200}, {"what": 900, "is": 700}, (["port"], ["is"], 1_200)),
        # No counted term: the rarest estimated terms that fit, at least one.
        ({}, {"what": 3_000, "is": 2_500}, ([], ["is"], 0)),
        # A count past the budget (a lower bound) gives way to a rarer counted term;
        # alone, its rows fill the budget.
        ({"common": 2_001, "rare": 5}, {"the": 600}, (["rare"], ["the"], 5)),
        ({"common": 2_001}, {"the": 600}, (["common"], [], 2_000)),
    ],
)
def test_counted_terms_are_chosen_before_estimated_ones(
    counted: dict[str, int],
    estimated: dict[str, int],
    chosen: tuple[list[str], list[str], int],
) -> None:
    assert _chosen_terms(_weights(counted, estimated), 2_000) == chosen


def test_pairs_are_of_the_rarest_terms_likely_fewest_rows_first() -> None:
    weights = _weights(
        {"zebra": 3_000, "river": 2_500, "guard": 9_000}, {"the": 60_000, "a": 90_000}
    )
    assert _paired_terms(weights) == [
        ("river", "zebra"),
        ("river", "guard"),
        ("zebra", "guard"),
        ("river", "the"),
        ("zebra", "the"),
        ("guard", "the"),
    ]
    assert _paired_terms(_weights({"zebra": 3_000}, {})) == []


def test_pairs_are_sought_only_when_the_chosen_terms_overflow_the_budget() -> None:
    weights = _weights({"zebra": 3_000, "river": 1_500}, {})
    assert _cut_short(weights, ["zebra"], 2_000)
    assert not _cut_short(weights, ["river"], 2_000)


def test_the_left_out_pair_is_of_the_two_rarest_terms_not_chosen() -> None:
    weights = _weights({"zebra": 30, "river": 2_500, "guard": 9_000}, {"the": 60_000})
    assert _left_out_pair(weights, ["zebra"]) == "'river' & 'guard'"
    assert _left_out_pair(weights, ["zebra", "river", "guard"]) is None


def test_only_a_database_away_opens_the_breaker_not_a_failed_statement() -> None:
    import psycopg
    from psycopg import errors

    from cogito_lc.stores.postgres import _is_outage

    away = [psycopg.OperationalError("lost"), errors.AdminShutdown("x"), errors.DiskFull("x")]
    away.append(errors.ConnectionFailure("x"))
    failed = [errors.ProgramLimitExceeded("x"), errors.QueryCanceled("x")]
    failed.append(errors.LockNotAvailable("x"))
    assert all(_is_outage(error) for error in away)
    assert not any(_is_outage(error) for error in failed)
