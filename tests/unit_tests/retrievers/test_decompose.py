from __future__ import annotations

import pytest

from cogito_lc.retrievers._decompose import STOP_WORDS, decompose_query, tokenize


def test_original_query_comes_first_whitespace_normalised() -> None:
    result = decompose_query("  how long   do auth tokens last? ")
    assert result.queries[0] == "how long do auth tokens last?"


def test_stripped_phrase_drops_stop_words() -> None:
    result = decompose_query("what is the latency budget for search")
    assert result.queries[1] == "latency budget search"


def test_bigrams_trigrams_and_long_tokens_follow_in_order() -> None:
    queries = decompose_query("auth token rotation policy", max_subqueries=20).queries
    assert queries[0] == "auth token rotation policy"
    # the stripped phrase equals the original here, so it is de-duplicated
    assert queries[1:4] == ("auth token", "token rotation", "rotation policy")
    assert queries[4:6] == ("auth token rotation", "token rotation policy")
    assert queries[6:] == ("auth", "token", "rotation", "policy")


def test_short_tokens_are_not_single_subqueries() -> None:
    queries = decompose_query("ci job on arm", max_subqueries=20).queries
    assert "ci" not in queries
    assert "job" not in queries
    assert "arm" not in queries


def test_duplicates_are_removed_case_insensitively() -> None:
    queries = decompose_query("Billing billing BILLING", max_subqueries=20).queries
    lowered = [q.lower() for q in queries]
    assert len(lowered) == len(set(lowered))


def test_capped_at_max_subqueries() -> None:
    query = "deploy pipeline rollback canary staging production migration schema"
    assert len(decompose_query(query).queries) == 8
    assert len(decompose_query(query, max_subqueries=3).queries) == 3
    assert len(decompose_query(query, max_subqueries=1).queries) == 1


def test_vocab_map_matches_token_bigram_and_substring() -> None:
    vocab = {
        "fast": ["latency", "throughput"],
        "how fast": ["p95", "ms"],
        "deploy": ["release", "rollout"],
        "unused": ["never"],
    }
    result = decompose_query("how fast are deployments", vocab_map=vocab, max_subqueries=20)
    assert "latency throughput" in result.queries
    assert "p95 ms" in result.queries
    assert "release rollout" in result.queries  # substring of "deployments"
    assert "never" not in result.queries
    assert result.vocab_applied
    assert result.method.endswith("_v")


def test_no_vocab_means_plain_method_tag() -> None:
    result = decompose_query("auth tokens")
    assert not result.vocab_applied
    assert result.method == f"decompose_{len(result.queries)}"


def test_vocab_expansion_cut_by_cap_is_not_reported() -> None:
    result = decompose_query("auth tokens", vocab_map={"auth": ["oauth"]}, max_subqueries=1)
    assert result.queries == ("auth tokens",)
    assert not result.vocab_applied


def test_pure_function_same_output() -> None:
    vocab = {"slow": ["latency"]}
    assert decompose_query("why is search slow", vocab_map=vocab) == decompose_query(
        "why is search slow", vocab_map=vocab
    )


@pytest.mark.parametrize("query", ["", "   ", "\n\t"])
def test_blank_query_is_a_value_error(query: str) -> None:
    with pytest.raises(ValueError, match="query is empty"):
        decompose_query(query)


def test_non_string_query_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="query must be a str"):
        decompose_query(42)  # type: ignore[arg-type]


def test_max_subqueries_below_one_is_rejected() -> None:
    with pytest.raises(ValueError, match="max_subqueries"):
        decompose_query("auth", max_subqueries=0)


def test_very_long_query_stays_bounded() -> None:
    query = " ".join(f"word{i}" for i in range(2000))[:10_000]
    result = decompose_query(query)
    assert len(result.queries) == 8
    assert result.queries[0] == query


def test_stop_word_only_query_keeps_the_original() -> None:
    assert decompose_query("what is it").queries == ("what is it",)


def test_tokenize_keeps_inner_apostrophes_and_digits() -> None:
    assert tokenize("What's the p95? It\u2019s 250ms") == ["what's", "the", "p95", "it's", "250ms"]
    assert "what" in STOP_WORDS
