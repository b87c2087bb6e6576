from __future__ import annotations

import pytest

from cogito_lc._core.graphemes import cut


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("plain text", 5, "plain"),
        ("short", 20, "short"),
        ("ab\U0001f1e9\U0001f1ea\U0001f1eb\U0001f1f7", 5, "ab\U0001f1e9\U0001f1ea"),
        ("\U0001f1e9\U0001f1ea" * 3, 5, "\U0001f1e9\U0001f1ea" * 2),
        ("a1\ufe0f\u20e3", 3, "a"),
        ("a\U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f", 6, "a"),
        ("a\u1100\u1161\u11a8", 3, "a"),
        ("line\r\nnext", 5, "line"),
        ("\u00e9te\u0301", 3, "\u00e9t"),
        ("e\u0301\u0301\u0301", 2, ""),
        ("\u0e19\u0e49\u0e33", 2, ""),
        ("a\u0e99\u0eb3", 2, "a"),
    ],
    ids=[
        "ascii",
        "within-limit",
        "flags-pair-from-the-start",
        "three-flags",
        "keycap",
        "tag-flag",
        "conjoining-jamo",
        "crlf",
        "decomposed-accent",
        "one-cluster-over-the-limit",
        "thai-sara-am",
        "lao-sign-am",
    ],
)
def test_cut_ends_between_grapheme_clusters(text: str, limit: int, expected: str) -> None:
    assert cut(text, limit) == expected
