"""The README cannot drift: its code runs and its reference tables match the code."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import tomllib
import typer.main

from cogito_lc.cli import app as cli_app
from cogito_lc.service.config import CogitoSettings

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
PYTHON_BLOCKS = re.findall(r"```python\n(.*?)```", README, re.S)


def section(title: str) -> str:
    start = README.index(f"## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start:end]


def table_column(text: str, column: int) -> set[str]:
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    return {row.split("|")[column + 1].strip().strip("`") for row in rows}


def unique_collections(code: str) -> str:
    """Give each Chroma collection in a block a fresh name so blocks can run twice."""
    return re.sub(
        r'Chroma\("([a-z_]+)"', lambda m: f'Chroma("{m.group(1)}_{uuid.uuid4().hex[:8]}"', code
    )


QUICKSTART_MODEL = re.compile(r"^llm = ChatOllama\(.*$", re.MULTILINE)


def test_the_quickstart_defines_its_model() -> None:
    quickstart = section("Quickstart")
    assert QUICKSTART_MODEL.search(quickstart)


@pytest.mark.parametrize("code", [b for b in PYTHON_BLOCKS if "llm" not in b])
def test_offline_python_blocks_run(code: str) -> None:
    exec(compile(unique_collections(code), "README.md", "exec"), {})  # noqa: S102


@pytest.mark.requires_llm
@pytest.mark.parametrize("code", [b for b in PYTHON_BLOCKS if "llm" in b])
def test_model_python_blocks_run(code: str, llm_chat_model: Callable[..., Any]) -> None:
    namespace = {"llm": llm_chat_model(max_tokens=256)}
    code = QUICKSTART_MODEL.sub("", code)  # the local test model stands in for it
    exec(compile(unique_collections(code), "README.md", "exec"), namespace)  # noqa: S102


def test_readme_shows_the_install_line_first() -> None:
    first_section = README[README.index("## ") :]
    assert first_section.startswith("## Installation")
    assert "pip install cogito-lc\n" in first_section[:200]
    assert "needs the `local` extra" in section("Quickstart")[:200].lower()
    assert "make demo" in section("Development")
    assert "make test" in section("Development")


def test_extras_table_lists_exactly_the_extras() -> None:
    with (Path(__file__).resolve().parents[2] / "pyproject.toml").open("rb") as file:
        extras = set(tomllib.load(file)["project"]["optional-dependencies"]) - {"dev"}
    rows = re.findall(r"^\| `([a-z]+)` \| `pip install \"cogito-lc\[([a-z]+)\]\"`", README, re.M)
    assert all(name == installed for name, installed in rows), rows
    assert sorted(name for name, _ in rows) == sorted(extras)


def test_http_table_lists_exactly_the_api(tmp_path: Path) -> None:
    from cogito_lc.service.server import create_app

    settings = CogitoSettings(store_path=tmp_path / "store")
    spec = create_app(settings).openapi()
    actual = {(m.upper(), path) for path, ops in spec["paths"].items() for m in ops}
    rows = [line for line in section("HTTP API").splitlines() if line.startswith("| `")]
    documented = {
        (cells[1].strip().strip("`"), cells[2].strip().strip("`"))
        for cells in (row.split("|") for row in rows)
    }
    assert documented == actual


def test_cli_table_lists_exactly_the_commands() -> None:
    command = typer.main.get_command(cli_app)
    actual: set[str] = set()

    def walk(group: Any, prefix: str) -> None:
        for name, sub in group.commands.items():
            if hasattr(sub, "commands"):
                walk(sub, f"{prefix}{name} ")
            else:
                actual.add(f"cogito-lc {prefix}{name}")

    walk(command, "")
    assert table_column(section("CLI"), 0) == actual


def test_configuration_table_lists_every_setting() -> None:
    documented = table_column(section("Configuration"), 1)
    assert documented == set(CogitoSettings.model_fields)
    env_vars = table_column(section("Configuration"), 0)
    assert env_vars == {f"COGITO_{name.upper()}" for name in CogitoSettings.model_fields}
