"""The built wheel, installed as users install it: core only, then with extras."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.integration_tests.packaging.conftest import (
    REPO,
    Venv,
    clean_env,
    project_version,
)

HERE = Path(__file__).resolve().parent
# The components each extra enables, as code that uses them; run where the extra is missing.
EXTRA_COMPONENTS = {
    "local": "from cogito_lc import local_embeddings; local_embeddings()",
    "server": "import cogito_lc.service.server",
    "cli": "import cogito_lc.cli.app",
    "bench": "import cogito_lc.bench.locomo",
    "langgraph": "from cogito_lc import CogitoStore",
    "postgres": "from cogito_lc import MemoryStore\n"
    "from langchain_core.embeddings import DeterministicFakeEmbedding\n"
    "MemoryStore.from_database_url('postgresql://me@127.0.0.1:1/app', "
    "embeddings=DeterministicFakeEmbedding(size=8))",
    "qdrant": "from cogito_lc import MemoryStore\n"
    "from langchain_core.embeddings import DeterministicFakeEmbedding\n"
    "MemoryStore.from_qdrant(embeddings=DeterministicFakeEmbedding(size=8))",
}
# Run with the server extra: providers are reached through the service's model settings.
SERVER_COMPONENTS = {
    "mcp": "import cogito_lc.service.mcp_server",
}
PROVIDER_COMPONENTS = {
    "ollama": "filter_model='ollama:qwen2.5:3b'",
    "openai": "filter_model='openai:gpt-4o-mini', filter_endpoint='http://127.0.0.1:9/v1'",
    "anthropic": "filter_model='anthropic:claude-haiku-4-5', anthropic_api_key='k'",
}
# Extras whose components are not part of this package yet (no code needs them).
EXTRAS_WITHOUT_COMPONENTS: set[str] = set()
# The modules that need an extra on import (the CLI's private helpers need only httpx).
GATED = {
    "cogito_lc.service": "server",
    "cogito_lc.bench": "bench",
    "cogito_lc.cli.app": "cli",
    "cogito_lc.langgraph": "langgraph",
    "cogito_lc.embeddings._huggingface": "local",
}


def gate_of(module: str) -> str | None:
    return next((e for m, e in GATED.items() if module == m or module.startswith(f"{m}.")), None)


def install_line(extra: str) -> str:
    return f'pip install "cogito-lc[{extra}]"'


def probe(venv: Venv, snippets: dict[str, str]) -> dict[str, Any]:
    """Run ``probe.py`` in ``venv``: one process for all the import checks."""
    result = venv.run(venv.python, HERE / "probe.py", json.dumps(snippets))
    assert result.returncode == 0, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    assert report["file"].startswith(str(venv.path)), report["file"]  # not this checkout
    return report


@pytest.fixture(scope="module")
def core_probe(core_venv: Venv) -> dict[str, Any]:
    return probe(core_venv, EXTRA_COMPONENTS)


@pytest.fixture(scope="module")
def local_cli_probe(local_cli_venv: Venv) -> dict[str, Any]:
    snippets = {
        extra: "from cogito_lc.service.config import CogitoSettings\n"
        "from cogito_lc.service.models import chat_model_from_settings\n"
        f"chat_model_from_settings(CogitoSettings({settings}))"
        for extra, settings in PROVIDER_COMPONENTS.items()
    }
    return probe(local_cli_venv, {**snippets, **SERVER_COMPONENTS})


def assert_names_extra(output: str, extra: str) -> None:
    assert f"'{extra}' extra" in output, output
    assert install_line(extra) in output, output


def test_sdist_and_wheel_pass_twine_check(dist_dir: Path) -> None:
    artefacts = sorted(str(path) for path in dist_dir.iterdir())
    assert len(artefacts) == 2, artefacts  # the sdist and the wheel
    result = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *artefacts],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("PASSED") == 2, result.stdout


def test_wheel_metadata_is_honest(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        (name,) = (n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = archive.read(name).decode()
        entry_points = archive.read(name.replace("METADATA", "entry_points.txt")).decode()
        files = archive.namelist()
    assert "Requires-Python: >=3.10" in metadata
    claimed = {
        line.rsplit(":: ", 1)[1] for line in metadata.splitlines() if ":: Python :: 3." in line
    }
    assert claimed == {"3.10", "3.11", "3.12"}  # the versions `make test` runs
    assert "Project-URL: Repository, https://github.com/cogito-lc/cogito-lc" in metadata
    assert "Description-Content-Type: text/markdown" in metadata
    assert "pip install cogito-lc" in metadata  # the README is the long description
    for extra in ("local", "server", "cli", "all", "postgres", "langgraph", "mcp"):
        assert f"Provides-Extra: {extra}" in metadata
    assert "cogito-lc = cogito_lc.cli:main" in entry_points
    assert "cogito-lc-server = cogito_lc.cli:server_main" in entry_points
    assert "cogito_lc/py.typed" in files
    for asset in (  # the inspector's pages and assets: it works with no internet
        "templates/base.html",
        "static/inspector.css",
        "static/vendor/htmx/htmx.min.js",
        "static/vendor/htmx/LICENSE",
    ):
        assert f"cogito_lc/service/ui/{asset}" in files, asset
    assert not [f for f in files if f.startswith("tests/")], "tests shipped in the wheel"


def test_core_install_runs_the_offline_quickstart(core_venv: Venv) -> None:
    result = core_venv.run(core_venv.python, HERE / "core_quickstart.py", env=clean_env())
    assert result.returncode == 0, result.stdout + result.stderr
    assert "quickstart ok" in result.stdout


def test_core_install_version_comes_from_the_metadata(core_probe: dict[str, Any]) -> None:
    assert core_probe["version"] == core_probe["metadata_version"] == project_version()


def test_every_module_imports_with_core_dependencies_only(core_probe: dict[str, Any]) -> None:
    sources = {
        ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
        for path in (REPO / "cogito_lc").rglob("*.py")
        if path.name != "__main__.py"
    }
    assert set(core_probe["modules"]) == sources
    for module, outcome in core_probe["modules"].items():
        gate = gate_of(module)
        if gate is None:
            assert outcome is None, f"{module}: {outcome}"
        else:
            assert outcome is not None, f"{module} imported without the {gate!r} extra"
            assert outcome.startswith("MissingExtraError: "), f"{module}: {outcome}"
            assert_names_extra(outcome, gate)


@pytest.mark.parametrize("extra", sorted(EXTRA_COMPONENTS))
def test_a_component_without_its_extra_names_the_install_line(
    core_probe: dict[str, Any], extra: str
) -> None:
    error = core_probe["errors"][extra]
    assert error is not None, f"{EXTRA_COMPONENTS[extra]!r} raised no ImportError"
    assert error.startswith("MissingExtraError: "), error  # an ImportError
    assert_names_extra(error, extra)


@pytest.mark.parametrize(
    ("script", "extra"), [("cogito-lc", "cli"), ("cogito-lc-server", "server")]
)
def test_console_scripts_without_their_extra_exit_with_the_install_line(
    core_venv: Venv, script: str, extra: str
) -> None:
    result = core_venv.run(core_venv.script(script), "--help")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr, result.stderr
    assert result.stderr.startswith(f"{script}: "), result.stderr
    assert_names_extra(result.stderr, extra)


def test_every_extra_is_covered(core_probe: dict[str, Any]) -> None:
    covered = {
        *EXTRA_COMPONENTS,
        *SERVER_COMPONENTS,
        *PROVIDER_COMPONENTS,
        *EXTRAS_WITHOUT_COMPONENTS,
    }
    assert set(core_probe["extras"]) == covered


@pytest.mark.parametrize("extra", sorted({*PROVIDER_COMPONENTS, *SERVER_COMPONENTS}))
def test_a_provider_without_its_extra_names_the_install_line(
    local_cli_probe: dict[str, Any], extra: str
) -> None:
    error = local_cli_probe["errors"][extra]
    assert error is not None, f"{extra}: no ImportError"
    assert_names_extra(error, extra)


def test_local_cli_install_stores_and_recalls_on_the_embedded_default(
    local_cli_venv: Venv, tmp_path: Path
) -> None:
    env = clean_env(HOME=str(tmp_path), COGITO_STORE_PATH=str(tmp_path / "store"))
    cli = local_cli_venv.script("cogito-lc")
    stored = local_cli_venv.run(cli, "store", "Auth tokens expire after 3600 seconds.", env=env)
    assert stored.returncode == 0, stored.stdout + stored.stderr
    assert stored.stdout.startswith("stored "), stored.stdout
    recalled = local_cli_venv.run(
        cli, "recall-b", "how long do auth tokens last?", "--raw", env=env
    )
    assert recalled.returncode == 0, recalled.stdout + recalled.stderr
    memories = json.loads(recalled.stdout)["memories"]
    assert memories[0]["text"] == "Auth tokens expire after 3600 seconds."
    assert (tmp_path / "store").is_dir()  # the embedded Chroma store the settings name
