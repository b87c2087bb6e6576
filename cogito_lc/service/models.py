"""Factories that turn :class:`~cogito_lc.service.config.CogitoSettings` into LangChain objects.

Model strings name a provider (:func:`cogito_lc.service.config.route_model_string`):

- chat models (``filter_model``, ``llm_model``): ``ollama:<model>`` gives
  ``ChatOllama`` at ``ollama_url``; ``openai:<model>`` gives ``ChatOpenAI`` at
  ``filter_endpoint`` with ``filter_token`` (any OpenAI-compatible server:
  llama.cpp, LM Studio, vLLM, a gateway); ``anthropic:<model>`` gives
  ``ChatAnthropic`` with ``anthropic_api_key``. As in the reference service, a
  ``filter_model`` without a provider goes to ``filter_endpoint`` as is when one
  is set, ``anthropic/<model>`` goes to Anthropic and any other name to Ollama
  (``mistral:7b``). No model configured gives None, and the stages that would
  use one report ``fallback_no_llm``.
- embeddings (``embed_model``): ``huggingface:<name or path>`` (the default
  ``huggingface:all-MiniLM-L6-v2`` is the offline model bundled with the
  ``local`` extra), ``ollama:<model>`` (also a name without a provider, such as
  ``nomic-embed-text``), ``openai:<model>``.

Provider packages are optional extras, imported only when a setting names
them; a missing one raises ``ImportError`` naming the extra to install.

Example:
    ```python
    from cogito_lc.service.config import load_settings
    from cogito_lc.service.models import memory_from_settings

    memory = memory_from_settings(load_settings())  # embedded Chroma, MiniLM, no LLM
    memory.store("Auth tokens expire after 3600 seconds.")
    ```
"""

from __future__ import annotations

import importlib
import logging
import os
import sqlite3
import threading
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal, cast

from pydantic import SecretStr

from cogito_lc._core.extras import missing_extra
from cogito_lc.service.config import (
    EMBEDDING_PROVIDERS,
    ConfigError,
    route_chat_model,
    route_model_string,
)

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings
    from langchain_core.language_models import BaseChatModel
    from langchain_core.vectorstores import VectorStore

    from cogito_lc.document_compressors.supersession import SupersessionJudge
    from cogito_lc.memory.memory_store import MemoryStore
    from cogito_lc.service.config import CogitoSettings

__all__ = [
    "ModelLoadError",
    "chat_model_from_settings",
    "embeddings_from_settings",
    "judge_from_settings",
    "memory_from_settings",
    "vectorstore_from_settings",
]

logger = logging.getLogger(__name__)

_BUNDLED_MINILM = frozenset({"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"})
_EXTRAS = {
    "langchain_ollama": "ollama",
    "langchain_openai": "openai",
    "langchain_anthropic": "anthropic",
    "langchain_huggingface": "local",
}
_PLACEHOLDER_KEY = "not-needed"


class ModelLoadError(RuntimeError):
    """A model the settings name cannot be loaded here: a setting to fix, not an outage."""


def _local_sentence_transformer(name: str, setting: str) -> Embeddings:
    """The sentence-transformers model ``name`` with normalised vectors, loaded on the CPU.

    Raises:
        ModelLoadError: If the model is neither a local path nor cached here.
    """
    module = _import("langchain_huggingface", f"embed_model={setting!r}")
    try:
        return cast(
            "Embeddings",
            module.HuggingFaceEmbeddings(
                model_name=name,
                model_kwargs={"device": "cpu"},
                encode_kwargs={"normalize_embeddings": True},
            ),
        )
    except OSError as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        msg = (
            f"embed_model={setting!r} cannot be loaded ({reason}); give a model installed "
            "here or a local path (the default, huggingface:all-MiniLM-L6-v2, ships with "
            "the local extra)."
        )
        raise ModelLoadError(msg) from exc


