"""Which terms of a vocabulary map occur in memory text: calibration's filter and a forget's."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

__all__ = ["filter_vocab_map", "terms_in_corpus"]

_UNSPACED = re.compile(
    "[\u0e00-\u0eff\u1000-\u109f\u1100-\u11ff\u1780-\u17ff\u3040-\u30ff\u3130-\u318f"
    "\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uffdc"
    "\U00020000-\U0003134f]"
)
"""Scripts written without spaces between words (CJK ideographs, kana, Hangul, Thai,
Lao, Myanmar, Khmer), or with particles joined to them (Korean)."""


def _folded(text: str) -> str:
    """``text`` composed (NFC) and case-folded, so that spellings of one word compare equal."""
    return unicodedata.normalize("NFC", text).casefold()


def _occurs(term: str, corpus: str) -> bool:
    """Whether ``term`` occurs in the folded ``corpus`` (as a word, if its script has them)."""
    folded = _folded(term)
    if _UNSPACED.search(folded):
        return folded in corpus
    return re.search(rf"(?<!\w){re.escape(folded)}(?!\w)", corpus) is not None


def filter_vocab_map(
    raw: dict[str, list[str]], corpus: str, *, max_keys: int = 60, max_terms: int = 8
) -> tuple[dict[str, list[str]], list[str]]:
    """Keep only terms that occur in ``corpus`` (as words); at most ``max_keys`` keys.

    Terms and corpus are compared composed (NFC) and case-folded, so ``résumé`` matches
    its decomposed spelling and ``Hauptstraße`` matches ``HAUPTSTRASSE``. A term in a
    script written without spaces between words (Chinese, Japanese, Korean, Thai...)
    only needs to occur in the corpus, not as a word of its own.

    Returns the kept map and the dropped terms.

    Example:
        ```python
        from cogito_lc.memory.calibrate import filter_vocab_map

        kept, dropped = filter_vocab_map(
            {"how fast": ["latency", "warp speed"]}, "p95 latency is 250 ms"
        )
        assert kept == {"how fast": ["latency"]}
        assert dropped == ["warp speed"]
        ```
    """
    folded = _folded(corpus)
    kept: dict[str, list[str]] = {}
    dropped: list[str] = []
    for phrase, terms in raw.items():
        key = " ".join(str(phrase).lower().split())
        if not key or len(kept) >= max_keys:
            continue
        good: list[str] = []
        for term in terms:
            clean = " ".join(str(term).split())
            if clean and clean.lower() != key and _occurs(clean, folded):
                if clean not in good:
                    good.append(clean)
            elif clean:
                dropped.append(clean)
        if good:
            kept[key] = good[:max_terms]
    return kept, dropped


def terms_in_corpus(terms: Iterable[str], corpus: str) -> set[str]:
    """The ``terms`` that occur in ``corpus``, matched as :func:`filter_vocab_map` matches them.

    Example:
        ```python
        from cogito_lc.memory.calibrate import terms_in_corpus

        assert terms_in_corpus(["latency", "warp speed"], "p95 latency is 250 ms") == {"latency"}
        ```
    """
    folded = _folded(corpus)
    return {term for term in terms if _occurs(" ".join(term.split()), folded)}
