"""Query-adaptive weights for RecallB's fusion: trust the lexical run when it is decisive.

A BM25 run whose best document clearly outscores the runner-up has found the
memory sharing the query's rare words; a flat run (every candidate matching the
same common word) is mostly noise. :func:`lexical_decisiveness` turns the top of
a run into a 0..1 signal and :func:`adaptive_lexical_weight` scales the run's
fusion weight by it, at the cost of reading two scores.

:func:`lexical_blend` adds the absolute BM25 score of each candidate, squashed to
0..1 by mem0's logistic curve (:func:`bm25_sigmoid`), as a term of the final
blend: a strong keyword match counts however the rest of the pool scores.

:func:`lexical_query` drops function and question words ("when", "did", "my")
from the query the lexical run searches with: the corpus index keeps them (its
stop-word list is short), and in conversational memories they match nearly
every document, drowning the rare words that identify the memory.

:func:`inflect_query` adds the English inflections of each query word ("sign"
also searches "signs", "signed", "signing"; "go" also "went", "gone"): none of the
lexical indexes stems, so without them "When did she sign up?" misses "She signed
up". Every index ORs the query's terms, so the forms it does not hold cost nothing.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Collection, Sequence

import numpy as np
import numpy.typing as npt

from cogito_lc.stores.lexical_index import lexical_terms

__all__ = [
    "adaptive_lexical_weight",
    "bm25_sigmoid",
    "inflect_query",
    "inflections",
    "lexical_blend",
    "lexical_decisiveness",
    "lexical_query",
    "load_lexicon",
    "query_terms",
]

_WORD_RE = re.compile(r"(?u)\b\w\w+\b")
_SUFFIXES = (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", ""))
"""Suffixes stripped to find a word's stem, with what replaces them."""
_ENDINGS = ("", "s", "es", "ed", "ing", "e", "d")
"""Endings added to the stem to make the inflected forms searched (a stem ending in "y"
also gets "-ies" and "-ied")."""
_MIN_STEM = 3


def lexical_decisiveness(top_scores: Sequence[float]) -> float:
    """How far the best lexical score leads the runner-up, as a share of the best (0..1).

    Args:
        top_scores: The run's best scores, best first (at least the first two).

    Returns:
        ``(best - second) / best``; 1.0 for a single match, 0.0 for no match.

    Example:
        ```python
        from cogito_lc.retrievers.adaptive_fusion import lexical_decisiveness

        assert lexical_decisiveness([8.0, 2.0]) == 0.75
        assert lexical_decisiveness([3.0, 3.0]) == 0.0
        assert lexical_decisiveness([]) == 0.0
        ```
    """
    if not top_scores or top_scores[0] <= 0:
        return 0.0
    second = max(float(top_scores[1]), 0.0) if len(top_scores) > 1 else 0.0
    return min(max((float(top_scores[0]) - second) / float(top_scores[0]), 0.0), 1.0)


def adaptive_lexical_weight(base: float, top_scores: Sequence[float], floor: float) -> float:
    """The lexical run's weight: ``base`` scaled from ``floor`` (flat run) up to 1 (decisive run).

    Example:
        ```python
        from cogito_lc.retrievers.adaptive_fusion import adaptive_lexical_weight

        assert adaptive_lexical_weight(4.0, [8.0, 2.0], floor=0.5) == 3.5
        assert adaptive_lexical_weight(4.0, [3.0, 3.0], floor=0.5) == 2.0
        ```
    """
    if not 0.0 <= floor <= 1.0:
        msg = f"floor must be within 0..1, got {floor}; 1.0 keeps the weight fixed."
        raise ValueError(msg)
    return base * (floor + (1.0 - floor) * lexical_decisiveness(top_scores))


def bm25_sigmoid(raw: float, terms: int, shift: float = 0.0) -> float:
    """mem0's BM25 normalisation: a logistic curve set by the number of query terms.

    ``shift`` moves the curve's midpoint (the score squashed to 0.5) by that much.

    Example:
        ```python
        from cogito_lc.retrievers.adaptive_fusion import bm25_sigmoid

        assert bm25_sigmoid(5.0, terms=2) == 0.5
        assert bm25_sigmoid(0.0, terms=2) < 0.05
        assert bm25_sigmoid(3.0, terms=2, shift=-2.0) == 0.5
        ```
    """
    if terms <= 3:
        midpoint, steepness = 5.0, 0.7
    elif terms <= 6:
        midpoint, steepness = 7.0, 0.6
    elif terms <= 9:
        midpoint, steepness = 9.0, 0.5
    elif terms <= 15:
        midpoint, steepness = 10.0, 0.5
    else:
        midpoint, steepness = 12.0, 0.5
    return 1.0 / (1.0 + math.exp(-steepness * (raw - midpoint - shift)))


def query_terms(query: str) -> int:
    """How many BM25 terms ``query`` has (bm25s English tokenisation, stop words removed).

    Example:
        ```python
        from cogito_lc.retrievers.adaptive_fusion import query_terms

        assert query_terms("the auth tokens of the billing service") == 4
        ```
    """
    return len(lexical_terms(query))


def lexical_query(query: str, stop_words: Collection[str]) -> str:
    """``query`` without its ``stop_words`` (compared lower-cased), the words joined by spaces.

    Words are runs of two or more letters or digits, as the lexical indexes split them.

    Example:
        ```python
        from cogito_lc.retrievers.adaptive_fusion import lexical_query

        stop = {"when", "did", "to", "the"}
        assert lexical_query("When did Melanie go to the park?", stop) == "Melanie go park"
        assert lexical_query("When did", stop) == ""
        ```
    """
    return " ".join(word for word in _WORD_RE.findall(query) if word.lower() not in stop_words)


