"""The embedding model's dimension against a stored collection's: checked now, or on first use.

Opening a store over an existing collection or table checks that the model gives
vectors of the size it holds. Embeddings built on their first use (such as
:class:`~cogito_lc.embeddings.LazyEmbeddings`) are not built for that: the check
runs when they are, before their first vector is used, so a process that never
embeds (a count, a listing, a deletion) never loads the model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from langchain_core.embeddings import Embeddings

__all__ = ["BuiltOnFirstUse", "check_dimension", "dimension_mismatch", "probe_dimension"]

PROBE = "dimension probe"
"""The text embedded to learn a model's dimension."""


@runtime_checkable
class BuiltOnFirstUse(Protocol):
    """Embeddings built on their first use, which run checks on the model they build."""

    @property
    def loaded(self) -> bool:
        """Whether the model has been built."""
        ...

    def check_when_built(self, check: Callable[[Embeddings], None]) -> None:
        """Run ``check`` on the model before its first use (now, if it is built)."""
        ...


def probe_dimension(embeddings: Embeddings) -> int:
    """The length of the model's vectors (builds a model built on first use)."""
    return len(embeddings.embed_query(PROBE))


def dimension_mismatch(holder: str, held: int, dimension: int) -> str:
    """The error message for a model whose vectors do not fit the stored ones."""
    return (
        f"{holder} holds vectors of size {held}, but the embedding model gives {dimension}: "
        "use the model it was made with, or another collection name."
    )


def check_dimension(embeddings: Embeddings, size: int, holder: str) -> bool:
    """Check that ``embeddings`` give vectors of ``size``; True when the check waits for them.

    Args:
        embeddings: The embedding model.
        size: The dimension the stored vectors have.
        holder: What holds them, for the error (``"the Qdrant collection 'memories'"``).

    Raises:
        ValueError: When the model is built and gives vectors of another size;
            on first use, the model's first embedding call raises it instead.
    """

    def check(model: Embeddings) -> None:
        dimension = probe_dimension(model)
        if dimension != size:
            raise ValueError(dimension_mismatch(holder, size, dimension))

    if isinstance(embeddings, BuiltOnFirstUse) and not embeddings.loaded:
        embeddings.check_when_built(check)
        return True
    check(embeddings)
    return False
