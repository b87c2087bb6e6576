"""cogito-lc: long-term memory for LangChain agents that returns what was stored."""

from __future__ import annotations

from importlib import metadata as _importlib_metadata

from cogito_lc import _deprecated  # old module paths keep working
from cogito_lc._core.metadata import METADATA_KEY
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
from cogito_lc.embeddings.local import local_embeddings
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
from cogito_lc.memory.calibrate import CalibrationResult, VocabCalibrator
from cogito_lc.memory.loaders import markdown_memories
from cogito_lc.memory.memory_store import (
    AddResult,
    ForgetResult,
    MemoryConflictError,
    MemoryNotFoundError,
    MemoryStore,
    SupersessionRefusedError,
)
from cogito_lc.memory.scope import Scope
from cogito_lc.memory.seed import SeedSummary
from cogito_lc.memory.snapshot import Snapshot, SnapshotBuilder, load_snapshot
from cogito_lc.prompts.registry import PromptRegistry, PromptVariablesError
from cogito_lc.retrievers.cogito_retriever import RETRIEVAL_EVENT, CogitoRetriever
from cogito_lc.retrievers.recall_b import RecallB
from cogito_lc.stores import (
    DatabaseUnavailableError,
    StatementTimeoutError,
    WriteLockTimeoutError,
)

try:
    __version__ = _importlib_metadata.version("cogito-lc")
except _importlib_metadata.PackageNotFoundError:  # pragma: no cover - uninstalled checkout
    __version__ = "0.0.0"

__all__ = [
    "EXTRACTION_EVENT",
    "FILTER_EVENT",
    "METADATA_KEY",
    "RETRIEVAL_EVENT",
    "SUPERSESSION_EVENT",
    "AddResult",
    "CalibrationResult",
    "CogitoRetriever",
    "DatabaseUnavailableError",
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
    "ForgetResult",
    "LlmExtractor",
    "LlmExtractorBuilder",
    "MemoryConflictError",
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
    "StatementTimeoutError",
    "StructuredOutputMode",
    "SupersessionDecision",
    "SupersessionInput",
    "SupersessionJudge",
    "SupersessionJudgeBuilder",
    "SupersessionMethod",
    "SupersessionRefusedError",
    "VocabCalibrator",
    "WriteLockTimeoutError",
    "__version__",
    "load_snapshot",
    "local_embeddings",
    "markdown_memories",
]


def __getattr__(name: str) -> object:
    """Names that need an extra, loaded on first use; names that left the top level."""
    if name == "CogitoStore":  # needs the langgraph extra
        from cogito_lc.langgraph.store import CogitoStore

        return CogitoStore
    return _deprecated.package_attribute(name)
