"""The CLI in process: ``--server`` values that are not URLs, and stored text shown safely."""

from __future__ import annotations

import importlib
import io
import json
import logging
import sys
import warnings
from pathlib import Path

import pytest

pytest.importorskip("typer", reason="the 'cli' extra is not installed")

from fastapi.testclient import TestClient
from langchain_chroma import Chroma
from rich.console import Console

from cogito_lc import MemoryStore
from cogito_lc.cli._client import EXIT_NOT_FOUND, ApiClient, CliError, check_server_url
from cogito_lc.service.config import CogitoSettings
from cogito_lc.service.server import create_app

cli_app = importlib.import_module("cogito_lc.cli.app")  # the package exports the Typer app

HOSTILE = "NUL\x00 \x1b[31mred\x1b[0m \x1b]0;title\x07 \u202egnp.exe [bold]x[/bold]"
RAW_CONTROLS = ("\x00", "\x1b", "\x07", "\u202e")


def _run(monkeypatch: pytest.MonkeyPatch, *args: str) -> int:
    monkeypatch.setattr(sys, "argv", ["cogito-lc", *args])
    with pytest.raises(SystemExit) as exited:
        cli_app.main()
    return int(exited.value.code or 0)


@pytest.mark.parametrize(
    "server", ["notaurl", "ftp://127.0.0.1:19420", "http://", "http://host:99999", "127.0.0.1"]
)
def test_a_server_that_is_not_an_http_url_exits_2_with_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], server: str
) -> None:
    monkeypatch.delenv("COGITO_SERVER", raising=False)
    code = _run(monkeypatch, "--server", server, "health")
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(lines) == 1
    assert lines[0].startswith("error: --server (COGITO_SERVER) must be an http:// or https://")
    assert repr(server) in lines[0]


def test_the_environment_variable_is_checked_the_same_way(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COGITO_SERVER", "localhost:19420")
    assert _run(monkeypatch, "health") == 2
    assert "COGITO_SERVER" in capsys.readouterr().err


@pytest.mark.parametrize("url", ["http://127.0.0.1:19420", "https://memory.example/api/"])
def test_http_urls_are_accepted(url: str) -> None:
    assert check_server_url(url) == url


def test_a_bad_server_url_is_shown_escaped() -> None:
    with pytest.raises(CliError) as caught:
        check_server_url("\x1b[2Jnot a url")
    assert "\x1b" not in str(caught.value)
    assert "\\x1b[2J" in str(caught.value)


def _capture(monkeypatch: pytest.MonkeyPatch, name: str) -> io.StringIO:
    buffer = io.StringIO()
    monkeypatch.setattr(cli_app, name, Console(file=buffer, width=400, color_system=None))
    return buffer


def test_tables_show_control_characters_as_escapes(monkeypatch: pytest.MonkeyPatch) -> None:
    shown = _capture(monkeypatch, "out")
    answer = {
        "memories": [{"id": "m\x1b[1m1", "text": HOSTILE, "score": 0.5}],
        "method": "decompose_1",
    }
    cli_app._print_hits(answer, raw=False, title=f"query: {HOSTILE}")
    output = shown.getvalue()
    assert not [c for c in RAW_CONTROLS if c in output]
    assert "\\x00" in output
    assert "\\x1b[31mred" in output
    assert "\\u202egnp.exe" in output
    assert "[bold]x[/bold]" in output  # shown as typed, not read as markup
    assert "m\\x1b[1m1" in output


def test_raw_output_keeps_the_text_verbatim(monkeypatch: pytest.MonkeyPatch) -> None:
    shown = _capture(monkeypatch, "out")
    cli_app._print_hits({"memories": [{"id": "m1", "text": HOSTILE}]}, raw=True, title="q")
    assert '"NUL\\u0000 \\u001b[31mred' in shown.getvalue()  # JSON escapes, same text


def test_error_lines_escape_what_they_quote(monkeypatch: pytest.MonkeyPatch) -> None:
    shown = _capture(monkeypatch, "err")
    cli_app._print_error(f"bad input: {HOSTILE}\nsecond line")
    output = shown.getvalue()
    assert not [c for c in RAW_CONTROLS if c in output]
    assert output.count("\n") == 1
    assert output.startswith("error: bad input: NUL\\x00")
    assert "[bold]x[/bold]\\nsecond line" in output


def _log_to_stderr(monkeypatch: pytest.MonkeyPatch, *, debug: bool = False) -> io.StringIO:
    """The CLI's logging set-up on a fresh root logger; stderr, read back. Undone after."""
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])  # pytest's own, added once the test runs
    monkeypatch.setattr(root, "level", root.level)
    monkeypatch.setattr(warnings, "showwarning", warnings.showwarning)
    monkeypatch.setattr(logging, "_warnings_showwarning", None)
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    cli_app._log_to_stderr(debug=debug)
    return stream


