"""The public names are a contract: this test pins them."""

from __future__ import annotations

import cogito_lc

EXPECTED_ALL = [
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
    "decompose_query",
    "document_key",
    "load_snapshot",
    "reciprocal_rank_fusion",
    "__version__",
]


def test_all_is_pinned() -> None:
    assert sorted(cogito_lc.__all__) == sorted(EXPECTED_ALL)


def test_every_public_name_resolves() -> None:
    for name in cogito_lc.__all__:
        assert getattr(cogito_lc, name) is not None


def test_package_is_typed() -> None:
    from importlib.resources import files

    assert files("cogito_lc").joinpath("py.typed").is_file()
