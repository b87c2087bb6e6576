"""The embedding model's dimension against a stored collection's: checked now, or on first use.

Opening a store over an existing collection or table checks that the model gives
vectors of the size it holds. Embeddings built on their first use (such as
:class:`~cogito_lc.embeddings.LazyEmbeddings`) are not built for that: the store
is given embeddings that run the check on the model at their first use, so a
process that never embeds (a count, a listing, a deletion) never loads the model,
and a model that does not fit one store still serves the others.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Protocol, runtime_checkable

from langchain_core.embeddings import Embeddings

__all__ = ["BuiltOnFirstUse", "checked_embeddings", "dimension_mismatch", "probe_dimension"]

PROBE = "dimension probe"
"""The text embedded to learn a model's dimension."""


@runtime_checkable
class BuiltOnFirstUse(Protocol):
    """Embeddings built on their first use, which run checks on the model they build."""

    @property
    def loaded(self) -> bool:
        """Whether the model has been built."""
        ...

    def checked(self, check: Callable[[Embeddings], None]) -> Embeddings:
        """These embeddings, given out only once ``check`` has passed on the built model."""
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


def checked_embeddings(embeddings: Embeddings, size: int, holder: str) -> Embeddings:
    """``embeddings``, checked to give vectors of ``size``: the embeddings a store should use.

    A built model is checked now and given back. Embeddings built on first use
    are not built for it: the store gets embeddings that check the model at
    their first use, and raise at every use while it does not fit.

    Args:
        embeddings: The embedding model.
        size: The dimension the stored vectors have.
        holder: What holds them, for the error (``"the Qdrant collection 'memories'"``).

    Raises:
        ValueError: When the model is built and gives vectors of another size; for
            embeddings built on first use, each use of the returned ones raises it.
    """
    check = partial(_check_size, size=size, holder=holder)
    if isinstance(embeddings, BuiltOnFirstUse) and not embeddings.loaded:
        return embeddings.checked(check)
    check(embeddings)
    return embeddings


def _check_size(model: Embeddings, *, size: int, holder: str) -> None:
    dimension = probe_dimension(model)
    if dimension != size:
        raise ValueError(dimension_mismatch(holder, size, dimension))
