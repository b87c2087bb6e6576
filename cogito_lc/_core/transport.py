"""Classify the exceptions a chat model call raises.

Client libraries are recognised by the names of their exception classes and by
the ``status_code`` they carry, so none of them has to be installed.

Example:
    ```python
    from cogito_lc._core.transport import is_transport_error, schema_may_be_rejected

    is_transport_error(ConnectionRefusedError())
    # True
    is_transport_error(ValueError("bad prompt")), schema_may_be_rejected(ValueError("bad prompt"))
    # (False, False)
    ```
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any, Literal, TypeAlias

__all__ = [
    "TRANSPORT_ERROR_NAMES",
    "FailureKind",
    "exception_chain",
    "failure_kind",
    "is_retryable_status",
    "is_timeout_error",
    "is_transport_error",
    "may_reject_schema",
    "schema_may_be_rejected",
    "status_code",
    "status_code_in_chain",
]

FailureKind: TypeAlias = Literal["timeout", "unreachable", "error"]
"""How a model call failed (see :func:`failure_kind`)."""

_SCHEMA_REJECTED_STATUSES = frozenset({400, 422})
_SERVER_ERROR_STATUS = 500
_SCHEMA_WORDS = ("response_format", "schema", "grammar")
"""Words of a 5xx error message about the output schema (llama-cpp-python's, say)."""
_REQUEST_TIMEOUT_STATUS = 408
_RETRYABLE_STATUSES = frozenset({_REQUEST_TIMEOUT_STATUS, 429})
TRANSPORT_ERROR_NAMES: frozenset[str] = frozenset(
    {
        "APIConnectionError",
        "APITimeoutError",
        "ConnectError",
        "ConnectTimeout",
        "NetworkError",
        "PoolTimeout",
        "ReadError",
        "ReadTimeout",
        "RemoteProtocolError",
        "TimeoutException",
        "TransportError",
        "WriteTimeout",
    }
)


def is_transport_error(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception it wraps) means the model could not be reached.

    Connection failures, timeouts, HTTP 5xx, 408 and 429 count; bad requests,
    authentication failures and programming errors do not.

    Args:
        exc: The exception raised by a chat model call.

    Returns:
        ``True`` for a transport failure worth retrying later.
    """
    for error in exception_chain(exc):
        if isinstance(error, (OSError, TimeoutError, asyncio.TimeoutError)):
            return True
        if any(cls.__name__ in TRANSPORT_ERROR_NAMES for cls in type(error).__mro__):
            return True
        if is_retryable_status(status_code(error)):
            return True
    return False


def is_retryable_status(status: int | None) -> bool:
    """Whether an HTTP status says the server may answer later: 5xx, 408 or 429."""
    return status is not None and (status >= _SERVER_ERROR_STATUS or status in _RETRYABLE_STATUSES)


def is_timeout_error(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception it wraps) means a model call took too long.

    ``TimeoutError`` (which ``asyncio.TimeoutError`` and a missed call deadline are),
    any exception whose class name contains ``Timeout`` (``APITimeoutError``,
    ``ReadTimeout``, ``requests``' ``Timeout``, urllib3's ``ReadTimeoutError``,
    aiohttp's ``ServerTimeoutError``, ...) and HTTP 408 count.

    Args:
        exc: The exception raised by a chat model call.

    Returns:
        ``True`` for a timeout.
    """
    for error in exception_chain(exc):
        if isinstance(error, (TimeoutError, asyncio.TimeoutError)):
            return True
        if any("Timeout" in cls.__name__ for cls in type(error).__mro__):
            return True
        if status_code(error) == _REQUEST_TIMEOUT_STATUS:
            return True
    return False


def failure_kind(exc: BaseException) -> FailureKind:
    """Classify a failed model call: ``timeout``, then ``unreachable``, else ``error``.

    Example:
        ```python
        from cogito_lc._core.transport import failure_kind

        failure_kind(TimeoutError()), failure_kind(ConnectionRefusedError())
        # ('timeout', 'unreachable')
        failure_kind(ValueError("bad prompt"))
        # 'error'
        ```

    Args:
        exc: The exception raised by a chat model call.

    Returns:
        ``timeout`` (:func:`is_timeout_error`), ``unreachable``
        (:func:`is_transport_error`) or ``error`` (a bad request, an authentication
        failure, a bug).
    """
    if is_timeout_error(exc):
        return "timeout"
    if is_transport_error(exc):
        return "unreachable"
    return "error"


def schema_may_be_rejected(exc: BaseException) -> bool:
    """Whether a call that carried an output schema may have failed because of it.

    Servers refuse a response format they do not support with HTTP 400 or 422, and
    some (llama-cpp-python's) with HTTP 500 whose message names it. Any other 5xx is
    an outage: retrying without the schema would only double the failed requests.

    Args:
        exc: The exception raised by a chat model call with a schema.

    Returns:
        ``True`` if a retry without the schema is worth trying.
    """
    status = status_code_in_chain(exc)
    if may_reject_schema(status):
        return True
    return status is not None and status >= _SERVER_ERROR_STATUS and _names_the_schema(exc)


def may_reject_schema(status: int | None) -> bool:
    """Whether an HTTP ``status`` is how servers refuse an unsupported output schema."""
    return status in _SCHEMA_REJECTED_STATUSES


def _names_the_schema(exc: BaseException) -> bool:
    """Whether an error's message (or its response's body) is about the output schema."""
    for error in exception_chain(exc):
        texts = [str(error), _response_text(getattr(error, "response", None))]
        if any(word in text.lower() for text in texts for word in _SCHEMA_WORDS):
            return True
    return False


def _response_text(response: Any) -> str:
    try:
        text = getattr(response, "text", "")
    except Exception:  # a streamed body that was never read
        return ""
    return text if isinstance(text, str) else ""


def exception_chain(exc: BaseException) -> Iterator[BaseException]:
    """Yield ``exc`` and the exceptions it was raised from, each once."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def status_code(error: BaseException) -> int | None:
    """Return the HTTP status of ``error`` or of its ``response``, if it has one."""
    for holder in (error, getattr(error, "response", None)):
        status = getattr(holder, "status_code", None)
        if isinstance(status, int):
            return status
    return None


def status_code_in_chain(exc: BaseException) -> int | None:
    """Return the first HTTP status found along the exception chain of ``exc``."""
    for error in exception_chain(exc):
        status = status_code(error)
        if status is not None:
            return status
    return None