def _import(module: str, purpose: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise missing_extra(_EXTRAS.get(module, "local"), purpose, module) from exc


def _timeout_seconds(settings: CogitoSettings) -> float:
    return settings.filter_timeout_ms / 1000


def _openai_key(settings: CogitoSettings) -> SecretStr | None:
    if settings.filter_token is not None:
        return settings.filter_token
    # Local OpenAI-compatible servers need no key, but the client insists on one.
    return SecretStr(_PLACEHOLDER_KEY) if settings.filter_endpoint else None


def chat_model_from_settings(
    settings: CogitoSettings, *, purpose: Literal["filter", "extract"] = "filter"
) -> BaseChatModel | None:
    """The chat model a setting names, or None when none is configured.

    Args:
        settings: The settings.
        purpose: ``"filter"`` reads ``filter_model``; ``"extract"`` (fact
            extraction, snapshots, calibration) reads ``llm_model`` and falls
            back to ``filter_model``.

    Returns:
        ``ChatOllama``, ``ChatOpenAI`` or ``ChatAnthropic``, with the configured
        timeout, answers capped at ``llm_max_tokens`` tokens and no retry of the
        client's own (a retry would wait past the timeout); None without a configured model.

    Raises:
        ImportError: If the provider's extra is not installed.

    Example:
        ```python
        from cogito_lc.service.config import CogitoSettings
        from cogito_lc.service.models import chat_model_from_settings

        settings = CogitoSettings(
            filter_model="openai:gemma-3-270m", filter_endpoint="http://127.0.0.1:8080/v1"
        )
        llm = chat_model_from_settings(settings)  # ChatOpenAI against llama.cpp; no call yet
        assert chat_model_from_settings(CogitoSettings()) is None  # no model configured
        ```
    """
    value = settings.filter_model if purpose == "filter" else settings.chat_model
    if value is None:
        return None
    key = "filter_model" if purpose == "filter" or not settings.llm_model else "llm_model"
    provider, name = route_chat_model(value, key=key, filter_endpoint=settings.filter_endpoint)
    if provider == "ollama":
        module = _import("langchain_ollama", f"{key}={value!r}")
        timeout = _timeout_seconds(settings)
        return cast(
            "BaseChatModel",
            module.ChatOllama(
                model=name,
                base_url=settings.ollama_url,
                num_predict=settings.llm_max_tokens,
                client_kwargs={"timeout": timeout},
            ),
        )
    if provider == "anthropic":
        module = _import("langchain_anthropic", f"{key}={value!r}")
        return cast(
            "BaseChatModel",
            module.ChatAnthropic(
                model=name,
                api_key=settings.anthropic_api_key,
                max_tokens=settings.llm_max_tokens,
                timeout=_timeout_seconds(settings),
                max_retries=0,
            ),
        )
    module = _import("langchain_openai", f"{key}={value!r}")
    from cogito_lc.extraction.discovery import max_tokens_body

    return cast(
        "BaseChatModel",
        module.ChatOpenAI(
            model=name,
            base_url=settings.filter_endpoint,
            api_key=_openai_key(settings),
            timeout=_timeout_seconds(settings),
            max_retries=0,
            max_tokens=settings.llm_max_tokens,
            extra_body=max_tokens_body(settings.filter_endpoint, settings.llm_max_tokens),
        ),
    )


def judge_from_settings(
    settings: CogitoSettings, llm: BaseChatModel | None = None
) -> SupersessionJudge | None:
    """The supersession judge of the service: the extraction model, or None.

    None when ``supersession`` is off or no chat model is configured (``llm_model``,
    else ``filter_model``); then writes supersede nothing.

    Args:
        settings: The settings.
        llm: The extraction model already built from them (built here when None).

    Example:
        ```python
        from cogito_lc.service.config import CogitoSettings
        from cogito_lc.service.models import judge_from_settings

        assert judge_from_settings(CogitoSettings()) is None  # no model: no judge
        settings = CogitoSettings(
            filter_model="openai:gemma-3-270m", filter_endpoint="http://127.0.0.1:8080/v1"
        )
        assert judge_from_settings(settings) is not None  # no call yet
        assert judge_from_settings(settings.model_copy(update={"supersession": False})) is None
        ```
    """
    if not settings.supersession or settings.chat_model is None:
        return None
    from cogito_lc.document_compressors.supersession import SupersessionJudge

    model = llm if llm is not None else chat_model_from_settings(settings, purpose="extract")
    return SupersessionJudge.from_llm(
        model,
        structured_output=settings.llm_structured_output,
        timeout=_timeout_seconds(settings),
    )


def embeddings_from_settings(settings: CogitoSettings) -> Embeddings:
    """The embeddings ``embed_model`` names.

    ``huggingface:all-MiniLM-L6-v2`` loads the model bundled with the ``local``
    extra (offline); another ``huggingface:`` name or path loads that
    sentence-transformers model with normalised vectors.

    Raises:
        ImportError: If the provider's extra is not installed.
        ModelLoadError: If a ``huggingface:`` model is neither bundled, cached nor a path.

    Example:
        ```python
        from cogito_lc.service.config import CogitoSettings
        from cogito_lc.service.models import embeddings_from_settings

        embeddings = embeddings_from_settings(CogitoSettings())  # offline MiniLM
        assert len(embeddings.embed_query("hello")) == 384
        ```
    """
    provider, name = route_model_string(
        settings.embed_model, key="embed_model", providers=EMBEDDING_PROVIDERS
    )
    purpose = f"embed_model={settings.embed_model!r}"
    if provider == "huggingface":
        if name in _BUNDLED_MINILM:
            from cogito_lc.embeddings.local import local_embeddings

            return local_embeddings()
        return _local_sentence_transformer(name, settings.embed_model)
    if provider == "ollama":
        module = _import("langchain_ollama", purpose)
        return cast("Embeddings", module.OllamaEmbeddings(model=name, base_url=settings.ollama_url))
    module = _import("langchain_openai", purpose)
    return cast(
        "Embeddings",
        module.OpenAIEmbeddings(
            model=name,
            base_url=settings.filter_endpoint,
            api_key=_openai_key(settings),
            timeout=_timeout_seconds(settings),
            check_embedding_ctx_length=False,
        ),
    )


def vectorstore_from_settings(settings: CogitoSettings, embeddings: Embeddings) -> VectorStore:
    """The vector store of the settings' ``vector_store``, embedded at ``store_path`` or a server.

    Chroma: embedded, or a Chroma server at ``chroma_host:chroma_port``. Qdrant:
    embedded local mode, or a Qdrant server at ``qdrant_url``.

    Example:
        ```python
        from langchain_core.embeddings import DeterministicFakeEmbedding

        from cogito_lc.service.config import CogitoSettings
        from cogito_lc.service.models import vectorstore_from_settings

        settings = CogitoSettings(store_path="./store")  # embedded Chroma in ./store
        store = vectorstore_from_settings(settings, DeterministicFakeEmbedding(size=64))
        store.add_texts(["Auth tokens expire after 3600 seconds."])
        ```
    """
    if settings.vector_store == "qdrant":
        return _qdrant_from_settings(settings, embeddings)
    if settings.chroma_host:
        import chromadb
        from langchain_chroma import Chroma

        client = chromadb.HttpClient(host=settings.chroma_host, port=settings.chroma_port)
        store = Chroma(
            collection_name=settings.collection, embedding_function=embeddings, client=client
        )
        where = f"the collection {settings.collection!r} of the Chroma server (chroma_host)"
        return _fitting_model(store, embeddings, where)
    where = f"the collection {settings.collection!r} at {settings.store_path} (store_path)"
    return _fitting_model(_embedded_chroma(settings, embeddings), embeddings, where)


def _fitting_model(store: VectorStore, embeddings: Embeddings, where: str) -> VectorStore:
    """``store``, whose collection's vectors are checked to be the size of the model's.

    Raises:
        ConfigError: If the collection holds vectors of another size (made with
            another model): every write would fail, so the service does not start.
    """
    from cogito_lc.stores.chroma import with_fitting_model

    try:
        return cast("VectorStore", with_fitting_model(store, embeddings, where))
    except ValueError as exc:
        msg = f"{exc} (embed_model, COGITO_EMBED_MODEL; or set store_path or collection)"
        raise ConfigError(msg) from None


_STORE_LOCKS: dict[tuple[int, Path], IO[str]] = {}
"""The lock file of each embedded store a process opened (by process id: a forked child
inherits the dict and must lock for itself), held until it exits."""
_STORE_LOCKS_GUARD = threading.Lock()


def _embedded_chroma(settings: CogitoSettings, embeddings: Embeddings) -> VectorStore:
    """Chroma embedded at ``store_path``, which no other process may be using.

    Raises:
        ConfigError: If another process holds the store, or it cannot be opened
            (a folder this process cannot write, say); one line naming ``store_path``.
    """
    import chromadb.errors
    from langchain_chroma import Chroma

    path = settings.store_path
    where = f"the store at {path} (store_path, COGITO_STORE_PATH)"
    try:
        path.mkdir(parents=True, exist_ok=True)
        _hold_store_lock(path, where)
        return Chroma(
            collection_name=settings.collection,
            embedding_function=embeddings,
            persist_directory=str(path),
        )
    except (OSError, sqlite3.Error, chromadb.errors.ChromaError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        msg = f"cannot open {where}: {reason}; give a folder this process can write."
        raise ConfigError(msg) from exc


def _hold_store_lock(path: Path, where: str) -> None:
    """Lock ``path`` for this process: two processes writing one embedded store break it."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not on POSIX: not checked
        return
    key = (os.getpid(), path.resolve())
    with _STORE_LOCKS_GUARD:
        if key in _STORE_LOCKS:
            return
        handle = (key[1] / ".cogito.lock").open("a", encoding="utf-8")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            msg = (
                f"another process is using {where}: stop it, or send commands to the "
                "service it runs (--server or COGITO_SERVER)."
            )
            raise ConfigError(msg) from None
        _STORE_LOCKS[key] = handle


def _is_remote(settings: CogitoSettings) -> bool:
    if settings.vector_store == "qdrant":
        return settings.qdrant_url is not None
    return bool(settings.chroma_host)


def _qdrant_from_settings(settings: CogitoSettings, embeddings: Embeddings) -> VectorStore:
    from cogito_lc.stores.qdrant import open_qdrant_store

    api_key = settings.qdrant_api_key.get_secret_value() if settings.qdrant_api_key else None
    if settings.qdrant_url:
        return open_qdrant_store(
            embeddings, url=settings.qdrant_url, api_key=api_key, collection=settings.collection
        )
    return open_qdrant_store(embeddings, path=settings.store_path, collection=settings.collection)


def memory_from_settings(
    settings: CogitoSettings, *, embeddings: Embeddings | None = None
) -> MemoryStore:
    """A MemoryStore for the settings: store, embeddings, fact extractor and scope.

    The store's scope is ``{"user_id": settings.user_id}``; snapshots and the
    vocabulary map are kept in ``store_path``, in a collection beside the memories
    on a Chroma server (``chroma_host``), or in the database with ``database_url``
    (Postgres, table ``collection``); with a chat model
    configured (``llm_model`` or ``filter_model``) ``add`` extracts facts
    through it, waiting at most ``filter_timeout_ms`` for each extraction (past
    it, the text is stored verbatim: ``fallback_verbatim``), else it stores text
    verbatim (``fallback_no_llm``).

    Args:
        settings: The settings.
        embeddings: Embeddings to use instead of building them from ``embed_model``.

    Returns:
        The memory store.
    """
    from cogito_lc.extraction.fact_extractor import FactExtractor
    from cogito_lc.memory.memory_store import MemoryStore

    embeddings = embeddings or embeddings_from_settings(settings)
    llm = chat_model_from_settings(settings, purpose="extract")
    extractor = (
        FactExtractor.from_llm(
            llm,
            structured_output=settings.llm_structured_output,
            timeout=_timeout_seconds(settings),
        )
        if llm is not None
        else None
    )
    if settings.database_url is not None:
        return MemoryStore.from_database_url(
            settings.database_url.get_secret_value(),
            embeddings=embeddings,
            collection=settings.collection,
            extractor=extractor,
            scope={"user_id": settings.user_id},
            max_text_chars=settings.max_text_chars,
            vocab_map=settings.vocab_map,
        )
    vectorstore = vectorstore_from_settings(settings, embeddings)
    return MemoryStore(
        vectorstore,
        extractor=extractor,
        scope={"user_id": settings.user_id},
        max_text_chars=settings.max_text_chars,
        vocab_map=settings.vocab_map,
        data_dir=None if _is_remote(settings) else settings.store_path,
    )
