"""LoCoMo documents carry ``created_at`` parsed from their session's date, in order."""

from __future__ import annotations

from datetime import datetime, timezone

from cogito_lc._core.timestamps import parse_timestamp
from cogito_lc.bench import locomo
from tests.unit_tests.bench.locomo_sample import locomo_sample


def test_session_dates_parse_as_utc() -> None:
    assert locomo.session_time("1:56 pm on 8 May, 2023") == datetime(
        2023, 5, 8, 13, 56, tzinfo=timezone.utc
    )
    assert locomo.session_time("12:09 am on 13 September, 2023") == datetime(
        2023, 9, 13, 0, 9, tzinfo=timezone.utc
    )
    assert locomo.session_time("sometime in May") is None


def test_turns_and_facts_are_dated_from_their_session_in_order() -> None:
    sample = locomo_sample(1)[0]
    for unit in ("turns", "facts"):
        docs = locomo.build_unit(sample, unit).documents
        times = [parse_timestamp(d.metadata["created_at"]) for d in docs]
        assert all(t is not None for t in times)
        assert times == sorted(times)  # type: ignore[type-var]
        assert len(set(times)) == len(times)
        first = docs[0].metadata["created_at"]
        assert first == "2023-05-01T13:00:00+00:00"
    turns = locomo.build_unit(sample, "turns").documents
    assert turns[1].metadata["created_at"] == "2023-05-01T13:00:01+00:00"
    assert turns[0].metadata["date"] == "1:00 pm on 1 May, 2023"


def test_a_session_without_a_readable_date_gives_no_created_at() -> None:
    sample = locomo_sample(1)[0]
    sample["conversation"]["session_2_date_time"] = "unknown"
    docs = locomo.build_unit(sample, "turns").documents
    undated = [d for d in docs if "created_at" not in d.metadata]
    assert [d.metadata["session"] for d in undated] == ["session_2", "session_2"]
    facts = locomo.build_unit(sample, "facts").documents
    assert sum("created_at" not in d.metadata for d in facts) == 2
