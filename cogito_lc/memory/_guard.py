"""One write lock per vector store object, shared by every MemoryStore over it."""

from __future__ import annotations

import threading
import weakref
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


_GUARDS: weakref.WeakKeyDictionary[Any, StoreGuard] = weakref.WeakKeyDictionary()
_GUARDS_LOCK = threading.Lock()


def guard_for(store: Any) -> StoreGuard:
    """The guard of ``store``: the same object for every MemoryStore over it.

    A store that cannot be weakly referenced gets a guard of its own per call.
    """
    with _GUARDS_LOCK:
        try:
            guard = _GUARDS.get(store)
            if guard is None:
                guard = _GUARDS[store] = StoreGuard()
        except TypeError:
            return StoreGuard()
    return guard
