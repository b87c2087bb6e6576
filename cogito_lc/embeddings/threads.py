"""The torch threads a short embedding call runs on while other work runs beside it."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["LATENCY_TEXTS", "leaving_a_core"]

LATENCY_TEXTS = 8
"""A call embedding at most this many texts (a query and its sub-queries) is short: with
work beside it, it runs on one torch thread fewer than the process's setting."""

_lock = threading.Lock()
_inside = 0
"""Calls inside :func:`leaving_a_core` now."""
_full = 0
"""The thread count the first of them found: the one every call puts back."""


@contextmanager
def leaving_a_core(texts: int) -> Iterator[None]:
    """Run a call embedding ``texts`` texts on one torch thread fewer, when it is short.

    For a forward pass with work running beside it: a recall whose lexical search
    runs in the database while its query is embedded. On a machine the database
    shares, a forward pass spread over every core waits on the core the database
    took. Calls of more than :data:`LATENCY_TEXTS` texts use every thread, and
    without torch loaded nothing changes.

    ``torch.set_num_threads`` sets the calling thread's count and the default a
    thread takes at its first torch call. The count every call puts back is the
    one found when no call was inside, so overlapping calls never lower it for
    good; a thread whose first torch call falls inside a call starts one lower
    until its own next call here.

    Example:
        ```python
        import torch
        from cogito_lc.embeddings.threads import leaving_a_core

        before = torch.get_num_threads()
        with leaving_a_core(1):
            assert torch.get_num_threads() == max(1, before - 1)
        assert torch.get_num_threads() == before
        ```
    """
    torch = sys.modules.get("torch")
    if texts > LATENCY_TEXTS or getattr(torch, "get_num_threads", None) is None:
        yield  # no local model loaded (or torch still importing): nothing to spare
        return
    global _inside, _full  # noqa: PLW0603 - one count for the process, as torch's default
    with _lock:
        if _inside == 0:
            _full = torch.get_num_threads()  # type: ignore[union-attr]
        _inside += 1
        full = _full
    torch.set_num_threads(max(1, full - 1))  # type: ignore[union-attr]
    try:
        yield
    finally:
        with _lock:
            _inside -= 1
            torch.set_num_threads(full)  # type: ignore[union-attr]
