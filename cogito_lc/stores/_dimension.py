"""The embedding model against a stored collection's vectors: checked now, or on first use.

Opening a store over an existing collection or table checks that the model gives
vectors of the size it holds and, given one stored memory, that the model embeds
its text as it was embedded (another model of the same size would mix two
models' vectors, and recall would rank them as noise). Embeddings built on their first use (such as
:class:`~cogito_lc.embeddings.LazyEmbeddings`) are not built for that: the store
is given embeddings that run the check on the model at their first use, so a
process that never embeds (a count, a listing, a deletion) never loads the model,
and a model that does not fit one store still serves the others.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Protocol, runtime_checkable

import numpy as np
from langchain_core.embeddings import Embeddings

from cogito_lc.stores.base import cosine_scores

__all__ = [
    "BuiltOnFirstUse",
    "StoredVector",
    "checked_embeddings",
    "dimension_mismatch",
    "probe_dimension",
]

PROBE = "dimension probe"
"""The text embedded to learn a model's dimension."""

SAME_MODEL = 0.4
"""The least cosine between a stored memory's vector and the model's for its text.

The model a memory was embedded with gives its text a vector at cosine 0.99 or
more (1 but for float rounding); another model's vectors are unrelated to it
(cosine near 0), even at the same size. The margin below the model's own
admits vectors derived from it, such as the scale benchmark's pool (0.67 at least).
"""


@dataclass(frozen=True)
class StoredVector:
    """One stored memory: its text and the vector it was stored with."""

    text: str
    vector: Sequence[float]


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


def model_mismatch(holder: str, similarity: float) -> str:
    """The error message for a model of the right size that embeds stored texts otherwise."""
    return (
        f"{holder} holds vectors made by another embedding model of the same size (a stored "
        f"memory's vector and the model's vector for its text have cosine {similarity:.2f}): "
        "use the model it was made with, or another collection name."
    )


def checked_embeddings(
    embeddings: Embeddings, size: int, holder: str, sample: StoredVector | None = None
) -> Embeddings:
    """``embeddings``, checked to fit the stored vectors: the embeddings a store should use.

    The model must give vectors of ``size``; given ``sample``, it must also embed
    the sample's text close to its stored vector (see :data:`SAME_MODEL`). A
    built model is checked now and given back. Embeddings built on first use
    are not built for it: the store gets embeddings that check the model at
    their first use, and raise at every use while it does not fit.

    Args:
        embeddings: The embedding model.
        size: The dimension the stored vectors have.
        holder: What holds them, for the error (``"the Qdrant collection 'memories'"``).
        sample: One stored memory with text, if the store holds one.

    Raises:
        ValueError: When the model is built and gives vectors of another size, or
            embeds the sample far from its stored vector; for embeddings built on
            first use, each use of the returned ones raises it.
    """
    check = partial(_check_fit, size=size, holder=holder, sample=sample)
    if isinstance(embeddings, BuiltOnFirstUse) and not embeddings.loaded:
        return embeddings.checked(check)
    check(embeddings)
    return embeddings


def _check_fit(model: Embeddings, *, size: int, holder: str, sample: StoredVector | None) -> None:
    if sample is None or not sample.text.strip() or len(sample.vector) != size:
        dimension = probe_dimension(model)
        if dimension != size:
            raise ValueError(dimension_mismatch(holder, size, dimension))
        return
    fresh = model.embed_documents([sample.text])[0]  # as it was stored: a document
    if len(fresh) != size:
        raise ValueError(dimension_mismatch(holder, size, len(fresh)))
    similarity = float(cosine_scores(np.asarray(fresh), np.asarray([sample.vector]))[0])
    if similarity < SAME_MODEL:
        raise ValueError(model_mismatch(holder, similarity))
