"""The lexical run's weight follows its decisiveness; the squashed BM25 score blends in."""

from __future__ import annotations

import numpy as np
import pytest

from cogito_lc.retrievers.adaptive_fusion import (
    adaptive_lexical_weight,
    bm25_sigmoid,
    inflect_query,
    inflections,
    lexical_blend,
    lexical_decisiveness,
    lexical_query,
    query_terms,
)


@pytest.mark.parametrize(
    ("scores", "expected"),
    [
        ([], 0.0),
        ([0.0, 0.0], 0.0),
        ([4.0], 1.0),
        ([4.0, 0.0], 1.0),
        ([4.0, 3.0], 0.25),
        ([2.0, 2.0], 0.0),
    ],
)
def test_decisiveness_is_the_leads_share_of_the_best(scores: list[float], expected: float) -> None:
    assert lexical_decisiveness(scores) == pytest.approx(expected)


def test_floor_one_keeps_the_weight_fixed() -> None:
    assert adaptive_lexical_weight(4.0, [2.0, 2.0], floor=1.0) == 4.0


def test_a_flat_run_gets_the_floor_and_a_decisive_one_the_full_weight() -> None:
    assert adaptive_lexical_weight(4.0, [2.0, 2.0], floor=0.25) == pytest.approx(1.0)
    assert adaptive_lexical_weight(4.0, [6.0, 0.0], floor=0.25) == pytest.approx(4.0)


def test_a_floor_outside_zero_to_one_names_the_fix() -> None:
    with pytest.raises(ValueError, match=r"1\.0 keeps the weight fixed"):
        adaptive_lexical_weight(4.0, [1.0], floor=1.5)


def test_lexical_blend_weight_zero_leaves_the_scores_unchanged() -> None:
    scores = np.asarray([0.9, 0.1], np.float32)
    assert lexical_blend(scores, [0.0, 30.0], terms=2, weight=0.0) is scores


def test_lexical_blend_mixes_in_the_squashed_absolute_score() -> None:
    scores = np.asarray([1.0, 0.5, 0.0], np.float32)
    mixed = lexical_blend(scores, [0.0, 5.0, 12.0], terms=2, weight=0.4)
    expected = [0.6, 0.6 * 0.5 + 0.4 * 0.5, 0.4 * bm25_sigmoid(12.0, 2)]
    assert mixed.tolist() == pytest.approx(expected)
    assert mixed.dtype == np.float32


def test_a_document_sharing_no_word_gets_no_lexical_share() -> None:
    mixed = lexical_blend(np.zeros(2, np.float32), [0.0, -1.0], terms=2, weight=1.0)
    assert mixed.tolist() == [0.0, 0.0]


def test_a_blend_weight_outside_zero_to_one_names_the_fix() -> None:
    with pytest.raises(ValueError, match="0 leaves the scores unchanged"):
        lexical_blend(np.zeros(1, np.float32), [1.0], terms=2, weight=1.5)


@pytest.mark.parametrize(
    ("terms", "midpoint"), [(1, 5.0), (5, 7.0), (8, 9.0), (12, 10.0), (20, 12.0)]
)
def test_the_sigmoid_midpoint_grows_with_the_query(terms: int, midpoint: float) -> None:
    assert bm25_sigmoid(midpoint, terms) == pytest.approx(0.5)


def test_query_terms_count_words_without_english_stop_words() -> None:
    assert query_terms("the auth tokens of the billing service") == 4
    assert query_terms("the of") == 0


def test_a_shift_moves_the_curves_midpoint() -> None:
    assert bm25_sigmoid(1.0, terms=2, shift=-4.0) == pytest.approx(0.5)
    assert bm25_sigmoid(3.0, terms=2, shift=-4.0) > bm25_sigmoid(3.0, terms=2)


def test_the_blend_squashes_with_the_shifted_curve() -> None:
    mixed = lexical_blend(np.zeros(1, np.float32), [3.0], terms=2, weight=1.0, shift=-2.0)
    assert mixed.tolist() == pytest.approx([0.5])


def test_the_lexical_query_drops_stop_words_whatever_their_case() -> None:
    stop = frozenset({"when", "did", "her", "to"})
    assert lexical_query("When did Caroline go to HER pottery class?", stop) == (
        "Caroline go pottery class"
    )


def test_the_lexical_query_keeps_the_words_an_index_would_split_out() -> None:
    assert lexical_query("port 8083, auth_tokens; x", frozenset()) == "port 8083 auth_tokens"
    assert lexical_query("did it?", frozenset({"did", "it"})) == ""


@pytest.mark.parametrize(
    ("word", "forms"),
    [
        ("signed", {"sign", "signs", "signed", "signing"}),
        ("sign", {"signs", "signed", "signing"}),
        ("Practiced", {"practice", "practices", "practicing"}),
        ("allergies", {"allergy", "allergies"}),
        ("studio", {"studios"}),
        ("class", {"classes"}),
        ("classes", {"class"}),
    ],
)
def test_inflections_hold_the_common_forms(word: str, forms: set[str]) -> None:
    found = inflections(word)
    assert found[0] == word.lower()
    assert forms <= set(found)
    assert len(found) == len(set(found))


@pytest.mark.parametrize("word", ["2023", "kai", "b2b"])
def test_unknown_short_words_and_words_with_digits_are_not_inflected(word: str) -> None:
    assert inflections(word) == [word.lower()]


@pytest.mark.parametrize(
    ("word", "forms"),
    [
        ("went", {"go", "goes", "gone", "going"}),
        ("go", {"went", "gone"}),
        ("bought", {"buy", "buying"}),
        ("children", {"child"}),
        ("gym", {"gyms"}),
        ("older", {"old", "oldest"}),
    ],
)
def test_known_words_get_their_irregular_forms_from_the_lexicon(word: str, forms: set[str]) -> None:
    found = inflections(word)
    assert found[0] == word
    assert forms <= set(found)


def test_unknown_words_get_rule_made_forms() -> None:
    assert {"melanies"} <= set(inflections("Melanie"))
    assert inflections("Melanie")[0] == "melanie"


def test_inflect_query_leaves_out_excluded_forms_but_keeps_the_query_words() -> None:
    searched = inflect_query("liked like", exclude={"like"}).split()
    assert searched[0] == "liked"
    assert "like" in searched  # the query's own word
    assert "likes" in searched
    assert "like" not in inflect_query("liked", exclude={"like"}).split()


def test_a_plural_keeps_its_stem_but_not_a_double_s() -> None:
    assert "clas" not in inflections("class")
    assert "pottery" in inflections("potteries")


def test_inflect_query_lists_each_form_once_word_by_word() -> None:
    searched = inflect_query("sign signs up?").split()
    assert searched[: len(inflections("sign"))] == inflections("sign")
    assert len(searched) == len(set(searched))
    assert "up" in searched
    assert inflect_query("") == ""
