"""A non-loopback bind needs a token of MIN_API_TOKEN_CHARS, or allow_short_token."""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import pytest

from cogito_lc.service import server
from cogito_lc.service.config import MIN_API_TOKEN_CHARS, CogitoSettings, ConfigError
from cogito_lc.service.server import check_bind

SHORT = "s3kr"
EXACT = "x" * MIN_API_TOKEN_CHARS


@pytest.fixture(autouse=True)
def _clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No config file or COGITO_* variable of the developer's."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in [n for n in os.environ if n.startswith("COGITO_")]:
        monkeypatch.delenv(name)


def _settings(**values: Any) -> CogitoSettings:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the short token's warning
        return CogitoSettings(**values)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.20", "::"])  # noqa: S104
def test_a_short_token_on_a_public_address_is_refused(host: str) -> None:
    with pytest.raises(ConfigError) as refused:
        check_bind(_settings(host=host, api_token=SHORT))
    message = str(refused.value)
    assert f"has {len(SHORT)} characters" in message
    assert f"at least {MIN_API_TOKEN_CHARS}" in message
    assert "COGITO_ALLOW_SHORT_TOKEN" in message
    assert SHORT not in message  # the token itself is never shown


def test_a_token_of_the_minimum_length_is_enough() -> None:
    check_bind(_settings(host="0.0.0.0", api_token=EXACT))  # noqa: S104
    with pytest.raises(ConfigError):
        check_bind(_settings(host="0.0.0.0", api_token=EXACT[1:]))  # noqa: S104


def test_the_override_accepts_the_risk() -> None:
    check_bind(_settings(host="0.0.0.0", api_token=SHORT, allow_short_token=True))  # noqa: S104


def test_loopback_keeps_the_warning_only() -> None:
    with pytest.warns(UserWarning, match="shorter than 16 characters"):
        settings = CogitoSettings(host="127.0.0.1", api_token=SHORT)
    check_bind(settings)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_the_server_script_exits_2_before_serving(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    served: list[Any] = []
    monkeypatch.setattr(server, "serve", lambda *args, **kwargs: served.append(args))
    monkeypatch.setenv("COGITO_API_TOKEN", SHORT)
    with pytest.raises(SystemExit) as exited:
        server.main(["--host", "0.0.0.0", "--port", "19499"])  # noqa: S104
    assert exited.value.code == 2
    assert not served
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1
    assert "COGITO_ALLOW_SHORT_TOKEN" in lines[0]
