"""Values made once per set of live objects in a process, dropped when any of them goes."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["PerObject"]

_T = TypeVar("_T")


class PerObject(Generic[_T]):
    """A registry of values keyed by object identity, held only while the objects live.

    Retrievers built per request over the same store and embeddings (the service,
    a ``MemoryStore``'s ``as_retriever``) share what this gives them. Objects
    without weak references get a fresh value on every call.

    Example:
        ```python
        from cogito_lc.retrievers._per_object import PerObject

        class Owner:
            pass

        registry: PerObject[list[int]] = PerObject()
        owner = Owner()
        first, made = registry.get((owner,), "k", list)
        assert made and registry.get((owner,), "k", list) == (first, False)
        del owner
        assert len(registry) == 0
        ```
    """

    def __init__(self) -> None:
        self._values: dict[Hashable, tuple[tuple[weakref.ref[object], ...], _T]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._values)

    def get(
        self, owners: tuple[object, ...], extra: Hashable, make: Callable[[], _T]
    ) -> tuple[_T, bool]:
        """The value for these ``owners`` and ``extra``, made by ``make`` if there is none.

        Returns:
            The value, and whether this call made it.
        """
        key = (*map(id, owners), extra)
        with self._lock:
            known = self._values.get(key)
            if known is not None and all(
                ref() is owner for ref, owner in zip(known[0], owners, strict=True)
            ):
                return known[1], False
            value = make()
            try:
                refs = tuple(weakref.ref(owner, self._dropper(key)) for owner in owners)
            except TypeError:  # an object without weak references: no sharing
                return value, True
            self._values[key] = (refs, value)
            return value, True

    def _dropper(self, key: Hashable) -> Callable[[weakref.ref[object]], None]:
        def drop(_: weakref.ref[object]) -> None:
            self._values.pop(key, None)

        return drop
