"""Text to pydantic objects with a chat model: ``LlmExtractor[O]`` and ``FactExtractor``.

May import :mod:`cogito_lc.prompts` and :mod:`cogito_lc._core`; knows nothing of
retrievers, memory, the service or the CLI.
"""

from __future__ import annotations

from cogito_lc.extraction.fact_extractor import (
    Fact,
    FactExtractionInput,
    FactExtractor,
    FactExtractorBuilder,
    FactKind,
    FactListOutputParser,
)
from cogito_lc.extraction.llm_extractor import (
    EXTRACTION_EVENT,
    ExtractionMethod,
    ExtractionResult,
    LlmExtractor,
    LlmExtractorBuilder,
    StructuredOutputMode,
)

__all__ = [
    "EXTRACTION_EVENT",
    "ExtractionMethod",
    "ExtractionResult",
    "Fact",
    "FactExtractionInput",
    "FactExtractor",
    "FactExtractorBuilder",
    "FactKind",
    "FactListOutputParser",
    "LlmExtractor",
    "LlmExtractorBuilder",
    "StructuredOutputMode",
]