@pytest.mark.parametrize("debug", [False, True])
def test_logged_errors_are_one_line_unless_debugging(
    monkeypatch: pytest.MonkeyPatch, debug: bool
) -> None:
    stderr_log = _log_to_stderr(monkeypatch, debug=debug)
    logging.basicConfig(handlers=[logging.StreamHandler()])  # a library's set-up, kept out
    try:
        msg = "model file missing\nsecond line"
        raise OSError(msg)  # noqa: TRY301
    except OSError:
        logging.getLogger("cogito_lc.test").exception("the model did not load")

    lines = stderr_log.getvalue().splitlines()
    assert lines[0] == (
        "error: the model did not load (OSError: model file missing\\nsecond line)"
        if not debug
        else "error: the model did not load"
    )
    assert (len(lines) > 1) is debug
    assert ("Traceback" in stderr_log.getvalue()) is debug


def test_a_warning_is_one_line_without_its_source(monkeypatch: pytest.MonkeyPatch) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        stderr_log = _log_to_stderr(monkeypatch)
        warnings.warn("api_token is short", UserWarning, stacklevel=1)

    assert stderr_log.getvalue().splitlines() == ["warning: UserWarning: api_token is short"]


def test_a_server_url_is_used_without_the_spaces_around_it() -> None:
    assert check_server_url("  http://127.0.0.1:19420\n") == "http://127.0.0.1:19420"


def test_a_path_the_api_lacks_is_a_wrong_url_not_a_missing_memory(
    tmp_path: Path, chroma: Chroma
) -> None:
    settings = CogitoSettings(store_path=tmp_path / "store")
    memory = MemoryStore(chroma)
    memory.store("The deploy key rotates monthly.", id="ops/deploy-key")
    app = create_app(settings, memory=memory, warm_up=False)
    with ApiClient.local(app, token=None) as client:
        with pytest.raises(CliError) as missing:
            client.call("GET", "/history/ops%2Fnot-stored")
        assert missing.value.exit_code == EXIT_NOT_FOUND
        held = client.call("GET", "/history/ops%2Fdeploy-key")
        assert held["current"] == "ops/deploy-key"
        with pytest.raises(CliError, match="no route") as unmatched:
            client.call("GET", "/no/such/route")
        assert unmatched.value.exit_code != EXIT_NOT_FOUND
        with pytest.raises(CliError, match="check the --server URL"):
            client.call("GET", "/ui/static/inspector.css")  # answered, but not JSON
    remote = ApiClient(TestClient(app, base_url="http://127.0.0.1"), "http://127.0.0.1:19420")
    with remote, pytest.raises(CliError, match="check the --server URL") as wrong:
        remote.call("GET", "/wrong/prefix/health")
    assert wrong.value.exit_code == 1


def test_a_text_of_several_lines_keeps_its_lines_and_escapes_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    shown = _capture(monkeypatch, "out")

    cli_app.out.print(cli_app._shown_lines(f"# Snapshot\n- {HOSTILE}\n- second"))

    lines = shown.getvalue().splitlines()
    assert lines[0] == "# Snapshot"
    assert lines[2] == "- second"
    assert not [c for c in RAW_CONTROLS if c in shown.getvalue()]


def test_raw_stream_lines_keep_the_stored_text(monkeypatch: pytest.MonkeyPatch) -> None:
    shown = _capture(monkeypatch, "out")
    text = "Ship it :rocket: [bold]now[/bold]"

    cli_app._print_event("result", {"memories": [{"id": "m1", "text": text}]}, True, "q")

    assert json.loads(shown.getvalue())["data"]["memories"][0]["text"] == text


def test_only_line_feeds_break_lines_other_breaks_stay_escaped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    shown = _capture(monkeypatch, "out")

    cli_app.out.print(cli_app._shown_lines("a\r\nb\x0cc\u2028d"))

    assert shown.getvalue().splitlines() == ["a", "b\\x0cc\\u2028d"]


def test_a_user_id_of_any_script_reaches_the_server_as_its_scope(
    tmp_path: Path, chroma: Chroma
) -> None:
    settings = CogitoSettings(store_path=tmp_path / "store", allow_request_scope=True)
    app = create_app(settings, memory=MemoryStore(chroma), warm_up=False)
    for user in ("zoë", "张三", "alice"):
        with ApiClient.remote("http://127.0.0.1:19420", token=None, user=user) as remote:
            sent = remote._headers  # what the CLI sends: given to this app instead
        served = ApiClient(TestClient(app, base_url="http://127.0.0.1"), remote.where, sent)
        with served:
            served.call("POST", "/store", {"text": f"Note of {user}."})
            listed = served.call("GET", "/memories")
        assert [m["metadata"]["user_id"] for m in listed["memories"]] == [user]


def test_calibrate_without_a_model_says_which_setting_to_configure(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in ("COGITO_SERVER", "COGITO_LLM_MODEL", "COGITO_FILTER_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COGITO_STORE_PATH", str(tmp_path / "store"))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["cogito-lc", "calibrate"])
    shown = _capture(monkeypatch, "err")

    cli_app.main()  # returns: the command succeeded

    lines = shown.getvalue().splitlines()
    assert lines[0] == "method: fallback_no_llm"
    assert "set llm_model (COGITO_LLM_MODEL)" in lines[1]
