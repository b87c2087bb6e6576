"""The public names are a contract: this test pins them."""

from __future__ import annotations

import cogito_lc

EXPECTED_ALL = [
    "EXTRACTION_EVENT",
    "FILTER_EVENT",
    "METADATA_KEY",
    "RETRIEVAL_EVENT",
    "SUPERSESSION_EVENT",
    "AddResult",
    "CalibrationResult",
    "CogitoRetriever",
    "ExtractionMethod",
    "ExtractionResult",
    "Fact",
    "FactExtractionInput",
    "FactExtractor",
    "FactExtractorBuilder",
    "FactKind",
    "FactListOutputParser",
    "FilterMethod",
    "ForgetResult",
    "FilterResult",
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
    "StructuredOutputMode",
    "SupersessionDecision",
    "SupersessionInput",
    "SupersessionJudge",
    "SupersessionJudgeBuilder",
    "SupersessionMethod",
    "SupersessionRefusedError",
    "VocabCalibrator",
    "StatementTimeoutError",
    "WriteLockTimeoutError",
    "DatabaseUnavailableError",
    "load_snapshot",
    "local_embeddings",
    "markdown_memories",
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


LAYER_EXPORTS = {
    "cogito_lc.retrievers": {"RecallB", "CogitoRetriever", "decompose_query"},
    "cogito_lc.stores": {
        "Bm25Index",
        "ChromaAdapter",
        "LexicalIndex",
        "LexicalSync",
        "PostgresLexicalIndex",
        "SqliteLexicalIndex",
        "StoreAdapter",
        "adapter_for",
    },
    "cogito_lc.document_compressors": {
        "PointerFilter",
        "PointerOutputParser",
        "SupersessionDecision",
        "SupersessionInput",
        "SupersessionJudge",
        "SupersessionMethod",
    },
    "cogito_lc.extraction": {"LlmExtractor", "FactExtractor", "FactListOutputParser"},
    "cogito_lc.memory": {
        "MemoryStore",
        "MemoryConflictError",
        "SnapshotBuilder",
        "SupersessionRefusedError",
    },
    "cogito_lc.prompts": {"PromptRegistry"},
    "cogito_lc.embeddings": {"LazyEmbeddings", "local_embeddings"},
}


def test_layer_packages_export_their_components() -> None:
    import importlib

    for package, names in LAYER_EXPORTS.items():
        module = importlib.import_module(package)
        assert names <= set(module.__all__), package
        shared = names & set(cogito_lc.__all__)
        assert all(getattr(module, name) is getattr(cogito_lc, name) for name in shared)


def test_importing_the_package_needs_no_optional_extra() -> None:
    import subprocess
    import sys

    code = (
        "import sys, cogito_lc; "
        "heavy = {'fastapi', 'typer', 'sentence_transformers', 'torch', 'langchain_huggingface'}; "
        "print(sorted(heavy & set(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_cogito_store_is_loaded_on_use_and_names_its_extra() -> None:
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['langgraph'] = None; "  # as if the extra were not installed
        "import cogito_lc\n"
        "try:\n    cogito_lc.CogitoStore\nexcept ImportError as exc:\n    print(exc)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert 'pip install "cogito-lc[langgraph]"' in done.stdout
    assert "CogitoStore" not in cogito_lc.__all__  # `import *` works without the extra
    try:
        import langgraph.store.base  # noqa: F401
    except ImportError:
        return
    from cogito_lc.langgraph import CogitoStore

    assert cogito_lc.CogitoStore is CogitoStore


STORES_ALL = [
    "LEXICAL_STOP_WORDS",
    "SUPPORTED_FILTER_STORES",
    "BatchedSearchAdapter",
    "Bm25Index",
    "Bm25LexicalIndex",
    "ChromaAdapter",
    "DatabaseUnavailableError",
    "InMemoryAdapter",
    "LexicalHit",
    "LexicalIndex",
    "LexicalSync",
    "PostgresLexicalIndex",
    "QdrantAdapter",
    "Run",
    "ScoredDocument",
    "SqliteLexicalIndex",
    "StoreAdapter",
    "StoredVectors",
    "Vector",
    "StatementTimeoutError",
    "WriteLockTimeoutError",
    "adapter_for",
    "check_filterable",
    "cosine_scores",
    "filters_by_metadata",
    "is_chroma",
    "lexical_sync_for",
    "lexical_terms",
    "open_qdrant_store",
    "register_adapter",
]


def test_stores_all_is_pinned() -> None:
    from cogito_lc import stores

    assert sorted(stores.__all__) == sorted(STORES_ALL)
    assert all(getattr(stores, name) is not None for name in stores.__all__)
