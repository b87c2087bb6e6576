"""The torch threads a short embedding call runs on."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["LATENCY_TEXTS", "leaving_a_core"]

LATENCY_TEXTS = 8
"""A call embedding at most this many texts (a query and its sub-queries) is short: with
work beside it, it runs on one torch thread fewer than the calling thread's setting."""


@contextmanager
def leaving_a_core(texts: int) -> Iterator[None]:
    """Run a call embedding ``texts`` texts on one torch thread fewer, when it is short.

    For a forward pass with work running beside it: a recall whose lexical search
    runs in the database while its query is embedded. On a machine the database
    shares, a forward pass spread over every core waits on the core the database
    took. Torch's thread count belongs to the calling thread and is put back
    after the call; calls of more than :data:`LATENCY_TEXTS` texts use every
    thread, and without torch loaded nothing changes.

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
    if torch is None:  # no local model has been loaded: nothing to spare
        yield
        return
    before = torch.get_num_threads()
    if texts > LATENCY_TEXTS or before <= 1:
        yield
        return
    torch.set_num_threads(before - 1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
