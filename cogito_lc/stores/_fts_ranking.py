"""BM25 as SQLite FTS5's ``bm25()`` computes it, for scoring a few documents in Python.

FTS5 scores every row that matches any query term before it can sort, so a
query made of common words costs as much as their posting lists are long. The
index bounds that cost: past a budget of postings it takes its candidates from
the rarest terms and scores them here, with every query term, to the same
number ``bm25()`` would give (same formula, same corpus statistics).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["K1", "B", "CorpusStats", "bm25_score", "bm25_scorer", "fts5_idf", "rarest_terms"]

K1 = 1.2
"""FTS5's ``bm25()`` term-frequency saturation."""
B = 0.75
"""FTS5's ``bm25()`` length normalisation."""
_MIN_IDF = 1e-6


def fts5_idf(rows: int, held: int) -> float:
    """FTS5's inverse document frequency of a term ``held`` by that many of ``rows`` rows.

    1e-6 where the formula gives 0 or less, as ``bm25()`` does.

    Example:
        ```python
        from cogito_lc.stores._fts_ranking import fts5_idf

        assert fts5_idf(10, 1) > fts5_idf(10, 3) > 0
        assert fts5_idf(10, 9) == 1e-6
        ```
    """
    value = math.log((rows - held + 0.5) / (held + 0.5))
    return value if value > 0 else _MIN_IDF


@dataclass(frozen=True)
class CorpusStats:
    """What BM25 needs to know about the corpus and the query's terms."""

    rows: int
    """How many documents the index holds."""
    tokens: int
    """How many terms they hold in all."""
    document_frequency: Mapping[str, int]
    """For each query term, how many documents hold it."""

    def idf(self, term: str) -> float:
        """FTS5's inverse document frequency of ``term`` (1e-6 where it would be 0 or less)."""
        return fts5_idf(self.rows, self.document_frequency.get(term, 0))


def bm25_score(terms: Sequence[str], document_terms: str, stats: CorpusStats) -> float:
    """The BM25 score of a document for ``terms`` (higher is better; 0.0: no term held).

    Args:
        terms: The query's distinct terms.
        document_terms: The document's terms, separated by single spaces, as indexed.
        stats: The corpus statistics.

    Example:
        ```python
        from cogito_lc.stores._fts_ranking import CorpusStats, bm25_score

        stats = CorpusStats(rows=3, tokens=6, document_frequency={"port": 1, "billing": 2})
        assert bm25_score(["port"], "billing port", stats) > bm25_score(
            ["billing"], "billing port", stats
        )
        assert bm25_score(["latency"], "billing port", stats) == 0.0
        ```
    """
    return bm25_scorer(terms, stats)(document_terms)


def bm25_scorer(terms: Sequence[str], stats: CorpusStats) -> Callable[[str], float]:
    """:func:`bm25_score` for many documents: the query's weights are worked out once.

    Example:
        ```python
        from cogito_lc.stores._fts_ranking import CorpusStats, bm25_score, bm25_scorer

        stats = CorpusStats(rows=3, tokens=6, document_frequency={"port": 1, "billing": 2})
        score = bm25_scorer(["port", "billing"], stats)
        assert score("billing port") == bm25_score(["port", "billing"], "billing port", stats)
        ```
    """
    weights = [(term, stats.idf(term)) for term in terms]
    average = stats.tokens / stats.rows if stats.rows else 0.0

    def score(document_terms: str) -> float:
        tokens = document_terms.split()
        norm = K1 * (1 - B + B * len(tokens) / average) if average else K1
        total = 0.0
        for term, idf in weights:
            held = tokens.count(term)
            if held:
                total += idf * ((held * (K1 + 1)) / (held + norm))
        return total

    return score


def rarest_terms(
    document_frequency: Mapping[str, int], budget: int, *, at_least_one: bool = True
) -> list[str]:
    """The rarest terms whose postings fit ``budget`` (at least the rarest one, unless told not).

    Example:
        ```python
        from cogito_lc.stores._fts_ranking import rarest_terms

        frequency = {"what": 9000, "caroline": 7000, "pottery": 800, "workshop": 300}
        assert rarest_terms(frequency, 5000) == ["workshop", "pottery"]
        assert rarest_terms(frequency, 10) == ["workshop"]
        assert rarest_terms(frequency, 10, at_least_one=False) == []
        ```
    """
    chosen: list[str] = []
    postings = 0
    for term in sorted(document_frequency, key=document_frequency.__getitem__):
        held = document_frequency[term]
        if (chosen or not at_least_one) and postings + held > budget:
            break
        chosen.append(term)
        postings += held
    return chosen
