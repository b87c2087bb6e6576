"""The public names are a contract: this test pins them."""

from __future__ import annotations

import cogito_lc

EXPECTED_ALL = [
    "EXTRACTION_EVENT",
    "METADATA_KEY",
    "AddResult",
    "Bm25Index",
    "Decomposition",
    "ExtractionMethod",
    "ExtractionResult",
    "Fact",
    "FactExtractionInput",
    "FactExtractor",
    "FactExtractorBuilder",
    "FactKind",
    "LlmExtractor",
    "LlmExtractorBuilder",
    "MemoryNotFoundError",
    "MemoryStore",
    "PromptRegistry",
    "PromptVariablesError",
    "RecallB",
    "Scope",
    "SeedSummary",
    "StructuredOutputMode",
    "VectorCache",
    "__version__",
    "decompose_query",
    "document_key",
    "reciprocal_rank_fusion",
]


def test_all_is_pinned() -> None:
    assert sorted(cogito_lc.__all__) == sorted(EXPECTED_ALL)


def test_every_public_name_resolves() -> None:
    for name in cogito_lc.__all__:
        assert getattr(cogito_lc, name) is not None


def test_package_is_typed() -> None:
    from importlib.resources import files

    assert files("cogito_lc").joinpath("py.typed").is_file()
