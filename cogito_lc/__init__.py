"""cogito-lc: long-term memory for LangChain agents that returns what was stored."""

from __future__ import annotations

from importlib import metadata as _importlib_metadata

from cogito_lc.calibrate import CalibrationResult, VocabCalibrator
from cogito_lc.cogito_retriever import RETRIEVAL_EVENT, CogitoRetriever
from cogito_lc.decompose import Decomposition, decompose_query
from cogito_lc.fact_extractor import (
    Fact,
    FactExtractionInput,
    FactExtractor,
    FactExtractorBuilder,
    FactKind,
    FactListOutputParser,
)
from cogito_lc.fusion import document_key, reciprocal_rank_fusion
from cogito_lc.lexical import Bm25Index
from cogito_lc.llm_extractor import (
    EXTRACTION_EVENT,
    ExtractionMethod,
    ExtractionResult,
    LlmExtractor,
    LlmExtractorBuilder,
    StructuredOutputMode,
)
from cogito_lc.memory_store import AddResult, MemoryNotFoundError, MemoryStore
from cogito_lc.metadata import METADATA_KEY
from cogito_lc.pointer_filter import (
    FILTER_EVENT,
    FilterMethod,
    FilterResult,
    PointerFilter,
    PointerFilterBuilder,
    PointerOutputParser,
)
from cogito_lc.prompts import PromptRegistry, PromptVariablesError
from cogito_lc.recall_b import RecallB
from cogito_lc.scope import Scope
from cogito_lc.seed import SeedSummary
from cogito_lc.snapshot import Snapshot, SnapshotBuilder, load_snapshot
from cogito_lc.vector_cache import VectorCache

try:
    __version__ = _importlib_metadata.version("cogito-lc")
except _importlib_metadata.PackageNotFoundError:  # pragma: no cover - uninstalled checkout
    __version__ = "0.0.0"

__all__ = [
    "EXTRACTION_EVENT",
    "FILTER_EVENT",
    "METADATA_KEY",
    "RETRIEVAL_EVENT",
    "AddResult",
    "Bm25Index",
    "CalibrationResult",
    "CogitoRetriever",
    "Decomposition",
    "ExtractionMethod",
    "ExtractionResult",
    "Fact",
    "FactExtractionInput",
    "FactExtractor",
    "FactExtractorBuilder",
    "FactKind",
    "FactListOutputParser",
    "FilterMethod",
    "FilterResult",
    "LlmExtractor",
    "LlmExtractorBuilder",
    "MemoryNotFoundError",
    "MemoryStore",
    "PointerFilter",
    "PointerFilterBuilder",
    "PointerOutputParser",
    "PromptRegistry",
    "PromptVariablesError",
    "RecallB",
    "Scope",
    "SeedSummary",
    "Snapshot",
    "SnapshotBuilder",
    "StructuredOutputMode",
    "VectorCache",
    "VocabCalibrator",
    "__version__",
    "decompose_query",
    "document_key",
    "load_snapshot",
    "reciprocal_rank_fusion",
]
