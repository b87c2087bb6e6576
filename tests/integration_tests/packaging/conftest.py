"""The built artefacts, installed into fresh virtual environments once per test session.

``python -m build`` makes the sdist and, from it, the wheel, as ``make dist`` does; the
wheel then goes into a virtual environment with the core dependencies only, and into one
with the ``local`` and ``cli`` extras. Installing uses the machine's pip configuration
(its package indexes and caches) plus the local wheel directory when there is one.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import tomllib

REPO = Path(__file__).resolve().parents[3]
LOCAL_WHEELS = Path("/opt/wheels")
# The CPU build of torch the Makefile installs (TORCH_SPEC): the local extra needs torch.
TORCH_SPEC = "torch==2.13.0"
INSTALL_TIMEOUT_S = 1800


def project_version() -> str:
    with (REPO / "pyproject.toml").open("rb") as file:
        return str(tomllib.load(file)["project"]["version"])


def clean_env(**extra: str) -> dict[str, str]:
    """The environment of a fresh install: nothing from this checkout or its settings."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"} and not key.startswith("COGITO_")
    }
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", ANONYMIZED_TELEMETRY="False")
    env.update(extra)
    return env


@dataclass(frozen=True)
class Venv:
    """A virtual environment with the built wheel installed."""

    path: Path
    workdir: Path
    """An empty directory to run in, so that nothing is imported from the checkout."""

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"

    def script(self, name: str) -> Path:
        return self.path / "bin" / name

    def run(
        self, *args: str | Path, env: dict[str, str] | None = None, timeout: float = 300
    ) -> subprocess.CompletedProcess[str]:
        """Run a command of this environment in :attr:`workdir`; never raises on failure."""
        return subprocess.run(
            [str(arg) for arg in args],
            cwd=self.workdir,
            env=env or clean_env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def python_code(self, code: str, **env: str) -> subprocess.CompletedProcess[str]:
        return self.run(self.python, "-c", code, env=clean_env(**env))


def _check(result: subprocess.CompletedProcess[str], what: str) -> None:
    if result.returncode != 0:
        pytest.fail(f"{what} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")


@pytest.fixture(scope="session")
def dist_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist and the wheel built from it, by ``python -m build``."""
    out = tmp_path_factory.mktemp("dist")
    result = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(REPO)],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT_S,
        check=False,
    )
    _check(result, "python -m build")
    return out


@pytest.fixture(scope="session")
def wheel(dist_dir: Path) -> Path:
    (built,) = dist_dir.glob("cogito_lc-*.whl")
    return built


def _install(root: Path, requirements: list[str]) -> Venv:
    venv = root / "venv"
    workdir = root / "work"
    workdir.mkdir()
    _check(
        subprocess.run(
            [sys.executable, "-m", "venv", "--without-pip", str(venv)],
            capture_output=True,
            text=True,
            check=False,
        ),
        "python -m venv",
    )
    find_links = ["--find-links", str(LOCAL_WHEELS)] if LOCAL_WHEELS.is_dir() else []
    command = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python")]
    result = subprocess.run(
        # No bytecode compiled ahead: most of the install time, for modules never imported.
        [*command, "install", "--quiet", "--no-compile", *find_links, *requirements],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT_S,
        check=False,
    )
    _check(result, f"pip install {' '.join(requirements)}")
    return Venv(path=venv, workdir=workdir)


@pytest.fixture(scope="session")
def core_venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """The wheel with its core dependencies only: ``pip install cogito-lc``."""
    return _install(tmp_path_factory.mktemp("core"), [str(wheel)])


@pytest.fixture(scope="session")
def local_cli_venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """The wheel with the ``local`` and ``cli`` extras: ``pip install "cogito-lc[local,cli]"``."""
    return _install(tmp_path_factory.mktemp("local-cli"), [f"{wheel}[local,cli]", TORCH_SPEC])
