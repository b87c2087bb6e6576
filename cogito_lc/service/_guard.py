"""Guards in front of the HTTP endpoints: bearer auth, body size, concurrency, error bodies.

The middlewares are plain ASGI, so they answer before any request body is read
or parsed: an unauthenticated request gets 401 whatever its body, a body over
the limit gets 413 without being buffered, and a request over the concurrency
limit gets 503 with ``Retry-After`` instead of queueing without bound.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

from fastapi import Depends, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.routing import BaseRoute, Match

from cogito_lc.service._schemas import FieldError, ValidationErrorResponse

__all__ = [
    "BearerAuthMiddleware",
    "BodyLimitMiddleware",
    "ConcurrencyLimitMiddleware",
    "bearer_dependency",
    "method_not_allowed_handler",
    "token_matches",
    "unhandled_error_handler",
    "validation_error_handler",
]

logger = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

OPEN_PATHS = frozenset({"/health"})
"""Paths that need no token."""

MESSAGE_MAX_CHARS = 300
"""Most characters of one field's message in a 422 (messages may quote the input)."""

JSON = "application/json"

_UNAUTHORIZED = "missing or invalid bearer token: send 'Authorization: Bearer <COGITO_API_TOKEN>'"


async def _send_json(
    send: Send, status: int, detail: str, headers: dict[str, str] | None = None
) -> None:
    body = json.dumps({"detail": detail}).encode()
    raw_headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *((key.lower().encode(), value.encode()) for key, value in (headers or {}).items()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    await send({"type": "http.response.body", "body": body})


def token_matches(header: str | None, expected: bytes) -> bool:
    """Whether an ``Authorization`` header carries the bearer token (constant-time compare).

    Example:
        ```python
        from cogito_lc.service._guard import token_matches

        assert token_matches("Bearer s3cret", b"s3cret")
        assert not token_matches("Bearer nope", b"s3cret")
        ```
    """
    if not header:
        return False
    scheme, _, given = header.partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(given.strip().encode("utf-8", "surrogateescape"), expected)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


class BearerAuthMiddleware:
    """Answers 401 to any request outside :data:`OPEN_PATHS` without the right bearer token."""

    def __init__(self, app: ASGIApp, *, token: bytes) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the token, then pass the request on."""
        if scope["type"] != "http" or scope.get("path") in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        if not token_matches(_header(scope, b"authorization"), self.token):
            await _send_json(send, 401, _UNAUTHORIZED, {"WWW-Authenticate": "Bearer"})
            return
        await self.app(scope, receive, send)


class BodyLimitMiddleware:
    """Answers 413 to a request body over ``max_bytes``, declared or streamed."""

    def __init__(self, app: ASGIApp, *, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    def _too_large(self) -> str:
        return f"request body over {self.max_bytes} bytes; send less (max_body_bytes)"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check ``Content-Length``, then count the bytes as they are read."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _header(scope, b"content-length")
        if declared is not None:
            if not declared.strip().isdigit():
                await _send_json(send, 400, "Content-Length is not a number")
                return
            if int(declared) > self.max_bytes:
                await _send_json(send, 413, self._too_large())
                return
        received = 0

        async def limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise HTTPException(413, self._too_large())
            return message

        await self.app(scope, limited, send)


class ConcurrencyLimitMiddleware:
    """Answers 503 with ``Retry-After: 1`` while ``max_requests`` requests are in flight."""

    def __init__(self, app: ASGIApp, *, max_requests: int) -> None:
        self.app = app
        self.max_requests = max_requests
        self.in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Count the request in, or turn it away when the server is full."""
        if scope["type"] != "http" or scope.get("path") in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        if self.in_flight >= self.max_requests:
            await _send_json(send, 503, "server busy; retry shortly", {"Retry-After": "1"})
            return
        self.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1


def bearer_dependency(token: bytes) -> Callable[..., Awaitable[None]]:
    """A FastAPI dependency that declares and checks the bearer token (OpenAPI security)."""
    scheme = HTTPBearer(auto_error=False, description="The server's COGITO_API_TOKEN.")

    async def require_token(
        credentials: HTTPAuthorizationCredentials | None = Depends(scheme),  # noqa: B008
    ) -> None:
        header = f"Bearer {credentials.credentials}" if credentials else None
        if not token_matches(header, token):
            raise HTTPException(401, _UNAUTHORIZED, headers={"WWW-Authenticate": "Bearer"})

    return require_token


def _field_name(loc: tuple[Any, ...] | list[Any]) -> str:
    parts = [str(part) for part in loc]
    if parts and parts[0] in {"body", "query", "path", "header"} and len(parts) > 1:
        parts = parts[1:]
    return ".".join(parts) or "body"


def _capped(message: str) -> str:
    if len(message) <= MESSAGE_MAX_CHARS:
        return message
    return message[: MESSAGE_MAX_CHARS - 1] + "…"


def _is_json(content_type: str | None) -> bool:
    media_type = (content_type or "").partition(";")[0].strip().lower()
    return media_type == "application/json" or (
        media_type.startswith("application/") and media_type.endswith("+json")
    )


def _field_error(error: dict[str, Any], content_type: str | None) -> FieldError:
    if error.get("type") == "json_invalid":
        reason = (error.get("ctx") or {}).get("error", "")
        message = f"body is not valid JSON: {reason}".rstrip(": ")
        return FieldError(field="body", message=message, type="json_invalid")
    field = _field_name(error.get("loc", ()))
    if tuple(error.get("loc", ())) == ("body",) and not _is_json(content_type):
        sent = f"Content-Type {content_type!r}" if content_type else "no Content-Type"
        message = f"the body must be a JSON object sent with 'Content-Type: {JSON}'; got {sent}"
        return FieldError(field="body", message=_capped(message), type="content_type")
    return FieldError(field=field, message=_capped(error["msg"]), type=error["type"])


async def validation_error_handler(request: Request, exc: Exception) -> JSONResponse:
    """422 naming each invalid field; at most :data:`MESSAGE_MAX_CHARS` of each message."""
    raw = exc.errors() if isinstance(exc, RequestValidationError) else []
    content_type = request.headers.get("content-type")
    errors = [_field_error(error, content_type) for error in raw]
    summary = "; ".join(f"{error.field}: {error.message}" for error in errors[:5])
    body = ValidationErrorResponse(detail=summary or "invalid request", errors=errors)
    return JSONResponse(status_code=422, content=body.model_dump())


def method_not_allowed_handler(
    routes: Iterable[BaseRoute],
) -> Callable[[Request, Exception], Awaitable[JSONResponse]]:
    """A handler of 405 whose ``Allow`` lists the methods of every route of the path.

    Starlette's own 405 names only the methods of the first route whose path
    matched (``GET`` for ``/memories/{id}``, which ``DELETE`` serves too).

    Args:
        routes: The app's routes (the routers' own, before inclusion).
    """
    known = list(routes)

    async def method_not_allowed(request: Request, exc: Exception) -> JSONResponse:
        methods: set[str] = set()
        for route in known:
            match, _ = route.matches(request.scope)
            if match is not Match.NONE:
                methods |= getattr(route, "methods", None) or set()
        allowed = ", ".join(sorted(methods))
        return JSONResponse(
            status_code=405,
            content={"detail": f"method {request.method} is not allowed here; use {allowed}"},
            headers={"Allow": allowed},
        )

    return method_not_allowed


async def unhandled_error_handler(request: Request, exc: Exception) -> JSONResponse:
    """500 with no detail; Starlette re-raises the error for the server to log it."""
    return JSONResponse(status_code=500, content={"detail": "internal server error"})
