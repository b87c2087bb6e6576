"""Old module paths of cogito-lc, kept importable with a ``DeprecationWarning``.

cogito-lc 0.2 grouped its modules into one folder per layer. Importing an old path
(``from cogito_lc.pointer_filter import PointerFilter``) still works: a finder on
``sys.meta_path`` answers it with a module that forwards every attribute to the
module's new home and warns once, naming the new import. ``python -m`` on an old path
runs the new module. Importing this module installs the finder.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from collections.abc import Sequence
from types import CodeType, ModuleType
from typing import Any

__all__ = [
    "MOVED_LAYER_NAMES",
    "MOVED_MODULES",
    "MOVED_NAMES",
    "moved_attribute",
    "package_attribute",
]

MOVED_MODULES: dict[str, str] = {
    "cogito_lc.calibrate": "cogito_lc.memory.calibrate",
    "cogito_lc.cogito_retriever": "cogito_lc.retrievers.cogito_retriever",
    "cogito_lc.config": "cogito_lc.service.config",
    "cogito_lc.decompose": "cogito_lc.retrievers._decompose",
    "cogito_lc.discovery": "cogito_lc.extraction.discovery",
    "cogito_lc.fact_extractor": "cogito_lc.extraction.fact_extractor",
    "cogito_lc.fusion": "cogito_lc.retrievers._fusion",
    "cogito_lc.lexical": "cogito_lc.stores.bm25s_index",
    "cogito_lc.llm_extractor": "cogito_lc.extraction.llm_extractor",
    "cogito_lc.loaders": "cogito_lc.memory.loaders",
    "cogito_lc.memory_store": "cogito_lc.memory.memory_store",
    "cogito_lc.metadata": "cogito_lc._core.metadata",
    "cogito_lc.models": "cogito_lc.service.models",
    "cogito_lc.pointer_filter": "cogito_lc.document_compressors.pointer_filter",
    "cogito_lc.recall_b": "cogito_lc.retrievers.recall_b",
    "cogito_lc.retrievers.fts_index": "cogito_lc.stores.sqlite_fts",
    "cogito_lc.retrievers.lexical_index": "cogito_lc.stores.lexical_index",
    "cogito_lc.retrievers.lexical_sync": "cogito_lc.stores.lexical_sync",
    "cogito_lc.retrievers.pg_lexical_index": "cogito_lc.stores.postgres_lexical",
    "cogito_lc.scope": "cogito_lc.memory.scope",
    "cogito_lc.seed": "cogito_lc.memory.seed",
    "cogito_lc.server": "cogito_lc.service.server",
    "cogito_lc.service.discovery": "cogito_lc.extraction.discovery",
    "cogito_lc.snapshot": "cogito_lc.memory.snapshot",
    "cogito_lc.subquery_vectors": "cogito_lc.retrievers._subquery_vectors",
    "cogito_lc.vector_cache": "cogito_lc.retrievers._vector_cache",
}
"""Old public module path -> the module that holds its code now."""


MOVED_NAMES: dict[str, str] = {
    "Bm25Index": "cogito_lc.stores",
    **dict.fromkeys(
        (
            "Decomposition",
            "VectorCache",
            "decompose_query",
            "document_key",
            "reciprocal_rank_fusion",
        ),
        "cogito_lc.retrievers",
    ),
}
"""RecallB's building blocks that left the top level -> the package that exports them."""

MOVED_LAYER_NAMES: dict[str, dict[str, str]] = {
    "cogito_lc.retrievers": dict.fromkeys(
        (
            "Bm25Index",
            "Bm25LexicalIndex",
            "LexicalHit",
            "LexicalIndex",
            "LexicalSync",
            "PostgresLexicalIndex",
            "SqliteLexicalIndex",
            "lexical_sync_for",
            "lexical_terms",
        ),
        "cogito_lc.stores",
    ),
}
"""Names a layer's package exported before they moved to another layer -> their package."""


def _message(old: str, new: str) -> str:
    return (
        f"{old} moved to {new}; import from cogito_lc (or {new}) instead. "
        "The old path will be removed in a future release."
    )


class _ForwardingModule(ModuleType):
    """An old module path whose attributes are those of the module that replaced it."""

    def __init__(self, name: str, target: ModuleType) -> None:
        super().__init__(name, target.__doc__)
        self.__target = target
        self.__all__ = list(getattr(target, "__all__", ()))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__target, name)

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(dir(self.__target)))


class _MovedModuleLoader(importlib.abc.Loader):
    def __init__(self, old: str, new: str) -> None:
        self.old = old
        self.new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warnings.warn(_message(self.old, self.new), DeprecationWarning, stacklevel=2)
        return _ForwardingModule(self.old, importlib.import_module(self.new))

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module forwards to its new home."""

    def get_code(self, fullname: str) -> CodeType | None:
        """The new module's code, for ``python -m old.path``."""
        warnings.warn(_message(self.old, self.new), DeprecationWarning, stacklevel=2)
        spec = importlib.util.find_spec(self.new)
        loader = spec.loader if spec is not None else None
        get_code = getattr(loader, "get_code", None)
        return get_code(self.new) if get_code is not None else None


class _MovedModuleFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        new = MOVED_MODULES.get(fullname)
        if new is None:
            return None
        return importlib.util.spec_from_loader(fullname, _MovedModuleLoader(fullname, new))


def package_attribute(name: str) -> Any:
    """``cogito_lc.<name>`` for a name that is not (or no longer) defined there.

    Raises:
        AttributeError: If ``name`` is neither a name that left the top level
            nor an old submodule of the package.
    """
    home = MOVED_NAMES.get(name)
    if home is None:
        return _moved_module(str(__package__), name)
    warning = (
        f"{__package__}.{name} is RecallB machinery and left the top level; import it from "
        f"{home}. The top-level name will be removed in a future release."
    )
    return _moved_name(home, name, warning)


def moved_attribute(package: str, name: str) -> Any:
    """``<package>.<name>`` for a name or submodule that moved to another layer.

    Raises:
        AttributeError: If ``name`` did not move out of ``package``.
    """
    home = MOVED_LAYER_NAMES.get(package, {}).get(name)
    if home is None:
        return _moved_module(package, name)
    warning = (
        f"{package}.{name} moved to {home}; import it from {home}. "
        "The old name will be removed in a future release."
    )
    return _moved_name(home, name, warning)


def _moved_name(home: str, name: str, warning: str) -> Any:
    """``<home>.<name>``, after warning the importing line (two frames up) of the move."""
    warnings.warn(warning, DeprecationWarning, stacklevel=4)
    return getattr(importlib.import_module(home), name)


def _moved_module(package: str, name: str) -> ModuleType:
    """The forwarding module of the old submodule ``<package>.<name>``, with a warning."""
    old = f"{package}.{name}"
    new = MOVED_MODULES.get(old)
    if new is None:
        msg = f"module {package!r} has no attribute {name!r}"
        raise AttributeError(msg)
    warnings.warn(_message(old, new), DeprecationWarning, stacklevel=4)
    module = sys.modules.get(old)
    if module is None:
        module = sys.modules.setdefault(old, _ForwardingModule(old, importlib.import_module(new)))
    return module


if not any(isinstance(finder, _MovedModuleFinder) for finder in sys.meta_path):
    sys.meta_path.append(_MovedModuleFinder())
