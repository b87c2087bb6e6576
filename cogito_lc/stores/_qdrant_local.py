"""Nearest points of Qdrant's local mode: every query vector in one matrix product.

Local mode ranks each query vector on its own: it normalises every stored vector
again (``qdrant_client.local.distances.cosine_similarity``) and checks a filter on
every point again, in Python, for each one. At 10,000 points that is about 10 ms
a query vector unfiltered, and a recall searches four. Its vectors are unit length
on a cosine collection (normalised on upsert; those read back from disk when a
collection opens are stored as given, in float64, and are made unit float32 here
once), so one matrix product ranks every query vector at once, and a filter is
checked once per point. The points a filter keeps are remembered per filter and
collection: local mode replaces a point's payload object on every write, so only
points whose payload object changed (or that are new) are checked again.

This reads local mode's arrays, which are not a public API: anything not as
expected (a server, another distance, a sparse or multi vector, a renamed
attribute) gives None, and the caller searches through the client instead.
"""

from __future__ import annotations

import logging
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from cogito_lc.stores._similarities import similarities
from cogito_lc.stores.base import unit_rows

__all__ = ["Ranked", "local_count", "local_nearest", "prepare"]

logger = logging.getLogger(__name__)

Ranked = list[tuple[Any, float]]
"""Point ids and their cosine similarity, nearest first."""


def local_nearest(
    client: Any,
    collection: str,
    vector_name: str,
    queries: Sequence[Any],
    ks: Sequence[int],
    *,
    keep: Callable[[Mapping[str, Any]], bool] | None = None,
    keep_key: str | None = None,
) -> list[Ranked] | None:
    """The ``ks[i]`` nearest live points of ``queries[i]``, or None (search with the client).

    Local mode has no locks of its own: call this holding the lock of the
    adapter's wrapper of the client, as long as the points found are read.

    Args:
        client: A ``QdrantClient`` (or the adapter's locked wrapper of one).
        collection: The collection name.
        vector_name: The dense vector's name (``""`` for the unnamed one).
        queries: The query vectors.
        ks: How many points each query wants.
        keep: Which points may be found, by payload: checked once per point for
            all the query vectors (local mode checks its filter again for each).
        keep_key: What ``keep`` tests, as text (the filter, serialised): the points
            it keeps are remembered under it, and only payloads written since are
            checked again. None checks every point.
    """
    arrays = _cosine_arrays(client, collection, vector_name, keep, keep_key)
    if arrays is None:
        return None
    matrix, alive, ids = arrays
    if not len(queries):
        return []
    vectors = np.asarray(queries, dtype=np.float32)
    if np.isnan(vectors).any():
        msg = "a query vector holds NaN: the embedding model gave no usable vector."
        raise ValueError(msg)
    scores = similarities(unit_rows(vectors), matrix)
    scores[:, ~alive] = -np.inf
    return [_top(row, k, ids) for row, k in zip(scores, ks, strict=True)]


def prepare(
    client: Any,
    collection: str,
    vector_name: str,
    *,
    keep: Callable[[Mapping[str, Any]], bool] | None = None,
    keep_key: str | None = None,
) -> bool:
    """Ready what the first :func:`local_nearest` with ``keep_key`` would (False: not local).

    A collection read from disk has its vectors made unit float32 (about 0.7 s per
    100,000 points), and the points ``keep`` accepts are found and remembered.
    """
    return _cosine_arrays(client, collection, vector_name, keep, keep_key) is not None


def local_count(
    client: Any,
    collection: str,
    *,
    keep: Callable[[Mapping[str, Any]], bool],
    keep_key: str,
) -> int | None:
    """How many live points ``keep`` accepts, or None (count with the client).

    Local mode checks a count's filter on every point, in Python (about a second
    per 100,000 points); here only payloads written since the last count with the
    same ``keep_key`` are checked. Call it holding the client wrapper's lock.
    """
    try:
        local = client._client.collections[collection]
        count = len(local.payload)
        deleted = np.asarray(local.deleted[:count], dtype=bool)
        payloads = local.payload[:count]
    except (AttributeError, KeyError, TypeError) as exc:
        logger.debug("Qdrant local mode not as expected (%s): counting through the client", exc)
        return None
    if len(deleted) < count:
        return None
    return int((~deleted & _kept(local, payloads, keep, keep_key)).sum())


