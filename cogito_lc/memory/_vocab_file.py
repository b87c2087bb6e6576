"""Reading and writing the vocabulary map saved next to a store."""

from __future__ import annotations

import json
import logging
from pathlib import Path

__all__ = ["VOCAB_FILE", "load_vocab_map", "save_vocab_map"]

logger = logging.getLogger(__name__)

VOCAB_FILE = "vocab_map.json"


def load_vocab_map(directory: Path | None) -> dict[str, list[str]] | None:
    """The saved vocabulary map in ``directory``, or None when there is none or it is invalid."""
    if directory is None:
        return None
    path = directory / VOCAB_FILE
    if not path.is_file():
        return None
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        logger.warning("ignoring unreadable vocabulary map %s: %s", path, exc)
        return None
    if not isinstance(raw, dict):
        logger.warning("ignoring vocabulary map %s: not a JSON object", path)
        return None
    return {
        str(key): [str(term) for term in terms]
        for key, terms in raw.items()
        if isinstance(terms, list)
    }


def save_vocab_map(directory: Path, vocab_map: dict[str, list[str]]) -> Path:
    """Write ``vocab_map`` atomically into ``directory``; returns the file path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / VOCAB_FILE
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(vocab_map, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path
