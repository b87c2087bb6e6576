"""Query decomposition for zero-LLM recall.

A query is turned into a short list of sub-queries: the original query, its
stop-word-stripped phrase, vocabulary expansions, adjacent bigrams and trigrams
of its content words, and its longer single tokens. Each sub-query is searched
on its own and the ranked runs are fused, so a memory that matches only part
of the query still reaches the candidate pool.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from cogito_lc._core.text import STOP_WORDS, tokenize, word_spans

__all__ = ["STOP_WORDS", "Decomposition", "decompose_query", "tokenize", "word_spans"]


_MIN_SINGLE_TOKEN_LEN = 4
_MAX_QUERY_TOKENS = 512


@dataclass(frozen=True)
class Decomposition:
    """The sub-queries of one query, in search order.

    Attributes:
        queries: The de-duplicated sub-queries; the first is always the
            original query (whitespace-normalised).
        vocab_applied: Whether any vocabulary-map expansion was added.
    """

    queries: tuple[str, ...]
    vocab_applied: bool

    @property
    def method(self) -> str:
        """The method tag for this decomposition, e.g. ``decompose_6_v``."""
        suffix = "_v" if self.vocab_applied else ""
        return f"decompose_{len(self.queries)}{suffix}"


def _content_tokens(tokens: Iterable[str]) -> list[str]:
    return [tok for tok in tokens if tok not in STOP_WORDS and tok.split("'")[0] not in STOP_WORDS]


def _ngrams(tokens: Sequence[str], n: int) -> Iterator[str]:
    for start in range(len(tokens) - n + 1):
        yield " ".join(tokens[start : start + n])


def _vocab_expansions(
    normalised: str, tokens: Sequence[str], vocab_map: Mapping[str, Sequence[str]]
) -> Iterator[str]:
    token_set = set(tokens)
    bigrams = set(_ngrams(tokens, 2))
    padded = f" {' '.join(tokens)} "
    for key, terms in vocab_map.items():
        plain = " ".join(tokenize(key))
        if not plain or not terms:
            continue
        matched = (
            plain in token_set
            or plain in bigrams
            or f" {plain} " in padded
            or (len(plain) >= _MIN_SINGLE_TOKEN_LEN and plain in normalised)
        )
        if matched:
            yield " ".join(str(term).strip() for term in terms if str(term).strip())


def decompose_query(
    query: str,
    *,
    vocab_map: Mapping[str, Sequence[str]] | None = None,
    max_subqueries: int = 8,
) -> Decomposition:
    """Split a query into the sub-queries zero-LLM recall searches with.

    In order: the original query; the stop-word-stripped phrase; one expansion
    per ``vocab_map`` key found in the query (matched as a token, a bigram or a
    substring); adjacent bigrams and trigrams of the content words; content
    tokens of four or more characters. Duplicates are dropped and the list is
    cut to ``max_subqueries``. The function is pure: same input, same output.

    Args:
        query: The user's query.
        vocab_map: Optional plain-word to domain-term map, for example
            ``{"how fast": ["latency", "throughput"]}``.
        max_subqueries: The most sub-queries returned, the original included.

    Returns:
        The sub-queries and whether vocabulary expansion applied.

    Raises:
        TypeError: If ``query`` is not a string.
        ValueError: If ``query`` is blank or ``max_subqueries`` is below 1.

    Example:
        ```python
        from cogito_lc.retrievers._decompose import decompose_query

        decomposition = decompose_query("how long do auth tokens last")
        decomposition.queries[:3]
        # ('how long do auth tokens last', 'long auth tokens last', 'long auth')
        assert decomposition.method == f"decompose_{len(decomposition.queries)}"
        ```
    """
    if not isinstance(query, str):
        msg = f"query must be a str, got {type(query).__name__}; pass the query text."
        raise TypeError(msg)
    normalised = " ".join(query.split())
    if not normalised:
        msg = "query is empty or whitespace; pass a non-empty query string."
        raise ValueError(msg)
    if max_subqueries < 1:
        msg = f"max_subqueries must be >= 1, got {max_subqueries}."
        raise ValueError(msg)

    tokens = tokenize(normalised)[:_MAX_QUERY_TOKENS]
    content = _content_tokens(tokens)
    expansions = list(_vocab_expansions(normalised.lower(), tokens, vocab_map or {}))
    candidates: list[str] = [normalised, " ".join(content), *expansions]
    candidates.extend(_ngrams(content, 2))
    candidates.extend(_ngrams(content, 3))
    candidates.extend(tok for tok in content if len(tok) >= _MIN_SINGLE_TOKEN_LEN)

    queries: list[str] = []
    seen: set[str] = set()
    for candidate in candidates:
        key = candidate.lower()
        if candidate and key not in seen:
            seen.add(key)
            queries.append(candidate)
        if len(queries) == max_subqueries:
            break
    vocab_applied = any(exp.lower() in {q.lower() for q in queries} for exp in expansions)
    return Decomposition(queries=tuple(queries), vocab_applied=vocab_applied)
