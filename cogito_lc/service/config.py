"""Settings of the memory service, read from the environment and JSON config files.

Priority, highest first: keyword overrides passed to :func:`load_settings`,
environment variables (``COGITO_PORT``, ``COGITO_STORE_PATH``, ...), then
``./.cogito.json``, then ``~/.cogito/config.json``, then the defaults. An
explicit config file (``load_settings(config_path=...)``, ``--config PATH`` on
the command line) replaces the two-file lookup.

Keys and defaults follow the reference service where they still make sense,
and its configuration files load as written. Models are named by strings that
:mod:`cogito_lc.service.models` turns into LangChain objects: ``ollama:<model>``,
``openai:<model>`` (any OpenAI-compatible server at ``filter_endpoint``, or
OpenAI's API with ``filter_token`` or ``OPENAI_API_KEY``; one of the three is required),
``anthropic:<model>`` (with ``ANTHROPIC_API_KEY``) and, for embeddings,
``huggingface:<name or path>``. A name without a provider is read as the
reference reads it (see :func:`route_model_string`): a ``filter_model`` goes to
``filter_endpoint`` as is when one is set, ``anthropic/<model>`` goes to
Anthropic, anything else to Ollama. The defaults work offline: local MiniLM
embeddings, embedded Chroma, no LLM.

Tokens are :class:`~pydantic.SecretStr`: ``repr`` and ``str`` of the settings
show ``'**********'`` and no error message of this module repeats a value.

Example:
    ```python
    import json
    from pathlib import Path

    from cogito_lc.service.config import load_settings

    settings = load_settings()  # env > ./.cogito.json > ~/.cogito/config.json > defaults
    settings.port  # 19420
    Path("cogito.json").write_text(json.dumps({"port": 19421, "recall_limit": 5}))
    settings = load_settings("cogito.json", port=8080)  # explicit file, override
    settings.port, settings.recall_limit  # (8080, 5)
    ```
"""

from __future__ import annotations

import contextvars
import difflib
import ipaddress
import json
import os
import re
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    AliasChoices,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
)

from cogito_lc._core.validation import check_similarity_floor
from cogito_lc.extraction.llm_extractor import StructuredOutputMode
from cogito_lc.prompts import PROMPTS_DIR_ENV_VAR

__all__ = [
    "CHAT_PROVIDERS",
    "EMBEDDING_PROVIDERS",
    "ENV_PREFIX",
    "MIN_API_TOKEN_CHARS",
    "CogitoSettings",
    "ConfigError",
    "default_config_files",
    "is_loopback",
    "load_settings",
    "route_chat_model",
    "route_model_string",
    "split_model_string",
]

ENV_PREFIX = "COGITO_"
"""Prefix of every environment variable the settings read (``COGITO_PORT`` -> ``port``)."""

CHAT_PROVIDERS = ("ollama", "openai", "anthropic")
"""Providers a chat model string (``filter_model``, ``llm_model``) may name."""

EMBEDDING_PROVIDERS = ("huggingface", "ollama", "openai")
"""Providers an embeddings string (``embed_model``) may name."""

DEFAULT_PROVIDER = "ollama"
"""Provider of a model name given without one, as in the reference service."""

MIN_API_TOKEN_CHARS = 16
"""Shortest ``api_token`` accepted without a warning, and on a non-loopback ``host``
without ``allow_short_token``."""

_NUMBER_FIELDS = (
    "port",
    "max_body_bytes",
    "max_text_chars",
    "max_query_chars",
    "max_concurrent_requests",
    "max_wrong_tokens",
    "mcp_stream_idle_timeout_ms",
    "mcp_max_streams_per_token",
    "worker_threads",
    "filter_timeout_ms",
    "llm_max_tokens",
    "chroma_port",
    "recall_limit",
    "query_limit",
    "recall_threshold",
    "query_threshold",
)
"""Numeric settings, where JSON's ``true`` would otherwise be read as 1."""