def _cosine_arrays(
    client: Any,
    collection: str,
    vector_name: str,
    keep: Callable[[Mapping[str, Any]], bool] | None,
    keep_key: str | None = None,
) -> tuple[npt.NDArray[Any], npt.NDArray[np.bool_], list[Any]] | None:
    """The stored vectors, the mask of live points ``keep`` accepts, and the point ids.

    None when the collection is not as expected.
    """
    from qdrant_client import models

    try:
        local = client._client.collections[collection]
        params = local.config.vectors
        params = params.get(vector_name) if isinstance(params, dict) else params
        if params is None or params.distance != models.Distance.COSINE:
            return None
        count = len(local.payload)
        _unit_once(local, vector_name)
        matrix = local.vectors[vector_name][:count]
        deleted = np.asarray(local.deleted[:count], dtype=bool) | np.asarray(
            local.deleted_per_vector[vector_name][:count], dtype=bool
        )  # 0/1 integers in local mode
        ids = local.ids_inv[:count]
        payloads = local.payload[:count]
    except (AttributeError, KeyError, TypeError) as exc:
        logger.debug("Qdrant local mode not as expected (%s): searching through the client", exc)
        return None
    if matrix.ndim != 2 or len(ids) < count:
        return None
    alive = ~deleted
    if keep is not None:
        alive &= _kept(local, payloads, keep, keep_key)
    return matrix, alive, ids


@dataclass
class _KeptPoints:
    """Which points a filter kept, and the payload objects it was checked on."""

    payloads: list[Any]
    """The payloads checked (held, so that no new payload can take their ``id``)."""
    identities: npt.NDArray[np.intp]
    """``id()`` of each payload checked."""
    kept: npt.NDArray[np.bool_]


_KEPT: weakref.WeakKeyDictionary[Any, OrderedDict[str, _KeptPoints]] = weakref.WeakKeyDictionary()
"""Per open local collection, the points each recent filter kept, least recent first."""

FILTERS_REMEMBERED = 8
"""How many filters' kept points are remembered per collection (about 17 bytes a point each)."""


def _kept(
    local: Any,
    payloads: list[Any],
    keep: Callable[[Mapping[str, Any]], bool],
    keep_key: str | None,
) -> npt.NDArray[np.bool_]:
    """The mask of ``payloads`` ``keep`` accepts, checking only payloads new since last time."""
    count = len(payloads)
    if keep_key is None:
        return np.fromiter((keep(payload) for payload in payloads), bool, count)
    identities = np.fromiter(map(id, payloads), np.intp, count)
    remembered = _KEPT.setdefault(local, OrderedDict())
    held = remembered.pop(keep_key, None)
    if held is None or len(held.identities) > count:
        kept = np.fromiter((keep(payload) for payload in payloads), bool, count)
    else:
        known = len(held.identities)
        kept = np.empty(count, dtype=bool)
        kept[:known] = held.kept
        written = np.flatnonzero(identities[:known] != held.identities)
        for index in [*written.tolist(), *range(known, count)]:
            kept[index] = keep(payloads[index])
    remembered[keep_key] = _KeptPoints(payloads, identities, kept)
    while len(remembered) > FILTERS_REMEMBERED:
        remembered.popitem(last=False)
    return np.array(kept)


_UNIT: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()
"""The vector names of each open local collection whose stored vectors are unit float32."""


def _unit_once(local: Any, vector_name: str) -> None:
    """Normalise the vectors a collection read from disk, once, as float32.

    Local mode keeps the vectors it reads from disk as given, in float64 (those
    upserted since it opened are unit float32); ranking reads every stored
    vector, so float64 doubles the memory each search reads. They become what a
    collection written in this process holds.
    """
    done = _UNIT.setdefault(local, set())
    if vector_name not in done:
        local.vectors[vector_name] = unit_rows(local.vectors[vector_name])
        done.add(vector_name)


def _top(row: npt.NDArray[Any], k: int, ids: list[Any]) -> Ranked:
    live = int(np.isfinite(row).sum())
    take = min(k, live)
    if take <= 0:
        return []
    if take < len(row):  # every point tied with the last one taken, so ties break below
        candidates = np.flatnonzero(row >= np.partition(row, len(row) - take)[len(row) - take])
    else:
        candidates = np.arange(len(row))
    order = candidates[np.lexsort((-candidates, -row[candidates]))][:take]  # ties: newest first
    return [(ids[i], float(row[i])) for i in order]
