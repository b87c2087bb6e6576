"""What the tests of both pointer components share."""

from __future__ import annotations

from collections.abc import Sequence

import httpx
from langchain_core.documents import Document

from cogito_lc import METADATA_KEY
from cogito_lc.document_compressors.pointer_filter import FILTER_METHOD_KEY, FILTER_RANK_KEY
from tests.unit_tests.fakes import StatusError

MODEL_FAILURES: list[tuple[Exception, str]] = [
    (ConnectionRefusedError("refused"), "fallback_unreachable"),
    (httpx.ConnectError("refused"), "fallback_unreachable"),
    (StatusError(503), "fallback_unreachable"),
    (StatusError(429), "fallback_unreachable"),
    (TimeoutError("slow"), "fallback_timeout"),
    (httpx.ReadTimeout("slow"), "fallback_timeout"),
    (StatusError(401), "fallback_error"),
    (ValueError("client bug"), "fallback_error"),
    (RuntimeError("anything"), "fallback_error"),
]
"""Errors a model call may raise, each with the fallback tag a component must report."""


def untagged(documents: Sequence[Document]) -> list[Document]:
    """The returned documents without the filter's tag, to compare with the ones given."""
    plain = []
    for document in documents:
        metadata = dict(document.metadata)
        details = metadata.get(METADATA_KEY)
        if isinstance(details, dict):
            rest = {
                k: v for k, v in details.items() if k not in (FILTER_METHOD_KEY, FILTER_RANK_KEY)
            }
            if rest:
                metadata[METADATA_KEY] = rest
            else:
                del metadata[METADATA_KEY]
        plain.append(document.model_copy(update={"metadata": metadata}))
    return plain
