"""The cogito-lc CLI on real parts: the embedded store, and a real server over HTTP."""

from __future__ import annotations

import importlib
import io
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from tests.integration_tests.conftest import EXAMPLES_DATA
from tests.integration_tests.model_server import model_server
from tests.integration_tests.service_process import ServiceProcess, free_port, start_service

cli_app = importlib.import_module("cogito_lc.cli.app")  # the package exports the Typer app


def cli(
    *args: str,
    env: dict[str, str],
    cwd: Path,
    check: bool = True,
    timeout: float = 300,
    launcher: tuple[str, ...] = ("-m", "cogito_lc.cli"),
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, *launcher, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=timeout,
        check=False,
    )
    if check and done.returncode != 0:
        pytest.fail(f"cogito-lc {' '.join(args)} -> {done.returncode}\n{done.stderr}")
    return done


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    return {
        **os.environ,
        "HOME": str(home),
        "COGITO_STORE_PATH": str(tmp_path / "store"),
        "HF_HUB_OFFLINE": "1",
        "COLUMNS": "200",
    }


def test_embedded_store_seed_store_recall_and_health(env: dict[str, str], tmp_path: Path) -> None:
    seeded = cli("seed", str(EXAMPLES_DATA), env=env, cwd=tmp_path)
    assert "5 files, 57 chunks: stored 57" in seeded.stdout
    again = cli("seed", str(EXAMPLES_DATA), "--dry-run", env=env, cwd=tmp_path)
    assert "would store 0, skipped 57" in again.stdout

    stored = cli(
        "store",
        "The staging database password rotates every 30 days.",
        "--raw",
        env=env,
        cwd=tmp_path,
    )
    memory_id = json.loads(stored.stdout)["id"]

    recalled = cli(
        "recall-b", "how often does the staging password rotate", "--raw", env=env, cwd=tmp_path
    )
    answer = json.loads(recalled.stdout)
    assert answer["memories"][0]["id"] == memory_id
    assert answer["method"].startswith("decompose_")

    table = cli("query", "Which AWS region does production run in?", env=env, cwd=tmp_path)
    assert "eu-west-1" in table.stdout
    assert "rank" in table.stdout

    two_stage = json.loads(
        cli("recall", "auth token lifetime", "--raw", env=env, cwd=tmp_path).stdout
    )
    assert two_stage["memories"]
    assert "fallback_no_llm" in two_stage["method"]

    health = json.loads(cli("health", "--raw", env=env, cwd=tmp_path).stdout)
    assert health["count"] == 58

    snap = cli("snapshot", "--dry-run", env=env, cwd=tmp_path)
    assert "## " in snap.stdout
    assert "fallback_no_llm" in snap.stderr


WITHOUT_OLLAMA = (
    "-c",
    "import sys; sys.modules['langchain_ollama'] = None; "
    "from cogito_lc.cli.app import main; main()",
)


def test_a_command_that_embeds_without_the_models_extra_names_its_install_line(
    env: dict[str, str], tmp_path: Path
) -> None:
    env = {**env, "COGITO_EMBED_MODEL": "ollama:nomic-embed-text"}
    stored = cli(
        "store", "Auth tokens expire.", env=env, cwd=tmp_path, check=False, launcher=WITHOUT_OLLAMA
    )
    assert stored.returncode == 1, stored.stderr
    assert stored.stderr.count('pip install "cogito-lc[ollama]"') == 1, stored.stderr
    assert "internal server error" not in stored.stderr
    counted = cli("health", env=env, cwd=tmp_path, launcher=WITHOUT_OLLAMA)
    assert "interrupted" not in counted.stderr


