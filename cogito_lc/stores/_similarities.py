"""Query vectors against every stored vector: one matrix product, on the fastest engine loaded.

numpy's OpenBLAS multiplies a few query vectors by a tall matrix of stored rows
(``queries @ matrix.T``) at about a third of the speed of one query vector per
row read: at 100,000 rows of 384 floats, four query vectors take 32 ms on one
thread against 14 ms for one. torch's MKL runs the same product (as
``matrix @ queries.T``) at the speed of reading the matrix once: 14 ms on one
thread and 7-10 ms on two, for one to five query vectors (x86 wheels of torch
use MKL; elsewhere torch's own CPU product runs it). torch is loaded whenever the
embedding model is a local one (sentence-transformers); it is not imported here
for the product alone (importing it takes seconds). Without it, while it is still
importing, or when it cannot read numpy arrays, the product runs on numpy, split
by rows (:func:`cogito_lc._core.blas.row_product`).
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import numpy as np
import numpy.typing as npt

from cogito_lc._core.blas import row_product

__all__ = ["similarities"]

logger = logging.getLogger(__name__)


def similarities(queries: npt.NDArray[Any], matrix: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``queries @ matrix.T`` as float32, one row per query vector.

    Args:
        queries: The query vectors, one per row.
        matrix: The stored vectors, one per row (read, never written).

    Example:
        ```python
        import numpy as np

        from cogito_lc.stores._similarities import similarities

        matrix = np.eye(3, dtype=np.float32)
        queries = np.asarray([[0.0, 1.0, 0.0]], dtype=np.float32)
        assert similarities(queries, matrix).tolist() == [[0.0, 1.0, 0.0]]
        ```
    """
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    torch = sys.modules.get("torch")
    if torch is not None and _torch_can_read(matrix):
        try:
            return _torch_product(torch, queries, matrix)
        except (AttributeError, RuntimeError, TypeError) as exc:  # still importing, or no numpy
            logger.debug("torch cannot run the product (%s): numpy runs it", exc)
    return np.asarray(row_product(queries, matrix), dtype=np.float32)


def _torch_product(
    torch: Any, queries: npt.NDArray[np.float32], matrix: npt.NDArray[Any]
) -> npt.NDArray[Any]:
    # MKL runs a product with one column on one thread; two columns run on all.
    asked = np.vstack([queries, queries]) if len(queries) == 1 else queries
    with torch.inference_mode():
        scores = torch.from_numpy(matrix) @ torch.from_numpy(asked).T
    return np.ascontiguousarray(scores.numpy()[:, : len(queries)].T)


def _torch_can_read(matrix: npt.NDArray[Any]) -> bool:
    """Whether torch can share the matrix's memory as is (it warns on read-only arrays)."""
    return (
        matrix.dtype == np.float32
        and matrix.ndim == 2
        and matrix.flags.c_contiguous
        and matrix.flags.writeable
    )
