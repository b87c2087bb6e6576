"""Long-term memory over a vector store: ``MemoryStore`` and what it is made of.

Scopes, seeding and loaders, snapshots and vocabulary calibration (store internals
are reached through :mod:`cogito_lc._core`'s store adapter).
May import the retrievers, extraction, document compressors, prompts, embeddings and
:mod:`cogito_lc._core`; knows nothing of the service, the benchmarks or the CLI.
"""

from __future__ import annotations

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

__all__ = [
    "AddResult",
    "CalibrationResult",
    "ForgetResult",
    "MemoryConflictError",
    "MemoryNotFoundError",
    "MemoryStore",
    "Scope",
    "SeedSummary",
    "Snapshot",
    "SnapshotBuilder",
    "SupersessionRefusedError",
    "VocabCalibrator",
    "load_snapshot",
    "markdown_memories",
]