def test_errors_are_one_line_with_documented_exit_codes(
    env: dict[str, str], tmp_path: Path
) -> None:
    empty = cli("recall-b", "   ", env=env, cwd=tmp_path, check=False)
    assert empty.returncode == 2
    assert empty.stderr.strip().splitlines() == ["error: query is empty; pass some text."]

    missing = cli("seed", str(tmp_path / "nope"), env=env, cwd=tmp_path, check=False)
    assert missing.returncode == 2
    assert "is not a directory" in missing.stderr
    assert "Traceback" not in missing.stderr

    no_server = cli("--server", "http://127.0.0.1:9", "health", env=env, cwd=tmp_path, check=False)
    assert no_server.returncode == 1
    assert "no cogito-lc server answers at http://127.0.0.1:9" in no_server.stderr
    assert len(no_server.stderr.strip().splitlines()) == 1

    bad_config = tmp_path / "bad.json"
    bad_config.write_text('{"port": 19420,\n "recall_limit": "many"}')
    config = cli("--config", str(bad_config), "health", env=env, cwd=tmp_path, check=False)
    assert config.returncode == 2
    assert "recall_limit" in config.stderr
    assert "Traceback" not in config.stderr

    bad_limit = cli("query", "x", "--limit", "0", env=env, cwd=tmp_path, check=False)
    assert bad_limit.returncode == 2

    unknown = cli("prompts", "show", "nope", env=env, cwd=tmp_path, check=False)
    assert unknown.returncode == 2
    assert "no prompt named 'nope'" in unknown.stderr

    rejected = cli("store", "x", "--id", "no spaces allowed", env=env, cwd=tmp_path, check=False)
    assert rejected.returncode == 2  # the service's 422, in process
    assert rejected.stderr.startswith("error: bad input: id")
    empty_id = cli("store", "x", "--id", "", env=env, cwd=tmp_path, check=False)
    assert empty_id.returncode == 2  # refused as "   " is, not dropped for a hashed id
    assert empty_id.stderr.startswith("error: bad input: id")


