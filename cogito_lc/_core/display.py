r"""Showing stored text safely: control characters made visible, never interpreted.

Memories are stored and returned verbatim, control characters included (the
fidelity rule). Where they are *shown* — the CLI's tables and messages, log
lines — a NUL, an ANSI escape (``"\x1b[31m"``) or a bidi override
(``"\u202e"``) would be acted on by the terminal or the log viewer: recolour
or clear the screen, forge a log line, reverse the text around it. There they
pass through :func:`escape_controls` first and appear as the escapes a Python
literal would use.

Example:
    ```python
    from cogito_lc._core.display import escape_controls

    assert escape_controls("red \x1b[31malert") == "red \\x1b[31malert"
    assert escape_controls("invoice\u202egnp.exe") == "invoice\\u202egnp.exe"
    assert escape_controls("café, 東京, 👍🏽") == "café, 東京, 👍🏽"
    ```
"""

from __future__ import annotations

__all__ = ["ANSWERED", "escape_controls"]

ANSWERED = "cogito_answered"
"""The attribute of a log record whose message an HTTP answer carries as well
(``logger.error(..., extra={ANSWERED: True})``): a client that shows the answer, as
the CLI running the service in process does, leaves the record out and shows it once."""

_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}

_BIDI_AND_SEPARATORS = (
    "\u061c"  # arabic letter mark
    "\u200e\u200f"  # left-to-right and right-to-left marks
    "\u2028\u2029"  # line and paragraph separators (line breaks to a log viewer)
    "\u202a\u202b\u202c\u202d\u202e"  # embeddings, pop, overrides
    "\u2066\u2067\u2068\u2069"  # isolates
)


def _escape(character: str) -> str:
    if character in _NAMED:
        return _NAMED[character]
    code = ord(character)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


_CONTROLS = [chr(code) for code in (*range(0x20), *range(0x7F, 0xA0))]
_TABLE = {ord(c): _escape(c) for c in (*_CONTROLS, *_BIDI_AND_SEPARATORS)}


def escape_controls(text: str) -> str:
    r"""``text`` with its control characters written as visible escapes.

    Escaped: the C0 controls (NUL to US, tab and newline included, as ``\t``
    and ``\n``), DEL and the C1 controls (``\x1b``, ``\x9b``), the bidi marks,
    embeddings, overrides and isolates (``\u202e``) and the line and paragraph
    separators. Everything else, other scripts and emoji included, is kept. A
    backslash already in the text is kept as is: the output is for people to
    read, not to parse back (the API returns the verbatim text).

    Args:
        text: Text to show, e.g. a memory, an id or a query.

    Returns:
        The text, safe to print to a terminal or write into a log line.

    Example:
        ```python
        from cogito_lc._core.display import escape_controls

        assert escape_controls("a\x00b\nc") == "a\\x00b\\nc"
        ```
    """
    return text.translate(_TABLE)