def _stem(word: str) -> str:
    if word.endswith("ss"):  # "class", "business": not a plural
        return word
    for suffix, replacement in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= _MIN_STEM:
            return word[: -len(suffix)] + replacement
    return word


def inflections(word: str) -> list[str]:
    """``word`` (lower-cased) and the other forms of its lemmas: plural, past, ``-ing``, ...

    A word English dictionaries know gets its lemmas and every inflection of them from
    LemmInflect's lexicon, irregular ones included ("went" -> "go", "gone"; "children"
    -> "child"). Any other word gets rule-made forms of its stem: the word without one
    common suffix (``-s`` but not ``-ss``, ``-es``, ``-ed``, ``-ing``, ``-ies`` to
    ``-y``), kept at three letters or more, with each common ending (``-s``, ``-es``,
    ``-ed``, ``-ing``, and ``-e`` or ``-d`` for a stem that lost its ``e``; ``-ies`` and
    ``-ied`` for one ending in ``y``). Some rule-made forms are not words: no memory
    holds them, so they match nothing. Words with a digit, and unknown words of three
    letters or fewer, are kept as they are.

    Example:
        ```python
        from cogito_lc.retrievers.adaptive_fusion import inflections

        assert {"sign", "signs", "signed", "signing"} <= set(inflections("signed"))
        assert {"go", "went", "gone"} <= set(inflections("go"))
        assert {"allergy", "allergies"} <= set(inflections("allergies"))
        assert inflections("2023") == ["2023"]
        ```
    """
    return list(_forms(word.lower()))


@functools.lru_cache(maxsize=16_384)
def _forms(word: str) -> tuple[str, ...]:
    if not word.isalpha():
        return (word,)
    known = _lexicon_forms(word)
    if known:
        return known
    if len(word) <= _MIN_STEM:
        return (word,)
    stem = _stem(word)
    forms = dict.fromkeys([word, *(stem + ending for ending in _ENDINGS)])
    if stem.endswith("y"):
        forms.update(dict.fromkeys([stem[:-1] + "ies", stem[:-1] + "ied"]))
    return tuple(forms)


@functools.cache
def load_lexicon() -> None:
    """Load the English lexicon :func:`inflections` reads (about 0.4 s, once per process).

    Called by :class:`~cogito_lc.RecallB` when it is built, so the first recall does
    not pay for it; :func:`inflections` loads it itself when needed.
    """
    import lemminflect

    lemminflect.getAllLemmas("went")  # each table loads on its first lookup
    lemminflect.getAllInflections("go")


def _lexicon_forms(word: str) -> tuple[str, ...]:
    """``word``, its lemmas and their inflections in LemmInflect's lexicon (empty if unknown)."""
    import lemminflect

    load_lexicon()
    lemmas = sorted({lemma for found in lemminflect.getAllLemmas(word).values() for lemma in found})
    if not lemmas:
        return ()
    forms = dict.fromkeys([word])
    for lemma in lemmas:
        forms[lemma.lower()] = None
        for inflected in lemminflect.getAllInflections(lemma).values():
            forms.update(dict.fromkeys(form.lower() for form in inflected))
    return tuple(form for form in forms if form.isalpha())


def inflect_query(query: str, exclude: Collection[str] = frozenset()) -> str:
    """``query``'s words, each with its :func:`inflections`, joined by spaces (no repeats).

    For the lexical run only: the indexes OR the terms, so a memory holding any
    form of a query word matches it.

    Args:
        query: The words to inflect (stop words already removed).
        exclude: Forms never added (compared lower-cased), such as the stop words the
            query lost: "liked" searches "likes" but not "like" when "like" is one. The
            query's own words are always kept.

    Example:
        ```python
        from cogito_lc.retrievers.adaptive_fusion import inflect_query

        searched = inflect_query("Melanie sign pottery class").split()
        assert {"signed", "classes", "melanie"} <= set(searched)
        assert len(searched) == len(set(searched))
        assert "like" not in inflect_query("liked", exclude={"like"}).split()
        ```
    """
    forms: dict[str, None] = {}
    for word in _WORD_RE.findall(query):
        own, *others = inflections(word)
        forms[own] = None
        forms.update(dict.fromkeys(form for form in others if form not in exclude))
    return " ".join(forms)


def lexical_blend(
    scores: npt.NDArray[np.float32],
    raw_bm25: Sequence[float],
    terms: int,
    weight: float,
    shift: float = 0.0,
) -> npt.NDArray[np.float32]:
    """Mix ``scores`` with each candidate's squashed BM25 score: ``(1 - weight) * s + weight * b``.

    Args:
        scores: The candidates' blended scores (0..1).
        raw_bm25: Each candidate's raw BM25 score for the query (0 when it shares no word).
        terms: How many terms the query has (:func:`query_terms`; sets the curve).
        weight: Share of the squashed BM25 score, 0..1; 0 returns ``scores`` unchanged.
        shift: Moves the squashing curve's midpoint (see :func:`bm25_sigmoid`).

    Example:
        ```python
        import numpy as np

        from cogito_lc.retrievers.adaptive_fusion import lexical_blend

        mixed = lexical_blend(np.asarray([1.0, 0.9], np.float32), [0.0, 12.0], terms=2, weight=0.4)
        assert mixed.argmax() == 1
        ```
    """
    if not 0.0 <= weight <= 1.0:
        msg = f"weight must be within 0..1, got {weight}; 0 leaves the scores unchanged."
        raise ValueError(msg)
    if weight == 0.0:
        return scores
    squashed = np.asarray(
        [bm25_sigmoid(float(raw), terms, shift) if raw > 0 else 0.0 for raw in raw_bm25], np.float32
    )
    return ((1.0 - weight) * scores + weight * squashed).astype(np.float32)
