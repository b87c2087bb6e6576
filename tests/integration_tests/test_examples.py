"""Every example runs: offline ones as they are, model ones against the local llama.cpp server."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration_tests.llm_server import LlamaServer

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# An address where nothing listens, so examples never find a developer's Ollama.
NO_OLLAMA = "http://127.0.0.1:9"


def run(script: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, f"{script} exited {done.returncode}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture
def offline_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COGITO_", "OPENAI_"))}
    return {**env, "HOME": str(tmp_path), "HF_HUB_OFFLINE": "1", "OLLAMA_HOST": NO_OLLAMA}


@pytest.fixture
def model_env(offline_env: dict[str, str], llama_server: LlamaServer) -> dict[str, str]:
    return {
        **offline_env,
        "COGITO_FILTER_ENDPOINT": llama_server.base_url,
        "COGITO_FILTER_MODEL": llama_server.model,
        "COGITO_STRUCTURED_OUTPUT": "json_object",
    }


SERVER_MODULES = ("fastapi", "uvicorn")
# demo.py starts the HTTP service; the others need the local extra and a model's.
WITHOUT_SERVER = [
    "quickstart.py",
    "rag_chain.py",
    "agent_memory_loop.py",
    "memory/fact_extraction.py",
    "custom_prompts.py",
]


@pytest.mark.parametrize("script", WITHOUT_SERVER)
def test_an_example_imports_without_the_server_extra(script: str) -> None:
    tree = ast.parse((EXAMPLES / script).read_text(encoding="utf-8"))
    imports = [
        node
        for node in tree.body
        if isinstance(node, ast.Import)
        or (isinstance(node, ast.ImportFrom) and node.module != "__future__")
    ]
    blocked = "".join(f"sys.modules[{name!r}] = None; " for name in SERVER_MODULES)
    code = f"import sys; {blocked}\n" + "\n".join(ast.unparse(node) for node in imports)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_quickstart(offline_env: dict[str, str]) -> None:
    out = run("quickstart.py", offline_env).stdout
    assert out.splitlines()[0].startswith("auth | Auth tokens expire after 3600 seconds")


def test_custom_prompts(offline_env: dict[str, str]) -> None:
    out = run("custom_prompts.py", offline_env).stdout
    assert "List the billing facts" in out
    assert "version billing-2" in out


def test_demo_without_a_model(offline_env: dict[str, str]) -> None:
    out = run("demo.py", offline_env).stdout
    assert "No chat model" in out
    assert "57 chunks: stored 57" in out
    assert "grouped|fallback_no_llm" in out
    assert "fallback_no_llm" in out
    assert '"method": "decompose_' in out


def test_agent_memory_loop_without_a_model(offline_env: dict[str, str]) -> None:
    out = run("agent_memory_loop.py", offline_env).stdout
    last_turn = out.split("turn 3:")[1]
    assert "integer cents" in last_turn.split("answer:")[0]


@pytest.mark.requires_llm
def test_agent_memory_loop_with_the_local_model(model_env: dict[str, str]) -> None:
    out = run("agent_memory_loop.py", model_env).stdout
    assert "model: " in out
    assert out.count("stored ") == 3


@pytest.mark.requires_llm
def test_fact_extraction_example(model_env: dict[str, str]) -> None:
    out = run("memory/fact_extraction.py", model_env).stdout
    # The tiny local model often copies the prompt's example ("..."), no fact: the
    # example then says so, as for a reply it could not parse.
    facts = [line for line in out.splitlines() if line.startswith("- [")]
    if facts:
        assert "method: structured" in out
    else:
        assert "method: parse_error" in out
        assert "(no facts extracted)" in out


@pytest.mark.requires_llm
def test_rag_chain_example(model_env: dict[str, str]) -> None:
    # One question (the example asks three without any): each costs a filter call and
    # an answer of up to 512 tokens on the local model.
    question = "How long do auth tokens last?"
    lines = run("rag_chain.py", model_env, question).stdout.splitlines()
    asked = lines.index(f"Q: {question}")
    tag = re.fullmatch(r"   \[([^,\]]+), (\d+) memories\]", lines[asked + 1])
    assert tag is not None, lines[asked + 1]
    assert tag[1] != "None"
    assert 1 <= int(tag[2]) <= 4
    assert lines[asked + 2].startswith("A: ")


def test_langgraph_agent(offline_env: dict[str, str]) -> None:
    pytest.importorskip("langmem")
    out = run("langgraph_agent.py", offline_env).stdout
    recalled = out.split("thread-2 | agent:")[1].splitlines()[0]
    assert recalled.strip() == "From memory: Money amounts in the billing API are integer cents."
    assert "alice's scope holds 2 memories" in out
