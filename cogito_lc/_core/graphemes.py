"""Cutting text to a length in characters without splitting what a reader sees as one."""

from __future__ import annotations

import unicodedata

__all__ = ["cut"]

_ZWJ = "\u200d"
_ZWNJ = "\u200c"
_VIRAMA = 9
"""The canonical combining class of viramas, which join consonants into one conjunct."""
_REGIONAL_INDICATORS = range(0x1F1E6, 0x1F200)
_EXTENDERS = (
    range(0xFE00, 0xFE10),  # variation selectors (emoji or text presentation)
    range(0x1F3FB, 0x1F400),  # emoji skin-tone modifiers
    range(0xE0020, 0xE0080),  # tags (subdivision flags)
    range(0x1160, 0x1200),  # conjoining Hangul vowels and final consonants
    range(0xD7B0, 0xD800),
    range(0x0E33, 0x0E34),  # Thai sara am, a spacing mark though a letter (Lo)
    range(0x0EB3, 0x0EB4),  # Lao sign am, likewise
)
_MARKS = frozenset({"Mn", "Mc", "Me"})


def cut(text: str, limit: int) -> str:
    r"""The longest start of ``text`` within ``limit`` characters that ends between clusters.

    ``limit`` counts characters (code points), as ``len`` does. A cut never leaves half
    of what shows as one character: an emoji ZWJ sequence, a flag (a pair of regional
    indicators), a letter with combining marks, an Indic conjunct. It approximates
    Unicode's extended grapheme clusters, erring towards cutting earlier. A single
    cluster longer than ``limit`` gives ``""``.

    Example:
        ```python
        from cogito_lc._core.graphemes import cut

        assert cut("Cafe\u0301 au lait", 4) == "Caf"
        assert cut("\U0001f1e9\U0001f1ea\U0001f1eb\U0001f1f7", 3) == "\U0001f1e9\U0001f1ea"
        ```
    """
    if len(text) <= limit:
        return text
    for end in range(max(limit, 0), 0, -1):
        if _is_boundary(text, end):
            return text[:end]
    return ""


def _is_boundary(text: str, index: int) -> bool:
    """Whether a cut between ``text[index - 1]`` and ``text[index]`` keeps clusters whole."""
    before, after = text[index - 1], text[index]
    if _extends(after) or before == _ZWJ or (before, after) == ("\r", "\n"):
        return False
    if unicodedata.combining(before) == _VIRAMA and unicodedata.category(after) == "Lo":
        return False
    if _is_regional_indicator(before) and _is_regional_indicator(after):
        return _regional_indicators_ending_at(text, index) % 2 == 0
    return True


def _extends(char: str) -> bool:
    """Whether ``char`` belongs to the cluster before it (marks, joiners, modifiers)."""
    if char in {_ZWJ, _ZWNJ} or unicodedata.category(char) in _MARKS:
        return True
    code = ord(char)
    return any(code in extender for extender in _EXTENDERS)


def _is_regional_indicator(char: str) -> bool:
    return ord(char) in _REGIONAL_INDICATORS


def _regional_indicators_ending_at(text: str, index: int) -> int:
    """How many regional indicators run up to ``index``: flags pair them from the start."""
    start = index
    while start > 0 and _is_regional_indicator(text[start - 1]):
        start -= 1
    return index - start
