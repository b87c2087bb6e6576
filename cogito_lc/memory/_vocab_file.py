"""Reading and writing the vocabulary map kept in a store's state."""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cogito_lc.memory.state import StateStore

__all__ = ["VOCAB_FILE", "load_vocab_map", "save_vocab_map"]

logger = logging.getLogger(__name__)

VOCAB_FILE = "vocab_map.json"


def load_vocab_map(state: StateStore | None) -> dict[str, list[str]] | None:
    """The saved vocabulary map in ``state``, or None when there is none or it is invalid."""
    if state is None:
        return None
    try:
        text = state.read(VOCAB_FILE)
    except OSError as exc:
        logger.warning("ignoring unreadable vocabulary map %s: %s", state.location(VOCAB_FILE), exc)
        return None
    if text is None:
        return None
    try:
        raw = json.loads(text)
    except ValueError as exc:
        logger.warning("ignoring unreadable vocabulary map %s: %s", state.location(VOCAB_FILE), exc)
        return None
    if not isinstance(raw, dict):
        logger.warning("ignoring vocabulary map %s: not a JSON object", state.location(VOCAB_FILE))
        return None
    return {
        str(key): [str(term) for term in terms]
        for key, terms in raw.items()
        if isinstance(terms, list)
    }


def save_vocab_map(state: StateStore, vocab_map: dict[str, list[str]]) -> str:
    """Write ``vocab_map`` atomically into ``state``; returns where it lives."""
    state.write({VOCAB_FILE: json.dumps(vocab_map, indent=2, sort_keys=True) + "\n"})
    return state.location(VOCAB_FILE)