_OTHER_ENV_VARS = frozenset(
    {
        PROMPTS_DIR_ENV_VAR,
        "COGITO_SERVER",  # the CLI's --server
        "COGITO_OLLAMA_MODEL",  # model discovery, benchmarks
        "COGITO_STRUCTURED_OUTPUT",
        "COGITO_EMBEDDINGS_URL",  # benchmarks' OpenAI-compatible embeddings
        "COGITO_EMBEDDINGS_MODEL",
        "COGITO_EMBEDDINGS_TOKEN",
    }
)
"""``COGITO_*`` variables read elsewhere than the settings (not warned of as unknown)."""

_config_files: contextvars.ContextVar[tuple[Path, ...] | None] = contextvars.ContextVar(
    "cogito_config_files", default=None
)


class ConfigError(ValueError):
    """A config file, environment variable or override holds a bad value.

    The message names the source (file path or variable), the key and what is
    wrong, and for JSON syntax errors the line and column; it never repeats the
    value itself, which may be a secret.
    """


def split_model_string(value: str, *, key: str, providers: Sequence[str]) -> tuple[str, str]:
    """Split ``"provider:name"`` into its provider and name.

    Only the first colon separates, so ``"ollama:qwen3:4b"`` names the Ollama
    model ``qwen3:4b``.

    Args:
        value: The model string.
        key: The settings key it came from, for the error message.
        providers: The providers allowed for this key.

    Returns:
        ``(provider, name)``.

    Raises:
        ValueError: If the provider is missing or not one of ``providers``, or
            the name is empty.

    Example:
        ```python
        from cogito_lc.service.config import split_model_string

        split = split_model_string("ollama:qwen3:4b", key="llm_model", providers=["ollama"])
        assert split == ("ollama", "qwen3:4b")
        ```
    """
    provider, sep, name = value.partition(":")
    if not sep or provider not in providers or not name.strip():
        allowed = ", ".join(f"'{p}:<model>'" for p in providers)
        msg = f"{key} must be a provider-prefixed model string ({allowed}), got {value!r}."
        raise ValueError(msg)
    return provider, name.strip()


def route_model_string(
    value: str, *, key: str, providers: Sequence[str], gateway: bool = False
) -> tuple[str, str]:
    """The provider and model name a model string means, read as the reference reads it.

    - ``"provider:name"`` with one of ``providers``: that provider (only the
      first colon separates, so ``"ollama:qwen3:4b"`` is Ollama's ``qwen3:4b``).
    - Any other string with ``gateway`` (a ``filter_model`` with
      ``filter_endpoint`` set): the OpenAI-compatible gateway, name as is.
    - ``"anthropic/<name>"`` (when ``anthropic`` is one of ``providers``): Anthropic.
    - Anything else (``"mistral:7b"``, ``"nomic-embed-text"``): Ollama.

    Args:
        value: The model string.
        key: The settings key it came from, for the error message.
        providers: The providers this key may name with a prefix.
        gateway: Whether a name without a provider goes to ``filter_endpoint``.

    Returns:
        ``(provider, name)``.

    Raises:
        ValueError: If the string is blank or names a provider but no model.

    Example:
        ```python
        from cogito_lc.service.config import CHAT_PROVIDERS, route_model_string

        route = route_model_string("mistral:7b", key="llm_model", providers=CHAT_PROVIDERS)
        assert route == ("ollama", "mistral:7b")
        route = route_model_string(
            "anthropic/claude-haiku-4-5", key="filter_model", providers=CHAT_PROVIDERS
        )
        assert route == ("anthropic", "claude-haiku-4-5")
        ```
    """
    provider, sep, name = value.strip().partition(":")
    if sep and provider in providers:
        if not name.strip():
            msg = f"{key}={value!r} names no model; write '{provider}:<model>'."
            raise ValueError(msg)
        return provider, name.strip()
    if not value.strip():
        msg = f"{key} must not be empty; name a model or leave the key out."
        raise ValueError(msg)
    if gateway:
        return "openai", value.strip()
    vendor, slash, model = value.strip().partition("/")
    if slash and vendor == "anthropic" and "anthropic" in providers and model.strip():
        return "anthropic", model.strip()
    return DEFAULT_PROVIDER, value.strip()


