"""Settings: priority of sources, file lookup, --config, secrets, and errors naming their source."""

from __future__ import annotations

import inspect
import json
import logging
import os
import re
import sys
import warnings
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from langchain_chroma import Chroma
from pydantic import SecretStr

from cogito_lc import MemoryStore
from cogito_lc.service.config import (
    CogitoSettings,
    ConfigError,
    is_loopback,
    load_settings,
    route_model_string,
    split_model_string,
)
from cogito_lc.service.models import chat_model_from_settings, embeddings_from_settings
from cogito_lc.service.server import check_bind, create_app

STRONG_TOKEN = "a-long-enough-random-test-token"  # noqa: S105 - a test value


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A clean environment: cwd and HOME in tmp, no COGITO_* variables."""
    cwd, home = tmp_path / "project", tmp_path / "home"
    cwd.mkdir()
    (home / ".cogito").mkdir(parents=True)
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("HOME", str(home))
    for name in list(os.environ):
        if name.upper().startswith("COGITO_") or name.upper() == "ANTHROPIC_API_KEY":
            monkeypatch.delenv(name)
    return cwd / ".cogito.json", home / ".cogito" / "config.json"


def _write(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_defaults_are_the_reference_defaults(places: tuple[Path, Path]) -> None:
    settings = load_settings()
    assert settings.port == 19420
    assert settings.host == "127.0.0.1"
    assert settings.user_id == "agent"
    assert settings.filter_timeout_ms == 12000
    assert settings.collection == "cogito_memory"
    assert settings.ollama_url == "http://localhost:11434"
    assert settings.recall_limit == 50
    assert settings.store_path == Path.home() / ".cogito" / "store"
    assert settings.embed_model == "huggingface:all-MiniLM-L6-v2"
    assert settings.filter_model is None
    assert settings.chat_model is None


def test_priority_env_over_cwd_file_over_home_file_over_defaults(
    places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    cwd_file, home_file = places
    _write(home_file, {"port": 1001, "user_id": "home", "collection": "home_c", "recall_limit": 7})
    _write(cwd_file, {"port": 1002, "user_id": "cwd", "collection": "cwd_c"})
    monkeypatch.setenv("COGITO_PORT", "1003")
    settings = load_settings()
    assert settings.port == 1003  # environment
    assert settings.user_id == "cwd"  # ./.cogito.json over ~/.cogito/config.json
    assert settings.recall_limit == 7  # only in the home file
    assert settings.query_limit == 5  # default
    assert load_settings(port=1004).port == 1004  # explicit overrides beat everything


def test_home_file_alone_is_read(places: tuple[Path, Path]) -> None:
    _write(places[1], {"user_id": "from-home"})
    assert load_settings().user_id == "from-home"


def test_explicit_config_replaces_the_lookup(places: tuple[Path, Path], tmp_path: Path) -> None:
    cwd_file, home_file = places
    _write(cwd_file, {"user_id": "cwd", "port": 1002})
    _write(home_file, {"collection": "home_c"})
    explicit = _write(tmp_path / "explicit.json", {"user_id": "explicit"})
    settings = load_settings(explicit)
    assert settings.user_id == "explicit"
    assert settings.port == 19420  # the cwd file was not read
    assert settings.collection == "cogito_memory"  # nor the home file


def test_missing_explicit_config_is_an_error(places: tuple[Path, Path], tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.json does not exist"):
        load_settings(tmp_path / "nope.json")


def test_json_syntax_error_names_file_and_line(places: tuple[Path, Path]) -> None:
    cwd_file, _ = places
    cwd_file.write_text('{\n  "port": 1234,\n  "user_id": "x",\n}\n', encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_settings()
    message = str(caught.value)
    assert str(cwd_file) in message
    assert "line 4" in message


def test_bad_value_names_file_and_key(places: tuple[Path, Path]) -> None:
    _write(places[1], {"port": "not a port"})
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert f"config file {places[1]}: key 'port'" in str(caught.value)
    assert "not a port" not in str(caught.value)  # values are never repeated


def test_bad_value_in_environment_names_the_variable(
    places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COGITO_RECALL_LIMIT", "900")
    with pytest.raises(ConfigError, match="environment variable COGITO_RECALL_LIMIT"):
        load_settings()


def test_unknown_key_is_an_error_with_a_suggestion(places: tuple[Path, Path]) -> None:
    _write(places[0], {"prot": 1})
    with pytest.raises(ConfigError, match=r"unknown key 'prot' \(did you mean 'port'\?\)"):
        load_settings()


def test_a_misspelled_environment_variable_warns_with_a_suggestion(
    places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COGITO_RECAL_LIMIT", "5")
    with pytest.warns(
        UserWarning,
        match=r"COGITO_RECAL_LIMIT is not a cogito setting .* "
        r"did you mean COGITO_RECALL_LIMIT\?",
    ):
        settings = load_settings()
    assert settings.recall_limit == 50


def test_known_environment_variables_do_not_warn(
    places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COGITO_RECALL_LIMIT", "5")
    monkeypatch.setenv("COGITO_ANTHROPIC_API_KEY", "")
    monkeypatch.setenv("COGITO_PROMPTS_DIR", str(places[0].parent))
    monkeypatch.setenv("COGITO_SERVER", "http://127.0.0.1:19420")
    monkeypatch.setenv("COGITO_OLLAMA_MODEL", "qwen2.5:3b")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load_settings().recall_limit == 5


@pytest.mark.parametrize("key", ["port", "recall_limit", "recall_threshold", "worker_threads"])
def test_a_boolean_is_not_a_number(places: tuple[Path, Path], key: str) -> None:
    _write(places[0], {key: True})
    with pytest.raises(ConfigError, match=f"key {key!r}.*must be a number, got true"):
        load_settings()


@pytest.mark.parametrize("url", ["localhost:8080", "ftp://gw", "http://", " "])
def test_a_model_endpoint_must_be_an_http_url(places: tuple[Path, Path], url: str) -> None:
    _write(places[0], {"ollama_url": url})
    with pytest.raises(ConfigError, match="ollama_url must be an http:// or https:// URL"):
        load_settings()


def test_a_filter_endpoint_is_checked_and_a_blank_one_is_none(places: tuple[Path, Path]) -> None:
    _write(places[0], {"filter_endpoint": "127.0.0.1:8080/v1"})
    with pytest.raises(ConfigError, match="filter_endpoint must be an http:// or https:// URL"):
        load_settings()
    _write(places[0], {"filter_endpoint": "  "})
    assert load_settings().filter_endpoint is None
    _write(places[0], {"filter_endpoint": " http://127.0.0.1:8080/v1 "})
    assert load_settings().filter_endpoint == "http://127.0.0.1:8080/v1"


def test_config_path_that_is_a_directory_says_so(places: tuple[Path, Path], tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"is a directory; pass the path of a JSON file"):
        load_settings(tmp_path)


@pytest.mark.parametrize("token", ["", "   ", "\t\n"])
def test_blank_api_token_in_the_environment_is_an_error(
    places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, token: str
) -> None:
    monkeypatch.setenv("COGITO_API_TOKEN", token)
    monkeypatch.setenv("COGITO_HOST", "0.0.0.0")  # noqa: S104 - only validated, never bound
    with pytest.raises(ConfigError, match="environment variable COGITO_API_TOKEN") as caught:
        load_settings()
    assert "api_token is empty" in str(caught.value)


def test_blank_api_token_in_a_config_file_is_an_error(places: tuple[Path, Path]) -> None:
    _write(places[0], {"host": "0.0.0.0", "api_token": ""})  # noqa: S104
    with pytest.raises(ConfigError, match=r"key 'api_token': .*api_token is empty"):
        load_settings()


def test_blank_api_token_given_in_code_is_an_error(places: tuple[Path, Path]) -> None:
    with pytest.raises(ConfigError, match="api_token is empty"):
        load_settings(api_token=" ")  # noqa: S106 - a test value
    with pytest.raises(ValueError, match="api_token is empty"):
        CogitoSettings(host="0.0.0.0", api_token="")  # noqa: S104


@pytest.mark.parametrize(
    "token",
    ["pässwört-Überall-2026-Schlüssel", "  padded-token-0123456789abcd  ", "tab\ttoken-0123456789"],
)
def test_a_token_no_header_can_carry_is_an_error(
    places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, token: str
) -> None:
    monkeypatch.setenv("COGITO_API_TOKEN", token)
    with pytest.raises(ConfigError, match="COGITO_API_TOKEN") as caught:
        load_settings()
    assert "printable ASCII without spaces around it" in str(caught.value)
    assert token.strip() not in str(caught.value)  # the token itself is never shown


def test_every_accepted_token_authenticates_the_api_and_the_inspector(
    places: tuple[Path, Path], chroma: Chroma
) -> None:
    memory = MemoryStore(chroma, scope={"user_id": "agent"})
    token = "a token with inner spaces ~!#$%&'*+-.^_`|"  # noqa: S105 - printable ASCII
    app = create_app(CogitoSettings(api_token=token), memory=memory)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        api = client.get("/memories", headers={"Authorization": f"Bearer {token}"})
        page = client.get("/ui/login")
        nonce = re.search(r'name="nonce" value="([^"]+)"', page.text)
        assert nonce is not None
        form = {"nonce": nonce.group(1), "token": token}
        login = client.post("/ui/login", data=form, follow_redirects=False)
    assert (api.status_code, login.status_code) == (200, 303)


def test_every_accepted_token_makes_the_bind_check_and_the_app_agree(
    places: tuple[Path, Path],
) -> None:
    public = CogitoSettings(host="0.0.0.0", api_token=STRONG_TOKEN)  # noqa: S104
    check_bind(public)  # a token: the bind is allowed ...
    assert public.api_token  # ... and the app, which tests truthiness, requires it
    with pytest.raises(ConfigError, match="not a loopback address"):
        check_bind(CogitoSettings(host="0.0.0.0"))  # noqa: S104


def test_short_api_token_warns(places: tuple[Path, Path]) -> None:
    with pytest.warns(UserWarning, match="shorter than 16 characters"):
        load_settings(api_token="short-token")  # noqa: S106 - a test value
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_settings(api_token=STRONG_TOKEN)


# -- the reference design's configuration, as its README writes it -----------------------


def test_reference_example_config_goes_to_its_gateway_as_is(places: tuple[Path, Path]) -> None:
    _write(
        places[0],
        {
            "filter_endpoint": "http://your-gateway/",
            "filter_token": "your-token",
            "filter_model": "anthropic/claude-haiku-4-5",
        },
    )
    settings = load_settings()
    chat = chat_model_from_settings(settings)
    assert type(chat).__name__ == "ChatOpenAI"
    assert chat.model_name == "anthropic/claude-haiku-4-5"  # type: ignore[union-attr]
    assert chat.openai_api_base == "http://your-gateway/"  # type: ignore[union-attr]
    assert chat.openai_api_key.get_secret_value() == "your-token"  # type: ignore[union-attr]
    # Extraction falls back to the filter model, so it goes to the gateway too.
    assert type(chat_model_from_settings(settings, purpose="extract")).__name__ == "ChatOpenAI"


def test_reference_default_models_mean_ollama(places: tuple[Path, Path]) -> None:
    _write(places[0], {"llm_model": "mistral:7b", "embed_model": "nomic-embed-text"})
    settings = load_settings()
    chat = chat_model_from_settings(settings, purpose="extract")
    assert type(chat).__name__ == "ChatOllama"
    assert chat.model == "mistral:7b"  # type: ignore[union-attr]
    embeddings = embeddings_from_settings(settings)
    assert type(embeddings).__name__ == "OllamaEmbeddings"
    assert embeddings.model == "nomic-embed-text"  # type: ignore[attr-defined]


def test_an_unprefixed_llm_model_stays_on_ollama_with_a_gateway(places: tuple[Path, Path]) -> None:
    settings = CogitoSettings(
        filter_endpoint="http://127.0.0.1:8080/v1", filter_model="qwen3.5:2b", llm_model="qwen3:4b"
    )
    assert type(chat_model_from_settings(settings)).__name__ == "ChatOpenAI"
    assert type(chat_model_from_settings(settings, purpose="extract")).__name__ == "ChatOllama"


@pytest.mark.parametrize(
    ("source", "model"),
    [("env", "anthropic/claude-haiku-4-5"), ("file", "anthropic:claude-haiku-4-5")],
)
def test_anthropic_key_and_model_use_langchain_anthropic(
    places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, source: str, model: str
) -> None:
    if source == "env":
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key")
        _write(places[0], {"filter_model": model})
    else:
        _write(places[0], {"anthropic_api_key": "sk-ant-test-key", "filter_model": model})
    settings = load_settings(filter_timeout_ms=3000)
    assert "sk-ant-test-key" not in repr(settings)
    chat = chat_model_from_settings(settings)
    assert type(chat).__name__ == "ChatAnthropic"
    assert chat.model == "claude-haiku-4-5"  # type: ignore[union-attr]
    assert chat.anthropic_api_key.get_secret_value() == "sk-ant-test-key"  # type: ignore[union-attr]
    assert chat.default_request_timeout == 3.0  # type: ignore[union-attr]


def test_cogito_prefixed_anthropic_key_wins_over_the_shared_one(
    places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-shared")
    monkeypatch.setenv("COGITO_ANTHROPIC_API_KEY", "sk-cogito")
    key = load_settings().anthropic_api_key
    assert key is not None
    assert key.get_secret_value() == "sk-cogito"


def test_anthropic_model_without_a_key_says_what_to_set(
    places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "")  # exported empty: no key
    _write(places[0], {"filter_model": "anthropic/claude-haiku-4-5"})
    with pytest.raises(ConfigError) as caught:
        load_settings()
    message = str(caught.value)
    assert f"config file {places[0]}: key 'filter_model'" in message
    assert "ANTHROPIC_API_KEY" in message
    assert "filter_endpoint" in message


@pytest.mark.parametrize("blank", ["", "  "])
def test_a_blank_key_in_the_environment_leaves_the_config_files_key(
    places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, blank: str
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", blank)
    monkeypatch.setenv("COGITO_FILTER_TOKEN", blank)
    _write(
        places[0],
        {
            "filter_model": "anthropic/claude-haiku-4-5",
            "anthropic_api_key": "sk-ant-from-file",
            "filter_token": "token-from-file",
        },
    )
    settings = load_settings()
    assert settings.anthropic_api_key is not None
    assert settings.anthropic_api_key.get_secret_value() == "sk-ant-from-file"
    assert settings.filter_token is not None
    assert settings.filter_token.get_secret_value() == "token-from-file"


def test_missing_anthropic_extra_is_named(
    places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "langchain_anthropic", None)  # as if not installed
    settings = CogitoSettings(anthropic_api_key="sk-ant-x", filter_model="anthropic:claude")
    with pytest.raises(
        ImportError, match=r"'anthropic' extra: pip install \"cogito-lc\[anthropic\]\""
    ):
        chat_model_from_settings(settings)


@pytest.mark.parametrize(("key", "value"), [("recall_threshold", 400), ("query_threshold", 250.0)])
def test_reference_thresholds_say_what_to_write_instead(
    places: tuple[Path, Path], key: str, value: float
) -> None:
    _write(places[0], {key: value})
    with pytest.raises(ConfigError) as caught:
        load_settings()
    message = str(caught.value)
    assert f"config file {places[0]}: key {key!r}" in message
    assert "cosine-similarity floor between -1 and 1" in message
    assert f"write {key}: 0.3" in message
    assert "leave the key out" in message


def test_similarity_thresholds_load(places: tuple[Path, Path]) -> None:
    _write(places[0], {"recall_threshold": 0.2, "query_threshold": -1})
    settings = load_settings()
    assert (settings.recall_threshold, settings.query_threshold) == (0.2, -1.0)


def test_file_must_hold_an_object(places: tuple[Path, Path]) -> None:
    _write(places[0], ["port", 1])
    with pytest.raises(ConfigError, match="must hold a JSON object"):
        load_settings()


def test_secrets_are_masked_everywhere(
    places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _write(places[0], {"filter_token": "file-secret-123"})
    monkeypatch.setenv("COGITO_API_TOKEN", "env-secret-456-long-enough")
    with caplog.at_level(logging.DEBUG):
        settings = load_settings()
    assert isinstance(settings.filter_token, SecretStr)
    assert settings.filter_token.get_secret_value() == "file-secret-123"
    assert settings.api_token is not None
    assert settings.api_token.get_secret_value() == "env-secret-456-long-enough"
    for shown in (repr(settings), str(settings), settings.model_dump_json(), caplog.text):
        assert "file-secret-123" not in shown
        assert "env-secret-456-long-enough" not in shown
    assert "**********" in repr(settings)


def test_bad_secret_type_error_does_not_echo(places: tuple[Path, Path]) -> None:
    _write(places[0], {"api_token": ["leaked-secret"]})
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert "api_token" in str(caught.value)
    assert "leaked-secret" not in str(caught.value)


def test_vocab_map_from_file_and_from_json_env(
    places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(places[0], {"vocab_map": {"how fast": ["latency", "p95"]}})
    assert load_settings().vocab_map == {"how fast": ["latency", "p95"]}
    monkeypatch.setenv("COGITO_VOCAB_MAP", '{"db": ["postgres"]}')
    assert load_settings().vocab_map == {"db": ["postgres"]}  # replaced, as every setting is
    monkeypatch.setenv("COGITO_VOCAB_MAP", "{}")
    assert load_settings().vocab_map == {}


def test_a_map_in_a_nearer_file_replaces_the_home_files_map(places: tuple[Path, Path]) -> None:
    _write(places[0], {"vocab_map": {"db": ["postgres"]}})
    _write(places[1], {"vocab_map": {"how fast": ["latency"]}, "recall_limit": 7})
    settings = load_settings()
    assert (settings.vocab_map, settings.recall_limit) == ({"db": ["postgres"]}, 7)


@pytest.mark.parametrize("variable", ["ANTHROPIC_API_KEY", "COGITO_ANTHROPIC_API_KEY"])
def test_an_anthropic_key_in_the_environment_wins_over_the_files(
    places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    _write(places[0], {"anthropic_api_key": "sk-ant-from-the-file-0123"})
    monkeypatch.setenv(variable, "sk-ant-from-the-environment")
    key = load_settings().anthropic_api_key
    assert key is not None
    assert key.get_secret_value() == "sk-ant-from-the-environment"


def test_an_empty_store_path_is_refused_not_the_working_directory(
    places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COGITO_STORE_PATH", " ")
    with pytest.raises(ConfigError, match=r"COGITO_STORE_PATH.*store_path is empty"):
        load_settings()


def test_store_path_expands_the_home_directory(places: tuple[Path, Path]) -> None:
    _write(places[0], {"store_path": "~/memories"})
    assert load_settings().store_path == Path.home() / "memories"


@pytest.mark.parametrize("value", ["openai:", "ollama: ", "anthropic:", "  "])
def test_chat_model_must_name_a_model(
    places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("COGITO_FILTER_MODEL", value)
    with pytest.raises(
        ConfigError, match=r"environment variable COGITO_FILTER_MODEL.*filter_model"
    ):
        load_settings()


@pytest.mark.parametrize(
    ("value", "gateway", "route"),
    [
        ("ollama:qwen3:4b", False, ("ollama", "qwen3:4b")),
        ("openai:gemma-3-270m", False, ("openai", "gemma-3-270m")),
        ("anthropic:claude-haiku-4-5", True, ("anthropic", "claude-haiku-4-5")),
        ("anthropic/claude-haiku-4-5", False, ("anthropic", "claude-haiku-4-5")),
        ("anthropic/claude-haiku-4-5", True, ("openai", "anthropic/claude-haiku-4-5")),
        ("mistral:7b", False, ("ollama", "mistral:7b")),
        ("gpt-4o", True, ("openai", "gpt-4o")),
        ("gpt-4o", False, ("ollama", "gpt-4o")),
    ],
)
def test_model_strings_route_as_the_reference_reads_them(
    value: str, gateway: bool, route: tuple[str, str]
) -> None:
    providers = ("ollama", "openai", "anthropic")
    assert route_model_string(value, key="k", providers=providers, gateway=gateway) == route


def test_model_string_splits_at_the_first_colon() -> None:
    assert split_model_string("ollama:qwen3:4b", key="k", providers=["ollama"]) == (
        "ollama",
        "qwen3:4b",
    )


def test_llm_model_falls_back_to_the_filter_model(places: tuple[Path, Path]) -> None:
    settings = CogitoSettings(filter_model="ollama:qwen3:4b")
    assert settings.chat_model == "ollama:qwen3:4b"
    assert CogitoSettings(filter_model="ollama:a", llm_model="ollama:b").chat_model == "ollama:b"


def test_no_model_means_no_chat_model(places: tuple[Path, Path]) -> None:
    assert chat_model_from_settings(CogitoSettings()) is None
    assert chat_model_from_settings(CogitoSettings(), purpose="extract") is None


def test_openai_model_points_at_the_endpoint_with_the_token(places: tuple[Path, Path]) -> None:
    settings = CogitoSettings(
        filter_model="openai:gemma-3-270m",
        filter_endpoint="http://127.0.0.1:8080/v1",
        filter_token="tok-789",  # noqa: S106 - a test value
        filter_timeout_ms=2500,
    )
    chat = chat_model_from_settings(settings)
    assert type(chat).__name__ == "ChatOpenAI"
    assert chat.model_name == "gemma-3-270m"  # type: ignore[union-attr]
    assert chat.openai_api_base == "http://127.0.0.1:8080/v1"  # type: ignore[union-attr]
    assert chat.openai_api_key.get_secret_value() == "tok-789"  # type: ignore[union-attr]
    assert chat.request_timeout == 2.5  # type: ignore[union-attr]


def test_ollama_model_points_at_the_ollama_url(places: tuple[Path, Path]) -> None:
    settings = CogitoSettings(llm_model="ollama:qwen3:4b", ollama_url="http://127.0.0.1:11500")
    chat = chat_model_from_settings(settings, purpose="extract")
    assert type(chat).__name__ == "ChatOllama"
    assert chat.model == "qwen3:4b"  # type: ignore[union-attr]
    assert chat.base_url == "http://127.0.0.1:11500"  # type: ignore[union-attr]


def test_ollama_embeddings_are_built_lazily(places: tuple[Path, Path]) -> None:
    embeddings = embeddings_from_settings(
        CogitoSettings(embed_model="ollama:nomic-embed-text", ollama_url="http://127.0.0.1:11500")
    )
    assert type(embeddings).__name__ == "OllamaEmbeddings"


def test_missing_extra_is_named(places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langchain_ollama", None)  # as if not installed
    with pytest.raises(ImportError, match=r'pip install "cogito-lc\[ollama\]"'):
        chat_model_from_settings(CogitoSettings(filter_model="ollama:qwen3:4b"))


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("127.8.9.10", True), ("::1", True), ("[::1]", True),
     ("localhost", True), ("0.0.0.0", False), ("::", False), ("10.0.0.5", False),  # noqa: S104
     ("example.org", False)],
)  # fmt: skip
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_database_url_comes_from_the_environment_and_is_never_shown(
    places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = "postgresql://cogito:pg-secret-value@db.internal:5432/memory"
    monkeypatch.setenv("COGITO_DATABASE_URL", url)
    settings = load_settings()
    assert settings.database_url is not None
    assert settings.database_url.get_secret_value() == url
    assert "pg-secret-value" not in repr(settings)
    assert "pg-secret-value" not in str(settings.model_dump())


def test_database_url_must_be_postgres(
    places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COGITO_DATABASE_URL", "mysql://me:pg-secret-value@db/app")
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert "COGITO_DATABASE_URL" in str(caught.value)
    assert "pg-secret-value" not in str(caught.value)


def test_the_library_and_the_service_open_the_same_collection_by_default() -> None:
    from cogito_lc import MemoryStore
    from cogito_lc.stores.postgres import open_postgres_store
    from cogito_lc.stores.qdrant import open_qdrant_store

    service_default = CogitoSettings.model_fields["collection"].default
    for opener in (
        MemoryStore.from_database_url,
        MemoryStore.from_qdrant,
        open_postgres_store,
        open_qdrant_store,
    ):
        assert inspect.signature(opener).parameters["collection"].default == service_default


def test_a_taken_port_is_refused_before_anything_loads() -> None:
    import socket

    from cogito_lc.service.server import check_port_free

    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(ConfigError, match=rf"127.0.0.1:{port} is in use: .*--port"):
            check_port_free("127.0.0.1", port)
    check_port_free("127.0.0.1", port)  # free again once its holder closed


def test_an_embedding_model_that_is_not_here_is_a_setting_to_fix_not_an_outage(
    places: tuple[Path, Path],
) -> None:
    pytest.importorskip("langchain_huggingface")
    pytest.importorskip("sentence_transformers")
    from cogito_lc.service._service import http_error_for
    from cogito_lc.service.models import ModelLoadError

    settings = load_settings(embed_model="huggingface:no-such-model-here")
    with pytest.raises(ModelLoadError, match="embed_model='huggingface:no-such-model-here'"):
        embeddings_from_settings(settings)
    try:
        embeddings_from_settings(settings)
    except ModelLoadError as exc:
        wrapped = RuntimeError("while embedding")
        wrapped.__cause__ = exc
        answer = http_error_for(wrapped)
    assert answer is not None
    assert answer.status_code == 500
    assert "cannot be loaded" in str(answer.detail)


def test_an_embedded_store_another_process_holds_is_refused_in_one_line(tmp_path: Path) -> None:
    import subprocess
    import textwrap

    from langchain_core.embeddings import DeterministicFakeEmbedding

    from cogito_lc.service.models import vectorstore_from_settings

    store = tmp_path / "store"
    store.mkdir()
    holder = textwrap.dedent(
        f"""
        import fcntl, sys, time
        handle = open({str(store / ".cogito.lock")!r}, "a")
        fcntl.flock(handle, fcntl.LOCK_EX)
        print("held", flush=True)
        time.sleep(60)
        """
    )
    process = subprocess.Popen([sys.executable, "-c", holder], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "held"
        settings = CogitoSettings(store_path=store)
        with pytest.raises(ConfigError, match=r"another process is using the store at .*--server"):
            vectorstore_from_settings(settings, DeterministicFakeEmbedding(size=8))
    finally:
        process.kill()
        process.wait()


def test_a_store_path_that_is_a_file_is_one_line_naming_the_setting(tmp_path: Path) -> None:
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from cogito_lc.service.models import vectorstore_from_settings

    taken = tmp_path / "a-file"
    taken.write_text("not a folder", encoding="utf-8")
    with pytest.raises(
        ConfigError, match=r"cannot open the store at .* \(store_path, COGITO_STORE"
    ):
        vectorstore_from_settings(
            CogitoSettings(store_path=taken), DeterministicFakeEmbedding(size=8)
        )


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_does_not_share_its_parents_store_lock(tmp_path: Path) -> None:
    from cogito_lc.service.models import _hold_store_lock

    _hold_store_lock(tmp_path, "the store")
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through the pipe
        try:
            _hold_store_lock(tmp_path, "the store")
            os.write(write, b"locked")
        except ConfigError:
            os.write(write, b"refused")
        os._exit(0)
    os.waitpid(child, 0)
    assert os.read(read, 16) == b"refused"


def _notes_made_with_a_model_of_size_8(tmp_path: Path) -> CogitoSettings:
    """Settings for the collection ``notes``, holding one memory of an 8-dimension model."""
    from langchain_chroma import Chroma
    from langchain_core.embeddings import DeterministicFakeEmbedding

    earlier = Chroma(
        "notes", DeterministicFakeEmbedding(size=8), persist_directory=str(tmp_path / "store")
    )
    earlier.add_texts(["Auth tokens expire after 3600 seconds."])
    return CogitoSettings(store_path=tmp_path / "store", collection="notes")


def test_a_collection_made_with_a_model_of_another_size_is_refused_at_start(
    tmp_path: Path,
) -> None:
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from cogito_lc.service.models import vectorstore_from_settings

    settings = _notes_made_with_a_model_of_size_8(tmp_path)
    with pytest.raises(ConfigError, match=r"size 8, but the embedding model gives 16.*embed_model"):
        vectorstore_from_settings(settings, DeterministicFakeEmbedding(size=16))
    same = vectorstore_from_settings(settings, DeterministicFakeEmbedding(size=8))
    same.add_texts(["Deploys freeze on Fridays."])
    assert len(same.get()["ids"]) == 2


def test_a_collection_made_with_another_model_of_the_same_size_is_refused_at_start(
    tmp_path: Path,
) -> None:
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from cogito_lc.bench.hash_embeddings import HashEmbeddings
    from cogito_lc.embeddings import LazyEmbeddings
    from cogito_lc.service.models import vectorstore_from_settings

    settings = _notes_made_with_a_model_of_size_8(tmp_path)
    with pytest.raises(ConfigError, match=r"another embedding model of the same size.*cosine"):
        vectorstore_from_settings(settings, HashEmbeddings(size=8))
    lazy = LazyEmbeddings(lambda: HashEmbeddings(size=8))
    misfit = vectorstore_from_settings(settings, lazy)
    with pytest.raises(ValueError, match="another embedding model of the same size"):
        misfit.add_texts(["never stored"])
    same = vectorstore_from_settings(settings, DeterministicFakeEmbedding(size=8))
    same.add_texts(["Deploys freeze on Fridays."])
    assert len(same.get()["ids"]) == 2


def test_openai_model_without_an_endpoint_or_a_key_says_what_to_set(
    places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("COGITO_FILTER_MODEL", "openai:gpt-4o-mini")
    with pytest.raises(ConfigError) as caught:
        load_settings()
    message = str(caught.value)
    assert "COGITO_FILTER_MODEL" in message
    assert "filter_endpoint (COGITO_FILTER_ENDPOINT)" in message
    assert "COGITO_FILTER_TOKEN" in message
    assert "OPENAI_API_KEY" in message


def test_openai_embeddings_without_an_endpoint_or_a_key_say_what_to_set(
    places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    _write(places[0], {"embed_model": "openai:text-embedding-3-small"})
    with pytest.raises(ConfigError, match=r"key 'embed_model'.*COGITO_FILTER_ENDPOINT"):
        load_settings()


@pytest.mark.parametrize(
    "reach",
    [
        {"COGITO_FILTER_ENDPOINT": "http://127.0.0.1:8080/v1"},
        {"COGITO_FILTER_TOKEN": "sk-test"},
        {"OPENAI_API_KEY": "sk-test"},
    ],
)
def test_openai_model_with_an_endpoint_or_a_key_loads(
    places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, reach: dict[str, str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    for name, value in {"COGITO_FILTER_MODEL": "openai:gpt-4o-mini", **reach}.items():
        monkeypatch.setenv(name, value)
    assert load_settings().filter_model == "openai:gpt-4o-mini"
