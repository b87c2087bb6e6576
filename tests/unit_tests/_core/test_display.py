"""escape_controls: control characters shown as escapes, everything else kept."""

from __future__ import annotations

import unicodedata

import pytest

from cogito_lc._core.display import escape_controls


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("NUL\x00here", "NUL\\x00here"),
        ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),
        ("\x1b]0;title\x07", "\\x1b]0;title\\x07"),
        ("invoice\u202egnp.exe\u202c", "invoice\\u202egnp.exe\\u202c"),
        ("\u2066isolate\u2069 \u200fmark", "\\u2066isolate\\u2069 \\u200fmark"),
        ("line\nforged\r\tlog", "line\\nforged\\r\\tlog"),
        ("del\x7f c1\x9b", "del\\x7f c1\\x9b"),
        ("para\u2029graph", "para\\u2029graph"),
    ],
)
def test_control_characters_become_visible_escapes(text: str, shown: str) -> None:
    assert escape_controls(text) == shown


def test_printable_text_is_kept_as_is() -> None:
    text = "Café in 東京, Ελλάδα, مرحبا, emoji 👍🏽👩\u200d💻, C:\\path [bold]x[/bold]"
    assert escape_controls(text) == text


def test_no_control_or_format_control_survives() -> None:
    every = "".join(chr(code) for code in range(0x3000))
    shown = escape_controls(every)
    left = {c for c in shown if unicodedata.category(c) == "Cc"}
    assert not left
    assert not set(shown) & set("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