def route_chat_model(value: str, *, key: str, filter_endpoint: str | None) -> tuple[str, str]:
    """The provider and model name of a chat model setting (``filter_model``, ``llm_model``).

    A ``filter_model`` without a provider goes to ``filter_endpoint`` as is when
    one is set, as the reference service sends it; see :func:`route_model_string`.

    Example:
        ```python
        from cogito_lc.service.config import route_chat_model

        route = route_chat_model(
            "anthropic/claude-haiku-4-5", key="filter_model", filter_endpoint="http://gw/"
        )
        assert route == ("openai", "anthropic/claude-haiku-4-5")
        ```
    """
    gateway = key == "filter_model" and bool(filter_endpoint)
    return route_model_string(value, key=key, providers=CHAT_PROVIDERS, gateway=gateway)


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (``127.0.0.0/8``, ``::1``) or ``localhost``.

    Example:
        ```python
        from cogito_lc.service.config import is_loopback

        assert is_loopback("127.0.0.1")
        assert not is_loopback("0.0.0.0")
        ```
    """
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def default_config_files() -> tuple[Path, ...]:
    """The config files looked up without ``--config``, highest priority first."""
    return (Path.cwd() / ".cogito.json", Path.home() / ".cogito" / "config.json")


class CogitoSettings(BaseSettings):
    """Settings of the memory service (``COGITO_*`` variables and JSON config keys).

    Instantiating the class reads the environment and the default config
    files; :func:`load_settings` does the same with an optional explicit file
    and turns validation errors into :class:`ConfigError` messages that name
    the file or variable.

    Example:
        ```python
        from cogito_lc.service.config import CogitoSettings

        settings = CogitoSettings(filter_token="t0ps3cret")
        assert repr(settings.filter_token) == "SecretStr('**********')"
        assert settings.filter_token is not None
        assert settings.filter_token.get_secret_value() == "t0ps3cret"
        ```
    """

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        extra="forbid",
        validate_default=True,
        case_sensitive=False,
    )

    # -- the HTTP service -------------------------------------------------------
    host: str = "127.0.0.1"
    """Address the server binds. Any non-loopback address requires ``api_token``."""
    port: int = Field(default=19420, ge=1, le=65535)
    """Server port (``COGITO_PORT``)."""
    api_token: SecretStr | None = None
    """Bearer token every endpoint but ``/health`` requires when set; never empty (16+ chars),
    printable ASCII without spaces around it (HTTP headers carry ASCII)."""
    allow_short_token: bool = False
    """Serve a non-loopback ``host`` with an ``api_token`` under 16 characters anyway.

    Such a token can be guessed by anyone who can reach the port: without this
    flag the server refuses to start (on loopback, a short token is only a warning)."""
    allowed_hosts: list[str] = Field(default_factory=list)
    """More ``Host`` names a server bound to loopback answers (the name a proxy forwards).

    On loopback the server answers only requests for ``127.0.0.1``, ``localhost`` or
    ``[::1]`` (any port), so a web page that points its own name at 127.0.0.1 cannot
    reach it (DNS rebinding); other requests get HTTP 421. A JSON list in
    ``COGITO_ALLOWED_HOSTS``: ``["memory.internal"]``."""
    allow_request_scope: bool = False
    """Let each request choose its ``user_id`` (``X-Cogito-User`` header or body field).

    Any client that may call the server can then act in any scope: turn it on
    for a trusted caller (an agent host or gateway that authenticates its users)."""
    max_body_bytes: int = Field(default=1_048_576, ge=1024)
    """Largest request body accepted; larger bodies get HTTP 413."""
    max_text_chars: int = Field(default=100_000, ge=1)
    """Longest memory text accepted by ``/store`` and ``/add``."""
    max_query_chars: int = Field(default=10_000, ge=1)
    """Longest query text accepted by ``/query``, ``/recall_b`` and ``/recall``."""
    max_wrong_tokens: int = Field(default=10, ge=1)
    """Wrong tokens (API calls and inspector logins) one client address may send in a
    minute; past them its requests get HTTP 429 with ``Retry-After``, even with the right
    token, until the oldest is a minute old."""
    max_concurrent_requests: int = Field(default=64, ge=1)
    """Requests served at once; more get HTTP 503 with ``Retry-After``.

    Open ``GET /mcp`` event streams do not count (``mcp_max_streams_per_token`` caps them)."""
    mcp_stream_idle_timeout_ms: int = Field(default=60_000, ge=100)
    """Milliseconds a ``GET /mcp`` event stream may send no event before it is closed."""
    mcp_max_streams_per_token: int = Field(default=8, ge=1)
    """``GET /mcp`` event streams open at once; more get HTTP 429.

    The server has one bearer token (or none), so all its clients share them, however
    they spell the ``Authorization`` header; they do not count in
    ``max_concurrent_requests``."""
    worker_threads: int = Field(default=4, ge=1, le=64)
    """Threads that run blocking work (embeddings, store and model calls)."""
    ui: bool = True
    """Serve the memory inspector, a web page at ``/ui`` (``COGITO_UI``): the same
    token, scopes and deletes as the API; false: no ``/ui``."""

    # -- scope ------------------------------------------------------------------
    user_id: str = Field(default="agent", min_length=1, max_length=128)
    """The memory namespace requests act in (unless per-request scopes are allowed)."""

    # -- models -----------------------------------------------------------------
    filter_endpoint: str | None = None
    """Base URL of an OpenAI-compatible server for ``openai:`` models (e.g. llama.cpp)."""
    filter_token: SecretStr | None = None
    """Bearer token for ``filter_endpoint``."""
    anthropic_api_key: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices("cogito_anthropic_api_key", "anthropic_api_key"),
    )
    """Key of Anthropic's API for ``anthropic:`` models (also read from ``ANTHROPIC_API_KEY``)."""
    filter_model: str | None = None
    """Chat model of the recall filter, e.g. ``openai:gemma-3-270m``; None: no LLM."""
    filter_timeout_ms: int = Field(default=12_000, ge=1)
    """Longest wait for one model step (recall filter, supersession judgement, fact
    extraction, a snapshot's or a calibration's model call; a retry without the schema
    included), in milliseconds; past it the step falls back (``fallback_timeout``;
    ``add`` stores the text verbatim, a snapshot is grouped without the model)."""
    ollama_url: str = "http://localhost:11434"
    """Base URL of Ollama for ``ollama:`` models."""
    llm_model: str | None = None
    """Chat model of fact extraction, snapshots and calibration; defaults to ``filter_model``."""
    llm_structured_output: StructuredOutputMode = "auto"
    """How the output schema reaches the model (``json_object`` for llama-cpp-python), for
    fact extraction, supersession judgements, snapshots and calibration."""
    llm_max_tokens: int = Field(default=1024, ge=1)
    """Most tokens one chat model answer may have (``max_tokens``; ``num_predict`` for
    Ollama). Without a cap some servers (llama-cpp-python) generate until the context is
    full, long after the timeout, and keep the next requests waiting."""
    embed_model: str = "huggingface:all-MiniLM-L6-v2"
    """Embeddings; the default is the MiniLM model bundled with the ``local`` extra."""
    supersession: bool = True
    """Judge on ``/add`` and ``/flush`` which stored memories a new one supersedes or
    repeats, with the extraction model (``llm_model``, else ``filter_model``): superseded
    memories are kept, marked, and left out of reads. Needs a model; false: never."""

    # -- store ------------------------------------------------------------------
    store_path: Path = Path("~/.cogito/store")
    """Directory of the embedded Chroma store (and of snapshots and vocabulary maps)."""
    collection: str = Field(default="cogito_memory", min_length=3, max_length=512)
    """Chroma collection name."""
    chroma_host: str | None = None
    """Host of a Chroma server to use instead of the embedded store."""
    chroma_port: int = Field(default=8000, ge=1, le=65535)
    """Port of the Chroma server."""
    database_url: SecretStr | None = None
    """``postgresql://user:password@host:port/db`` of a Postgres with pgvector to keep
    memories, snapshots and vocabulary maps in (table ``collection``) instead of Chroma
    and ``store_path``; replicas of the service can share it. Never shown in logs."""
    vector_store: Literal["chroma", "qdrant"] = "chroma"
    """The vector database without ``database_url``: ``chroma`` (embedded at ``store_path``,
    or a server at ``chroma_host``) or ``qdrant`` (embedded local mode at ``store_path``,
    or a server at ``qdrant_url``; needs the ``qdrant`` extra)."""
    qdrant_url: str | None = None
    """URL of a Qdrant server (``http://localhost:6333``); sets ``vector_store`` to qdrant."""
    qdrant_api_key: SecretStr | None = None
    """The Qdrant server's API key, if it has one. Never shown in logs."""

    # -- recall -----------------------------------------------------------------
    recall_limit: int = Field(default=50, ge=1, le=200)
    """Default ``limit`` of ``/recall`` and ``/recall_b``."""
    query_limit: int = Field(default=5, ge=1, le=200)
    """Default ``limit`` of ``/query``."""
    recall_threshold: float | None = None
    """Lowest cosine similarity (-1..1) of a ``/recall`` or ``/recall_b`` result; None: no floor."""
    query_threshold: float | None = None
    """Lowest cosine similarity (-1..1) of a ``/query`` result; None: no floor."""
    vocab_map: dict[str, list[str]] | None = None
    """Plain words to the corpus's own terms for RecallB; None: the calibrated map, if any."""
    snapshot_mode: Literal["pointer", "summary"] = "pointer"
    """How ``/snapshot/build`` builds the snapshot with a model."""

    @field_validator("database_url", mode="after")
    @classmethod
    def _check_database_url(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None or not value.get_secret_value().strip():
            return None
        if not re.match(r"^postgres(ql)?(\+\w+)?://", value.get_secret_value()):
            msg = (
                "database_url must be a postgresql:// URL "
                "(postgresql://user:password@host:5432/database)."
            )
            raise ValueError(msg)
        return value

    @field_validator(*_NUMBER_FIELDS, mode="before")
    @classmethod
    def _refuse_booleans(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, bool):
            msg = f"{info.field_name} must be a number, got {str(value).lower()}."
            raise ValueError(msg)  # noqa: TRY004 - pydantic reports ValueError as a field error
        return value

    @field_validator("filter_endpoint", "ollama_url", mode="before")
    @classmethod
    def _check_http_url(cls, value: Any, info: ValidationInfo) -> Any:
        if not isinstance(value, str):
            return value
        if not value.strip() and info.field_name == "filter_endpoint":
            return None
        if not re.match(r"^https?://[^/\s]", value.strip()):
            msg = (
                f"{info.field_name} must be an http:// or https:// URL, "
                "such as http://127.0.0.1:8080/v1."
            )
            raise ValueError(msg)
        return value.strip()

    @model_validator(mode="after")
    def _qdrant_url_picks_qdrant(self) -> CogitoSettings:
        if self.qdrant_url:
            if not re.match(r"^https?://", self.qdrant_url):
                msg = "qdrant_url must be an http:// or https:// URL (http://localhost:6333)."
                raise ValueError(msg)
            self.vector_store = "qdrant"
        return self

    @field_validator("store_path", mode="before")
    @classmethod
    def _check_store_path_given(cls, value: Any) -> Any:
        if isinstance(value, str) and not value.strip():
            msg = (
                "store_path is empty, which would put the store in the working directory; "
                "give a folder (default ~/.cogito/store) or leave the setting out."
            )
            raise ValueError(msg)
        return value

    @field_validator("store_path", mode="after")
    @classmethod
    def _expand_store_path(cls, value: Path) -> Path:
        return value.expanduser()

    @field_validator("api_token", mode="after")
    @classmethod
    def _check_api_token(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None:
            return None
        token = value.get_secret_value()
        if not token.strip():
            msg = (
                "api_token is empty: set a token of at least "
                f"{MIN_API_TOKEN_CHARS} characters (python -c 'import secrets; "
                "print(secrets.token_urlsafe(32))'), or leave it unset to serve "
                "127.0.0.1 without authentication."
            )
            raise ValueError(msg)
        if token != token.strip() or not all(" " <= char <= "~" for char in token):
            msg = (
                "api_token (COGITO_API_TOKEN) must be printable ASCII without spaces around "
                "it, since HTTP headers carry ASCII: a client could never send this one. "
                "Use a random token (python -c 'import secrets; "
                "print(secrets.token_urlsafe(32))')."
            )
            raise ValueError(msg)
        if len(token) < MIN_API_TOKEN_CHARS:
            warnings.warn(
                f"api_token is shorter than {MIN_API_TOKEN_CHARS} characters and easy to "
                "guess; use a longer random token.",
                UserWarning,
                stacklevel=2,
            )
        return value

    @field_validator("anthropic_api_key", mode="after")
    @classmethod
    def _blank_key_is_no_key(cls, value: SecretStr | None) -> SecretStr | None:
        # ANTHROPIC_API_KEY is shared with other tools; exported empty, it means "none".
        return value if value is not None and value.get_secret_value().strip() else None

    @field_validator("filter_model", "llm_model", mode="after")
    @classmethod
    def _check_chat_model(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        key = str(info.field_name)
        endpoint = info.data.get("filter_endpoint")
        provider, _ = route_chat_model(value, key=key, filter_endpoint=endpoint)
        if provider == "anthropic" and info.data.get("anthropic_api_key") is None:
            msg = (
                f"{key}={value!r} calls Anthropic's API, which needs ANTHROPIC_API_KEY "
                "(or the anthropic_api_key key); to go through an OpenAI-compatible "
                "gateway instead, set filter_endpoint"
            )
            if key != "filter_model":
                msg += f" and write {key}='openai:<model>'"
            raise ValueError(msg + ".")
        if provider == "openai":
            _check_openai_credentials(key, value, info)
        return value

    @field_validator("embed_model", mode="after")
    @classmethod
    def _check_embed_model(cls, value: str, info: ValidationInfo) -> str:
        provider, _ = route_model_string(value, key="embed_model", providers=EMBEDDING_PROVIDERS)
        if provider == "openai":
            _check_openai_credentials("embed_model", value, info)
        return value

    @field_validator("recall_threshold", "query_threshold", mode="after")
    @classmethod
    def _check_similarity_floor(cls, value: float | None, info: ValidationInfo) -> float | None:
        if value is not None:
            check_similarity_floor(value, name=str(info.field_name))
        return value

    @field_validator("host", "user_id", "collection", mode="after")
    @classmethod
    def _check_not_blank(cls, value: str, info: Any) -> str:
        if not value.strip():
            msg = f"{info.field_name} must not be empty."
            raise ValueError(msg)
        return value

    @field_validator("allowed_hosts", mode="after")
    @classmethod
    def _check_host_names(cls, value: list[str]) -> list[str]:
        for name in value:
            if not name.strip() or any(char in name for char in " /:[]@"):
                msg = (
                    f"allowed_hosts holds {name!r}, which is not a host name: give names "
                    'without scheme or port, e.g. ["memory.internal"].'
                )
                raise ValueError(msg)
        return [name.strip().lower().removesuffix(".") for name in value]

    @property
    def chat_model(self) -> str | None:
        """The chat model string of extraction, snapshots and calibration."""
        return self.llm_model or self.filter_model

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Overrides, then the environment, then each config file in priority order.

        The first source to set a setting gives its whole value: a ``vocab_map``
        in the environment replaces the files' maps rather than merging into them,
        and a key read under two names (``ANTHROPIC_API_KEY`` beside a file's
        ``anthropic_api_key``) is one setting.
        """
        files = _config_files.get() or default_config_files()
        layers = [init_settings, env_settings, *(JsonFileSource(settings_cls, p) for p in files)]
        return (FirstSetWins(settings_cls, layers),)


class _WholeSource(PydanticBaseSettingsSource):
    """A source that gives all its settings at once (:meth:`__call__`), none field by field."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        """Unused: :meth:`__call__` gives every setting at once."""
        return None, field_name, False


class FirstSetWins(_WholeSource):
    """Sources in priority order, merged setting by setting: the first to set one wins.

    pydantic-settings merges nested values of all sources, so dicts from several
    sources would be combined, and the same setting read under two of its names
    would reach the model twice.
    """

    def __init__(
        self, settings_cls: type[BaseSettings], layers: Sequence[PydanticBaseSettingsSource]
    ) -> None:
        super().__init__(settings_cls)
        self.layers = layers

    def __call__(self) -> dict[str, Any]:
        """Each setting from the first source that sets it, under the setting's name.

        A blank key or password (``ANTHROPIC_API_KEY=""``) sets nothing, so a later
        source, a config file say, gives it; a blank ``api_token`` stays an error.
        """
        names = _setting_names(self.settings_cls)
        merged: dict[str, Any] = {}
        for layer in self.layers:
            for key, value in layer().items():
                name = names.get(key.lower(), key)
                if not (name in _BLANK_IS_UNSET and _is_blank(value)):
                    merged.setdefault(name, value)
        return merged


def _check_openai_credentials(key: str, value: str, info: ValidationInfo) -> None:
    """Refuse an ``openai:`` model with neither an endpoint nor a key to reach OpenAI with.

    Raises:
        ValueError: Naming the settings to set; the OpenAI client would otherwise fail
            when built, breaking every command, even those that use no model.
    """
    if info.data.get("filter_endpoint") or info.data.get("filter_token"):
        return
    if os.environ.get("OPENAI_API_KEY", "").strip():
        return
    msg = (
        f"{key}={value!r} needs an OpenAI-compatible server or a key: set filter_endpoint "
        "(COGITO_FILTER_ENDPOINT) to the server's URL, or filter_token "
        "(COGITO_FILTER_TOKEN) or OPENAI_API_KEY to call OpenAI's API."
    )
    raise ValueError(msg)


_BLANK_IS_UNSET = frozenset({"anthropic_api_key", "database_url", "filter_token", "qdrant_api_key"})
"""Secrets that a blank value leaves unset (a shared variable exported empty means none)."""


def _is_blank(value: Any) -> bool:
    text = value.get_secret_value() if isinstance(value, SecretStr) else value
    return isinstance(text, str) and not text.strip()


def _setting_names(settings_cls: type[BaseSettings]) -> dict[str, str]:
    """Every name a setting is read under (lower-cased), mapped to the setting's name."""
    names: dict[str, str] = {}
    for name, field in settings_cls.model_fields.items():
        alias = field.validation_alias
        choices = alias.choices if isinstance(alias, AliasChoices) else [alias]
        names.update((choice.lower(), name) for choice in choices if isinstance(choice, str))
        names[name.lower()] = name
    return names


class JsonFileSource(_WholeSource):
    """One JSON config file; a missing file gives nothing, a bad one a :class:`ConfigError`."""

    def __init__(self, settings_cls: type[BaseSettings], path: Path) -> None:
        super().__init__(settings_cls)
        self.path = path

    def __call__(self) -> dict[str, Any]:
        """The file's keys, checked against the settings' field names."""
        data = read_config_file(self.path)
        _check_keys(self.path, data, self.settings_cls.model_fields)
        return data


def read_config_file(path: Path) -> dict[str, Any]:
    """The JSON object in ``path`` (``{}`` if the file does not exist).

    Raises:
        ConfigError: If the file cannot be read, is not valid JSON (the message
            gives line and column) or does not hold a JSON object.
    """
    try:
        text = path.expanduser().read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        msg = f"config file {path}: cannot be read ({type(exc).__name__}: {exc.args[-1]})."
        raise ConfigError(msg) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        msg = (
            f"config file {path}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}."
        )
        raise ConfigError(msg) from None
    if not isinstance(data, dict):
        msg = f"config file {path}: must hold a JSON object of keys, got {type(data).__name__}."
        raise ConfigError(msg)
    return data


def _check_keys(path: Path, data: Mapping[str, Any], fields: Mapping[str, Any]) -> None:
    for key in data:
        if key in fields:
            continue
        close = difflib.get_close_matches(key, list(fields), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        msg = f"config file {path}: unknown key {key!r}{hint}. Known keys: {', '.join(fields)}."
        raise ConfigError(msg)


@contextmanager
def _files(paths: tuple[Path, ...]) -> Iterator[None]:
    token = _config_files.set(paths)
    try:
        yield
    finally:
        _config_files.reset(token)


def load_settings(config_path: str | Path | None = None, **overrides: Any) -> CogitoSettings:
    """Read the settings: overrides > environment > config file(s) > defaults.

    Args:
        config_path: A JSON config file that replaces the lookup of
            ``./.cogito.json`` and ``~/.cogito/config.json``; it must exist.
        **overrides: Settings given in code or on the command line (``port=8080``).

    Returns:
        The validated settings.

    Raises:
        ConfigError: If a source holds a bad value; the message names the file
            or environment variable and the key, and never the value.

    Example:
        ```python
        from pathlib import Path

        from cogito_lc.service.config import load_settings

        Path("cogito.json").write_text('{"recall_limit": 5}')
        settings = load_settings("./cogito.json", port=19421)
        assert (settings.port, settings.recall_limit) == (19421, 5)
        ```
    """
    if config_path is not None:
        path = Path(config_path).expanduser()
        if path.is_dir():
            msg = f"config file {path} is a directory; pass the path of a JSON file."
            raise ConfigError(msg)
        if not path.is_file():
            msg = f"config file {path} does not exist; check the --config path."
            raise ConfigError(msg)
        files: tuple[Path, ...] = (path,)
    else:
        files = default_config_files()
    _warn_unknown_variables(CogitoSettings)
    with _files(files):
        try:
            return CogitoSettings(**overrides)
        except ValidationError as exc:
            raise ConfigError(_describe(exc, files, overrides)) from None
        except SettingsError as exc:
            raise ConfigError(_describe_settings_error(exc)) from None


def _warn_unknown_variables(settings_cls: type[BaseSettings]) -> None:
    """Warn of a ``COGITO_*`` variable no setting reads: most often a misspelled name."""
    known = {f"{ENV_PREFIX}{name}".upper() for name in settings_cls.model_fields}
    known |= {name.upper() for name in _setting_names(settings_cls)} | _OTHER_ENV_VARS
    for name in os.environ:
        upper = name.upper()
        if not upper.startswith(ENV_PREFIX) or upper in known:
            continue
        close = difflib.get_close_matches(upper, sorted(known), n=1)
        hint = f"; did you mean {close[0]}?" if close else ""
        warnings.warn(
            f"environment variable {name} is not a cogito setting and is ignored{hint}",
            UserWarning,
            stacklevel=3,
        )


def _source_of(key: str, files: Sequence[Path], overrides: Mapping[str, Any]) -> str:
    if key in overrides:
        return f"override {key!r}"
    env_name = f"{ENV_PREFIX}{key}".upper()
    if any(name.upper() == env_name for name in os.environ):
        return f"environment variable {env_name}"
    for path in files:
        if key in _keys_of(path):
            return f"config file {path}: key {key!r}"
    return f"setting {key!r}"


def _keys_of(path: Path) -> set[str]:
    try:
        return set(read_config_file(path))
    except ConfigError:  # pragma: no cover - the file source raised it already
        return set()


def _describe(exc: ValidationError, files: Sequence[Path], overrides: Mapping[str, Any]) -> str:
    problems = []
    for error in exc.errors(include_input=False, include_url=False):
        key = str(error["loc"][0]) if error["loc"] else "settings"
        where = ".".join(str(part) for part in error["loc"][1:])
        detail = f" at {where}" if where else ""
        problems.append(f"{_source_of(key, files, overrides)}{detail}: {error['msg']}")
    return "; ".join(problems)


def _describe_settings_error(exc: SettingsError) -> str:
    text = str(exc)
    field = text.split('"')[1] if text.count('"') >= 2 else "?"
    return (
        f"environment variable {ENV_PREFIX}{field.upper()}: cannot be parsed "
        "(complex values such as vocab_map must be JSON)."
    )
