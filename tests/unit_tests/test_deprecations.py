"""Old import paths keep working for a while, each with a DeprecationWarning naming the new one."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import cogito_lc
from cogito_lc._deprecated import MOVED_LAYER_NAMES, MOVED_MODULES, MOVED_NAMES


def _forget(name: str) -> None:
    """Undo an earlier import of an old path, so the next one runs the shim again."""
    sys.modules.pop(name, None)
    vars(cogito_lc).pop(name.rpartition(".")[2], None)


@pytest.mark.parametrize(("old", "new"), sorted(MOVED_MODULES.items()))
def test_an_old_module_path_imports_with_a_warning(old: str, new: str) -> None:
    _forget(old)
    with pytest.warns(DeprecationWarning, match=rf"{old} moved to {new}"):
        module = importlib.import_module(old)
    target = importlib.import_module(new)
    for name in getattr(target, "__all__", []):
        assert getattr(module, name) is getattr(target, name)


def test_from_import_of_an_old_path_gives_the_same_object() -> None:
    _forget("cogito_lc.pointer_filter")
    with pytest.warns(DeprecationWarning, match="cogito_lc.document_compressors.pointer_filter"):
        from cogito_lc.pointer_filter import PointerFilter
    assert PointerFilter is cogito_lc.PointerFilter


def test_the_warning_points_at_the_importing_line() -> None:
    _forget("cogito_lc.recall_b")
    user_code = compile("\n\nimport cogito_lc.recall_b\n", "user_code.py", "exec")
    with pytest.warns(DeprecationWarning, match="cogito_lc.recall_b moved") as caught:
        exec(user_code, {})  # noqa: S102 - a user's module, compiled under its own name
    assert (caught[0].filename, caught[0].lineno) == ("user_code.py", 3)


def test_an_old_submodule_as_package_attribute_warns() -> None:
    _forget("cogito_lc.scope")
    with pytest.warns(DeprecationWarning, match="cogito_lc.memory.scope"):
        module = cogito_lc.scope  # type: ignore[attr-defined]
    assert module.Scope is cogito_lc.Scope


@pytest.mark.parametrize(("name", "home"), sorted(MOVED_NAMES.items()))
def test_names_that_left_the_top_level_still_resolve_with_a_warning(name: str, home: str) -> None:
    assert name not in cogito_lc.__all__
    with pytest.warns(DeprecationWarning, match=rf"import it from {home}"):
        value = getattr(cogito_lc, name)
    assert value is getattr(importlib.import_module(home), name)


@pytest.mark.parametrize(
    ("package", "name", "home"),
    sorted((p, n, h) for p, names in MOVED_LAYER_NAMES.items() for n, h in names.items()),
)
def test_names_that_moved_to_another_layer_resolve_with_a_warning(
    package: str, name: str, home: str
) -> None:
    module = importlib.import_module(package)
    assert name not in module.__all__
    with pytest.warns(DeprecationWarning, match=rf"{package}\.{name} moved to {home}"):
        value = getattr(module, name)
    assert value is getattr(importlib.import_module(home), name)


def test_an_old_lexical_engine_import_keeps_working() -> None:
    _forget("cogito_lc.retrievers.fts_index")
    with pytest.warns(DeprecationWarning, match="cogito_lc.stores.sqlite_fts"):
        from cogito_lc.retrievers.fts_index import SqliteLexicalIndex
    from cogito_lc import stores

    assert SqliteLexicalIndex is stores.SqliteLexicalIndex
    with pytest.warns(DeprecationWarning, match="cogito_lc.stores"):
        from cogito_lc.retrievers import PostgresLexicalIndex
    assert PostgresLexicalIndex.__module__ == "cogito_lc.stores.postgres_lexical"


def test_an_unknown_name_of_a_layer_is_an_attribute_error() -> None:
    from cogito_lc import retrievers

    with pytest.raises(AttributeError, match="has no attribute 'nothing_here'"):
        _ = retrievers.nothing_here  # type: ignore[attr-defined]


def test_an_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        _ = cogito_lc.nothing_here  # type: ignore[attr-defined]


def test_python_dash_m_on_an_old_path_runs_the_new_module() -> None:
    done = subprocess.run(
        [sys.executable, "-W", "always::DeprecationWarning", "-m", "cogito_lc.server", "--help"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "cogito_lc.server moved to cogito_lc.service.server" in done.stderr


@pytest.mark.parametrize(
    "line", ["from cogito_lc.retrievers import SqliteLexicalIndex", "cogito_lc.Bm25Index"]
)
def test_a_moved_name_warns_at_the_line_that_asks_for_it(line: str) -> None:
    user_code = compile(f"import cogito_lc\n\n{line}\n", "user_code.py", "exec")
    with pytest.warns(DeprecationWarning, match="cogito_lc.stores") as caught:
        exec(user_code, {})  # noqa: S102 - a user's module, compiled under its own name
    assert (caught[0].filename, caught[0].lineno) == ("user_code.py", 3)
