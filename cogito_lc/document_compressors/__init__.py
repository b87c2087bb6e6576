"""``PointerFilter`` and ``SupersessionJudge``: a chat model answers by number only.

``PointerFilter`` picks relevant candidates; ``SupersessionJudge`` says which stored
memories a new memory supersedes or repeats. Both return the stored documents
themselves. With their shared model call, pointer parsing and call deadlines. May import
:mod:`cogito_lc.prompts` and :mod:`cogito_lc._core`; knows nothing of extraction,
retrievers, memory, the service or the CLI.
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
from cogito_lc.document_compressors.supersession import (
    SUPERSESSION_EVENT,
    SupersessionDecision,
    SupersessionInput,
    SupersessionJudge,
    SupersessionJudgeBuilder,
    SupersessionMethod,
)

__all__ = [
    "FILTER_EVENT",
    "SUPERSESSION_EVENT",
    "FilterMethod",
    "FilterResult",
    "PointerFilter",
    "PointerFilterBuilder",
    "PointerOutputParser",
    "SupersessionDecision",
    "SupersessionInput",
    "SupersessionJudge",
    "SupersessionJudgeBuilder",
    "SupersessionMethod",
]
