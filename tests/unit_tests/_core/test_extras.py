"""The dependencies match the code: the core needs each one, each extra is what its code imports."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = pytest.importorskip("tomli")

from cogito_lc._core.extras import EXTRAS, MissingExtraError, install_line, require_extra

REPO = Path(__file__).resolve().parents[3]
PACKAGE = REPO / "cogito_lc"
# Where an extra is needed on import: a file, else its top-level folder.
GATED = {
    "service/mcp_server.py": "mcp",
    "embeddings/_huggingface.py": "local",
    "service": "server",
    "cli": "cli",
    "bench": "bench",
    "langgraph": "langgraph",
}
# Modules imported directly that come with a declared distribution.
COMES_WITH = {
    "yaml": "pyyaml",
    "typing_extensions": "pydantic",
    "anyio": "fastapi",
    "starlette": "fastapi",
    "torch": "sentence-transformers",
    "transformers": "sentence-transformers",
    "sklearn": "scikit-learn",
}
# stores/chroma.py calls the chromadb collection behind a langchain-chroma store.
USED_WITHOUT_IMPORT = {"chromadb"}
NOT_SHIPPED = {"tests"}  # the benchmark's optional local model server, from a checkout


def project() -> dict[str, object]:
    with (REPO / "pyproject.toml").open("rb") as file:
        return dict(tomllib.load(file)["project"])


def dist_name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert match, requirement
    return match.group(0).lower().replace("_", "-")


def extra_dists(extra: str) -> set[str]:
    """The distributions an extra installs, following ``cogito-lc[...]`` references."""
    extras = project()["optional-dependencies"]
    assert isinstance(extras, dict)
    dists: set[str] = set()
    for requirement in extras[extra]:
        if requirement.startswith("cogito-lc["):
            for inner in requirement.removeprefix("cogito-lc[").rstrip("]").split(","):
                dists |= extra_dists(inner)
        else:
            dists.add(dist_name(requirement))
    return dists


def core_dists() -> set[str]:
    dependencies = project()["dependencies"]
    assert isinstance(dependencies, list)
    return {dist_name(requirement) for requirement in dependencies}


def provider(module: str) -> str:
    return COMES_WITH.get(module, module.replace("_", "-"))


def module_names(nodes: list[ast.stmt] | list[ast.AST]) -> set[str]:
    names: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return {
        name
        for name in names
        if name not in sys.stdlib_module_names and name not in {"cogito_lc", *NOT_SHIPPED}
    }


def eager_nodes(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements run on import: module level, in try blocks, not under TYPE_CHECKING."""
    nodes: list[ast.stmt] = []
    for node in body:
        if isinstance(node, ast.Try):
            nodes += eager_nodes(node.body)
        elif isinstance(node, ast.If) and "TYPE_CHECKING" not in ast.unparse(node.test):
            nodes += eager_nodes(node.body) + eager_nodes(node.orelse)
        else:
            nodes.append(node)
    return nodes


def package_imports(*, eager: bool) -> dict[str | None, set[str]]:
    """Third-party imports of the library layers (key None) and of each gated package."""
    found: dict[str | None, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        nodes = eager_nodes(tree.body) if eager else list(ast.walk(tree))
        relative = path.relative_to(PACKAGE)
        extra = GATED.get(relative.as_posix(), GATED.get(relative.parts[0]))
        found.setdefault(extra, set()).update(module_names(nodes))
    return found


def test_every_extra_is_registered() -> None:
    extras = project()["optional-dependencies"]
    assert isinstance(extras, dict)
    assert set(EXTRAS) == set(extras) - {"dev", "all"}
    assert extra_dists("all") == set().union(*(extra_dists(extra) for extra in EXTRAS))


@pytest.mark.parametrize("extra", sorted(EXTRAS))
def test_an_extras_modules_come_from_its_distributions(extra: str) -> None:
    assert {provider(module) for module in EXTRAS[extra]} <= extra_dists(extra)


def test_every_core_dependency_is_imported_by_the_library() -> None:
    library = {provider(module) for module in package_imports(eager=False)[None]}
    assert core_dists() <= library | USED_WITHOUT_IMPORT


def test_every_import_is_declared() -> None:
    declared = core_dists().union(*(extra_dists(extra) for extra in EXTRAS))
    for modules in package_imports(eager=False).values():
        assert {provider(module) for module in modules} <= declared


def test_the_library_imports_only_core_dependencies_on_import() -> None:
    eager = {provider(module) for module in package_imports(eager=True)[None]}
    assert eager <= core_dists()


@pytest.mark.parametrize(("where", "extra"), sorted(GATED.items()))
def test_a_gated_package_imports_only_its_extra_on_import(where: str, extra: str) -> None:
    eager = {provider(module) for module in package_imports(eager=True)[extra]}
    assert eager <= core_dists() | extra_dists(extra)


def test_a_missing_module_names_the_extra_and_its_install_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(EXTRAS, "server", ("fastapi", "cogito_lc_no_such_module"))
    with pytest.raises(MissingExtraError) as caught:
        require_extra("server", "The HTTP service")
    assert isinstance(caught.value, ImportError)
    assert caught.value.extra == "server"
    assert caught.value.name == "cogito_lc_no_such_module"
    assert str(caught.value).startswith("The HTTP service needs the 'server' extra: ")
    assert install_line("server") == 'pip install "cogito-lc[server]"'
    assert install_line("server") in str(caught.value)


def test_an_installed_extra_passes() -> None:
    require_extra("cli", "The cogito-lc command line")  # the test environments have it
