"""One write lock per vector store object, shared by every MemoryStore over it."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any

__all__ = ["StoreGuard", "guard_for"]


@dataclass
class StoreGuard:
    """What the MemoryStores over one vector store object share in this process."""

    lock: threading.RLock = field(default_factory=threading.RLock)
    """Held by each write, forget and delete, so a check and the write it allows are one step."""
    forgets: int = 0
    """How many forgets and deletes have run (a snapshot built across one is not saved)."""
    held_across_processes: bool = False
    """Whether the thread holding :attr:`lock` also holds the store's lock across processes."""
    placed_views: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    """Views given a state of their own (``data_dir``, ``state``), by its location: their
    scope and state, whose snapshots a forget drops as it does those in the usual place."""
    stores: weakref.WeakSet[Any] = field(default_factory=weakref.WeakSet)
    """The MemoryStores over the vector store object: a forget takes what it removed out
    of the vocabulary maps they and their retrievers recall with."""

    @contextmanager
    def exclusive(
        self, across_processes: Callable[[], AbstractContextManager[object]]
    ) -> Iterator[None]:
        """:attr:`lock`, and the lock ``across_processes()`` gives, taken once however it nests.

        For a check and the write it allows (what a memory supersedes, what a
        forget removes): other processes over the same store wait too.
        """
        with self.lock:
            if self.held_across_processes:
                yield
                return
            with across_processes():
                self.held_across_processes = True
                try:
                    yield
                finally:
                    self.held_across_processes = False


_GUARDS: weakref.WeakKeyDictionary[Any, StoreGuard] = weakref.WeakKeyDictionary()
_GUARDS_LOCK = threading.Lock()


def guard_for(store: Any, *, member: Any = None) -> StoreGuard:
    """The guard of ``store``: the same object for every MemoryStore over it.

    A store that cannot be weakly referenced gets a guard of its own per call.
    ``member`` (a MemoryStore over ``store``) joins the guard's :attr:`~StoreGuard.stores`.
    """
    with _GUARDS_LOCK:
        try:
            guard = _GUARDS.get(store)
            if guard is None:
                guard = _GUARDS[store] = StoreGuard()
        except TypeError:
            guard = StoreGuard()
    if member is not None:
        with guard.lock:  # a forget goes through the stores holding it
            guard.stores.add(member)
    return guard