def test_seed_with_a_failed_file_exits_1(env: dict[str, str], tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n\nA note that cannot be stored.\n", encoding="utf-8")
    seeded = cli(
        "--server", "http://127.0.0.1:1", "seed", str(notes), env=env, cwd=tmp_path, check=False
    )
    assert "1 failed" in seeded.stdout
    assert seeded.returncode == 1
    assert "Traceback" not in seeded.stderr


def test_argument_that_is_not_utf8_is_bad_input(env: dict[str, str], tmp_path: Path) -> None:
    text = os.fsdecode(b"bad \xff text")  # what the shell passes for $'bad \xff text'
    stored = cli("store", text, env=env, cwd=tmp_path, check=False)
    assert stored.returncode == 2
    assert stored.stderr.strip().splitlines() == [
        "error: text is not valid UTF-8 text (character 5); pass UTF-8 text (check the "
        "terminal's or the file's encoding)."
    ]


@pytest.mark.parametrize("since", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"])
def test_since_out_of_the_date_range_is_bad_input(
    env: dict[str, str], tmp_path: Path, since: str
) -> None:
    recalled = cli("recall", "auth", "--since", since, env=env, cwd=tmp_path, check=False)
    assert recalled.returncode == 2
    assert "--since" in recalled.stderr
    assert "500" not in recalled.stderr
    assert len(recalled.stderr.strip().splitlines()) == 1


def test_config_that_is_a_directory_says_so(env: dict[str, str], tmp_path: Path) -> None:
    done = cli("--config", str(tmp_path), "health", env=env, cwd=tmp_path, check=False)
    assert done.returncode == 2
    assert f"config file {tmp_path} is a directory" in done.stderr


@pytest.mark.parametrize("command", ["serve", "server"])
def test_serve_refuses_an_empty_token(env: dict[str, str], tmp_path: Path, command: str) -> None:
    # Loopback only: before the fix an empty token went unnoticed and this served.
    empty = {**env, "COGITO_API_TOKEN": ""}
    port = str(free_port())
    done = cli(
        command,
        "--host",
        "127.0.0.1",
        "--port",
        port,
        env=empty,
        cwd=tmp_path,
        check=False,
        timeout=60,
    )
    assert done.returncode == 2
    assert "environment variable COGITO_API_TOKEN" in done.stderr
    assert "api_token is empty" in done.stderr


def test_serve_on_a_taken_port_says_so_and_exits_1(env: dict[str, str], tmp_path: Path) -> None:
    import socket

    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        done = cli("serve", "--port", str(port), env=env, cwd=tmp_path, check=False, timeout=60)
    assert done.returncode == 1
    assert f"127.0.0.1:{port} is in use" in done.stderr
    assert "Application startup" not in done.stderr  # refused before the store was opened


def test_server_script_refuses_an_empty_token_in_a_config_file(
    env: dict[str, str], tmp_path: Path
) -> None:
    config = tmp_path / "public.json"
    config.write_text(json.dumps({"host": "0.0.0.0", "api_token": ""}), encoding="utf-8")  # noqa: S104
    done = subprocess.run(
        [sys.executable, "-m", "cogito_lc.service.server", "--config", str(config),
         "--host", "127.0.0.1", "--port", str(free_port())],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "api_token is empty" in done.stderr


def test_help_documents_exit_codes(env: dict[str, str], tmp_path: Path) -> None:
    helped = cli("--help", env=env, cwd=tmp_path)
    assert "Exit codes" in helped.stdout
    listed = cli("prompts", "list", env=env, cwd=tmp_path)
    assert "fact_extraction" in listed.stdout
    shown = cli("prompts", "show", "pointer_filter", env=env, cwd=tmp_path)
    assert '"ids" array holds the numbers' in shown.stdout


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServiceProcess]:
    service = start_service(tmp_path / "server-store")
    try:
        yield service
    finally:
        service.stop()


def test_server_path_goes_through_http(
    env: dict[str, str], tmp_path: Path, server: ServiceProcess
) -> None:
    remote = {**env, "COGITO_SERVER": server.base_url}
    seeded = cli("seed", str(EXAMPLES_DATA), env=remote, cwd=tmp_path)
    assert "57 chunks: stored 57, skipped 0" in seeded.stdout
    again = cli("seed", str(EXAMPLES_DATA), env=remote, cwd=tmp_path)
    assert "57 chunks: stored 0, skipped 57 already stored" in again.stdout
    answer = json.loads(
        cli("recall-b", "How long do auth tokens last?", "--raw", env=remote, cwd=tmp_path).stdout
    )
    assert "3600 seconds" in answer["memories"][0]["text"]
    with server.client() as client:
        assert client.get("/health").json()["count"] == 57  # the second seed wrote nothing
    stored = cli("store", "Deploys go out on Tuesdays.", env=remote, cwd=tmp_path)
    assert stored.stdout.startswith("stored ")
    repeated = cli("store", "Deploys go out on Tuesdays.", env=remote, cwd=tmp_path)
    assert repeated.stdout.startswith("already stored ")
    rejected = cli("store", "x", "--id", "no spaces allowed", env=remote, cwd=tmp_path, check=False)
    assert rejected.returncode == 2  # the service's 422, over HTTP
    assert rejected.stderr.startswith("error: bad input: id")
    # The embedded store named by the configuration was never touched.
    assert not (tmp_path / "store").exists()


def test_flush_a_jsonl_transcript_then_recall_streamed(env: dict[str, str], tmp_path: Path) -> None:
    transcript = tmp_path / "standup-3.jsonl"
    messages = [
        {"role": "user", "content": "The billing database moved to PostgreSQL 16."},
        {"role": "assistant", "content": "Noted, PostgreSQL 16 for billing."},
        {"role": "user", "content": "Release freezes start every Friday at noon."},
    ]
    transcript.write_text("\n".join(json.dumps(m) for m in messages) + "\n", encoding="utf-8")

    flushed = json.loads(
        cli("flush", str(transcript), "--window", "2", "--raw", env=env, cwd=tmp_path).stdout
    )
    assert flushed["windows"] == 2
    assert flushed["count"] == 2
    assert flushed["methods"] == ["fallback_no_llm", "fallback_no_llm"]
    again = json.loads(
        cli("flush", str(transcript), "--window", "2", "--raw", env=env, cwd=tmp_path).stdout
    )
    assert again["count"] == 0
    assert again["skipped_same_id"] == 2

    streamed = cli(
        "recall", "when do release freezes start", "--stream", "--raw", env=env, cwd=tmp_path
    ).stdout
    events = [json.loads(line) for line in streamed.splitlines()]  # JSON Lines
    assert [event["event"] for event in events] == ["candidates", "result"]
    texts = [memory["text"] for memory in events[1]["data"]["memories"]]
    assert any("user: Release freezes start every Friday at noon." in text for text in texts)


def test_flush_names_the_bad_line_of_a_transcript(env: dict[str, str], tmp_path: Path) -> None:
    transcript = tmp_path / "broken.jsonl"
    transcript.write_text('{"role": "user", "content": "ok"}\n{"role": \n', encoding="utf-8")
    done = cli("flush", str(transcript), env=env, cwd=tmp_path, check=False)
    assert done.returncode == 2
    assert "line 2" in done.stderr
    bad_role = tmp_path / "bad.json"
    bad_role.write_text(json.dumps([{"role": "User!", "content": "x"}]), encoding="utf-8")
    done = cli("flush", str(bad_role), env=env, cwd=tmp_path, check=False)
    assert done.returncode == 2
    assert "messages.0.role" in done.stderr


# -- versions: history and forget -------------------------------------------------------


def test_history_and_forget_on_the_embedded_store(env: dict[str, str], tmp_path: Path) -> None:
    phone = json.loads(
        cli("store", "My phone number is 555-0101.", "--raw", env=env, cwd=tmp_path).stdout
    )["id"]
    cli("store", "Deploys freeze on Fridays after 14:00 UTC.", env=env, cwd=tmp_path)
    history = json.loads(cli("history", phone, "--raw", env=env, cwd=tmp_path).stdout)
    assert [v["text"] for v in history["versions"]] == ["My phone number is 555-0101."]
    assert history["current"] == phone

    forgot = json.loads(
        cli(
            "forget", "my phone number", "--reason", "user asked", "--raw", env=env, cwd=tmp_path
        ).stdout
    )
    assert forgot["ids"] == [phone]
    assert forgot["audit"]["reason"] == "user asked"
    for command in ("query", "recall-b"):
        found = json.loads(cli(command, "phone number", "--raw", env=env, cwd=tmp_path).stdout)
        assert all("555" not in m["text"] for m in found["memories"]), command
        assert found["memories"], command  # the other memory is still there

    gone = cli("history", phone, env=env, cwd=tmp_path, check=False)
    assert gone.returncode == 4
    assert gone.stderr.startswith("error: not found")
    again = cli("forget", "--id", phone, env=env, cwd=tmp_path, check=False)
    assert again.returncode == 4
    nothing = cli("forget", "my passport number", env=env, cwd=tmp_path, check=False)
    assert nothing.returncode == 4
    assert "matches the query" in nothing.stderr
    for usage in (("forget",), ("forget", "x", "--id", "y"), ("forget", "  "), ("history", " ")):
        done = cli(*usage, env=env, cwd=tmp_path, check=False)
        assert done.returncode == 2, (usage, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert "Traceback" not in done.stderr


def test_commands_that_embed_nothing_load_no_model(env: dict[str, str], tmp_path: Path) -> None:
    memory_id = json.loads(
        cli("store", "Deploys freeze on Fridays.", "--raw", env=env, cwd=tmp_path).stdout
    )["id"]
    probe = (
        "import runpy, sys\n"
        "sys.argv = ['cogito-lc', *sys.argv[1:]]\n"
        "try:\n    runpy.run_module('cogito_lc.cli', run_name='__main__')\n"
        "finally:\n    print('model loaded:', 'sentence_transformers' in sys.modules)\n"
    )
    for command in (["health", "--raw"], ["history", memory_id, "--raw"]):
        done = cli(*command, env=env, cwd=tmp_path, launcher=("-c", probe))
        answer, loaded = done.stdout.rsplit("model loaded:", 1)
        assert loaded.strip() == "False", command
        assert json.loads(answer), command
    recalled = cli("recall-b", "when do deploys freeze", "--raw", env=env, cwd=tmp_path)
    assert json.loads(recalled.stdout)["memories"][0]["id"] == memory_id


def test_in_process_commands_ignore_the_host_a_server_would_bind(
    env: dict[str, str], tmp_path: Path
) -> None:
    exposed = {**env, "COGITO_HOST": "0.0.0.0"}  # noqa: S104 - a server's setting, unused here
    assert cli("serve", env=exposed, cwd=tmp_path, check=False).returncode == 2  # a server would
    stored = cli("store", "Deploys freeze on Fridays.", "--raw", env=exposed, cwd=tmp_path)
    assert json.loads(stored.stdout)["created"] is True
    assert json.loads(cli("health", "--raw", env=exposed, cwd=tmp_path).stdout)["count"] == 1


def test_history_and_forget_through_a_server(
    env: dict[str, str], tmp_path: Path, server: ServiceProcess
) -> None:
    with server.client() as client:
        old = client.post("/store", json={"text": "Dana edits code in Vim."}).json()["id"]
        new = client.post(
            "/store", json={"text": "Dana switched to VS Code.", "supersedes": [old]}
        ).json()["id"]
    remote = {**env, "COGITO_SERVER": server.base_url}
    history = json.loads(cli("history", new, "--raw", env=remote, cwd=tmp_path).stdout)
    assert [v["id"] for v in history["versions"]] == [old, new]
    assert history["versions"][0]["metadata"]["superseded_by"] == new
    table = cli("history", old, env=remote, cwd=tmp_path).stdout
    assert "Vim" in table
    assert "VS Code" in table
    assert "(current)" in table
    forgot = json.loads(cli("forget", "--id", old, "--raw", env=remote, cwd=tmp_path).stdout)
    assert set(forgot["ids"]) == {old, new}
    with server.client() as client:
        assert client.get(f"/memories/{new}").status_code == 404
        assert client.get("/health").json()["count"] == 0
    other = cli("--user", "bob", "forget", "--id", new, env=remote, cwd=tmp_path, check=False)
    assert other.returncode == 1  # refused: this server allows no per-request scope
    assert "allow_request_scope" in other.stderr
    assert not (tmp_path / "store").exists()


def _run_in_process(*args: str) -> Any:
    """``cogito-lc ARGS --raw`` in this process; the JSON it prints."""
    buffer, shown = io.StringIO(), cli_app.out
    cli_app.out = Console(file=buffer, width=400, color_system=None)
    try:
        cli_app.app([*args, "--raw"], standalone_mode=False)
    finally:
        cli_app.out = shown
    return json.loads(buffer.getvalue())


def test_search_commands_default_to_the_limits_of_the_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [n for n in os.environ if n.upper().startswith("COGITO_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "cogito.json"
    settings = {"store_path": str(tmp_path / "store"), "recall_limit": 2, "query_limit": 1}
    config.write_text(json.dumps(settings), encoding="utf-8")
    for region in ("eu-west-1", "us-east-1", "ap-south-1", "eu-central-1"):
        _run_in_process("--config", str(config), "store", f"Production deploys run in {region}.")

    for command, limit in (("recall-b", 2), ("recall", 2), ("query", 1)):
        answer = _run_in_process("--config", str(config), command, "where do deploys run")
        assert len(answer["memories"]) == limit, command
    wider = _run_in_process("--config", str(config), "query", "deploys", "--limit", "3")
    assert len(wider["memories"]) == 3


def test_ctrl_c_ends_an_in_process_command_waiting_for_the_model(
    env: dict[str, str], tmp_path: Path
) -> None:
    cli("store", "Search p95 latency is 250 ms.", env=env, cwd=tmp_path)
    with model_server(delay=120) as server:
        slow = {
            **env,
            "COGITO_LLM_MODEL": "openai:m",
            "COGITO_FILTER_ENDPOINT": f"{server.url}/v1",
            "COGITO_FILTER_TIMEOUT_MS": "120000",
        }
        command = [sys.executable, "-m", "cogito_lc.cli", "calibrate"]
        process = subprocess.Popen(
            command, env=slow, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        try:
            deadline = time.monotonic() + 120
            while not server.received and time.monotonic() < deadline:
                time.sleep(0.1)
            assert server.received, "the model was never asked"
            process.send_signal(signal.SIGINT)
            _, stderr = process.communicate(timeout=20)
        finally:
            process.kill()
    assert process.returncode == 130
    assert stderr.decode().strip().splitlines()[-1] == "interrupted"
    assert "Traceback" not in stderr.decode()
    assert not (tmp_path / "store" / "vocab_map.json").exists()
