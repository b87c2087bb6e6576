"""The torch threads a short embedding call runs on."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["LATENCY_TEXTS", "leaving_a_core"]

LATENCY_TEXTS = 8
"""Calls embedding at most this many texts (a query and its sub-queries, a memory being
stored) run on one torch thread fewer than the calling thread's setting, at least one."""


@contextmanager
def leaving_a_core(texts: int) -> Iterator[None]:
    """Run a call embedding ``texts`` texts on one torch thread fewer, when it is short.

    A recall's database work (its lexical search, another request's searches)
    runs while its query is embedded: on a machine the database shares, a forward
    pass spread over every core waits on the one the database took. Torch's
    thread count belongs to the calling thread and is put back after the call;
    calls of more than :data:`LATENCY_TEXTS` texts use every thread.

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
    import torch

    before = torch.get_num_threads()
    if texts > LATENCY_TEXTS or before <= 1:
        yield
        return
    torch.set_num_threads(before - 1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
