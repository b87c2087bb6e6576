"""One lock per local model: Hugging Face fast tokenizers are not safe to share across threads."""

from __future__ import annotations

import threading
import weakref
from typing import Any

__all__ = ["model_lock"]

_locks: weakref.WeakKeyDictionary[Any, threading.RLock] = weakref.WeakKeyDictionary()
_guard = threading.Lock()


def model_lock(model: Any) -> threading.RLock:
    """The lock every use of ``model`` (tokenizer and forward pass) must hold."""
    with _guard:
        lock = _locks.get(model)
        if lock is None:
            lock = threading.RLock()
            _locks[model] = lock
        return lock
