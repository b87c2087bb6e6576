"""``PointerFilter``: a chat model picks candidates by number; stored documents come back.

With its pointer parsing and call deadlines. May import :mod:`cogito_lc.prompts` and
:mod:`cogito_lc._core`; knows nothing of extraction, retrievers, memory, the service or
the CLI.
"""

from __future__ import annotations

from cogito_lc.document_compressors.pointer_filter import (
    FILTER_EVENT,
    FilterMethod,
    FilterResult,
    PointerFilter,
    PointerFilterBuilder,
    PointerOutputParser,
)

__all__ = [
    "FILTER_EVENT",
    "FilterMethod",
    "FilterResult",
    "PointerFilter",
    "PointerFilterBuilder",
    "PointerOutputParser",
]
