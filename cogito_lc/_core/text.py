"""Words of English text: the tokenizer and stop words that recall and grouping share."""

from __future__ import annotations

import re

__all__ = ["STOP_WORDS", "tokenize", "word_spans"]

_STOP_WORDS_TEXT = """
a about above after again against all am an and any are aren as at be because been
before being below between both but by can cannot could couldn did didn do does doesn
doing don down during each few for from further had hadn has hasn have haven having he
her here hers herself him himself his how i if in into is isn it its itself just let
like me might more most must my myself no nor not now of off on once only or other ought
our ours ourselves out over own same shall she should shouldn so some such than that the
their theirs them themselves then there these they this those through to too under until
up upon us very was wasn we were weren what whatever when where whether which while who
whom whose why will with won would wouldn you your yours yourself yourselves tell know
ever also get got s t ll re ve d m
"""

STOP_WORDS: frozenset[str] = frozenset(_STOP_WORDS_TEXT.split())
"""English function words and question words dropped from the stripped phrase."""

_APOSTROPHES = "'\u2019"
_TOKEN_RE = re.compile(rf"[^\W_]+(?:[{_APOSTROPHES}][^\W_]+)*", re.UNICODE)


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens of ``text`` (letters and digits, inner apostrophes kept).

    Example:
        ```python
        from cogito_lc._core.text import tokenize

        assert tokenize("What's the p95 latency?") == ["what's", "the", "p95", "latency"]
        ```
    """
    return [word for word, _, _ in word_spans(text)]


def word_spans(text: str) -> list[tuple[str, int, int]]:
    """Each word of ``text`` as (lower-case word, start, end) character offsets into ``text``.

    Example:
        ```python
        from cogito_lc._core.text import word_spans

        assert word_spans("Auth tokens") == [("auth", 0, 4), ("tokens", 5, 11)]
        ```
    """
    return [
        (match.group(0).lower().replace("\u2019", "'"), match.start(), match.end())
        for match in _TOKEN_RE.finditer(text)
    ]
