"""Guards in front of the HTTP endpoints: bearer auth, body size, concurrency, error bodies.

The middlewares are plain ASGI, so they answer before any request body is read
or parsed: an unauthenticated request gets 401 whatever its body, a body over
the limit gets 413 without being buffered, a JSON body nested deeper than
:data:`MAX_JSON_DEPTH` gets 400 before a parser sees it, and a request over the
concurrency limit gets 503 with ``Retry-After`` instead of queueing without bound.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import math
import re
import sys
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Iterable, Iterator, MutableMapping
from typing import Any

from fastapi import Depends, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.routing import BaseRoute, Match, Mount
from starlette.staticfiles import StaticFiles

from cogito_lc.service._schemas import FieldError, ValidationErrorResponse, readable_message
from cogito_lc.service.config import is_loopback

__all__ = [
    "JSONRPC_PATHS",
    "MAX_JSON_DEPTH",
    "PARSE_ERROR",
    "STATE_CHANGING",
    "BearerAuthMiddleware",
    "BodyLimitMiddleware",
    "ConcurrencyLimitMiddleware",
    "LoginLimiter",
    "bearer_dependency",
    "body_problem",
    "content_type_problem",
    "is_json_media",
    "json_too_deep",
    "jsonrpc_error_body",
    "loopback_address",
    "method_not_allowed_handler",
    "read_body",
    "remote_address",
    "replaying",
    "same_secret",
    "token_matches",
    "too_deep_message",
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

JSONRPC_PATHS = frozenset({"/mcp"})
"""Paths that speak JSON-RPC (the MCP endpoint): the guards answer them with JSON-RPC errors."""

MAX_JSON_DEPTH = 64
"""Deepest nesting of arrays and objects a JSON body may have (checked before parsing):
the REST endpoints answer a deeper one 400, the MCP endpoint a JSON-RPC parse error."""

STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
"""Methods of the requests that change something (or spend model calls)."""

MESSAGE_MAX_CHARS = 300
"""Most characters of one field's message in a 422 (messages may quote the input)."""

JSON = "application/json"

_UNAUTHORIZED = "missing or invalid bearer token: send 'Authorization: Bearer <COGITO_API_TOKEN>'"


PARSE_ERROR = -32700
"""JSON-RPC error code of a body that is not JSON (or not UTF-8, or nested too deep)."""


def jsonrpc_error_body(status: int, detail: str, *, code: int | None = None) -> bytes:
    """A JSON-RPC error object for an HTTP error the transport answers before the SDK.

    The request's id is unknown (``null``); the code is ``code``, else -32000
    (server error) for a 429 or 5xx and -32600 (invalid request) for other
    statuses; ``detail`` repeats the message, as in the REST endpoints' errors.

    Example:
        ```python
        import json

        from cogito_lc.service._guard import jsonrpc_error_body

        body = json.loads(jsonrpc_error_body(413, "request body over 1024 bytes"))
        assert body["error"] == {"code": -32600, "message": "request body over 1024 bytes"}
        assert body["id"] is None
        ```
    """
    if code is None:
        code = -32000 if status == 429 or status >= 500 else -32600
    error = {"code": code, "message": detail}
    return json.dumps({"jsonrpc": "2.0", "id": None, "error": error, "detail": detail}).encode()


async def _send_json(
    send: Send,
    status: int,
    detail: str,
    headers: dict[str, str] | None = None,
    *,
    scope: Scope | None = None,
) -> None:
    jsonrpc = scope is not None and scope.get("path") in JSONRPC_PATHS
    body = (
        jsonrpc_error_body(status, detail) if jsonrpc else json.dumps({"detail": detail}).encode()
    )
    raw_headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *((key.lower().encode(), value.encode()) for key, value in (headers or {}).items()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    await send({"type": "http.response.body", "body": body})


def token_matches(header: str | bytes | None, expected: bytes) -> bool:
    """Whether an ``Authorization`` header carries the bearer token (constant-time compare).

    The header's bytes are compared as sent: pass the raw header, or a string
    decoded as Latin-1, as HTTP servers decode headers (it encodes back to the
    bytes sent). Tokens are ASCII (the settings refuse others), so a header with
    other bytes never matches.

    Example:
        ```python
        from cogito_lc.service._guard import token_matches

        assert token_matches("Bearer s3cret", b"s3cret")
        assert token_matches(b"Bearer  s3cret ", b"s3cret")
        assert not token_matches("Bearer nope", b"s3cret")
        ```
    """
    if not header:
        return False
    raw = header if isinstance(header, bytes) else _as_sent(header)
    scheme, _, given = raw.partition(b" ")
    if scheme.lower() != b"bearer":
        return False
    return same_secret(given.strip(), expected)


def _as_sent(header: str) -> bytes:
    """The bytes of a header decoded as Latin-1 (a string beyond it: as UTF-8)."""
    try:
        return header.encode("latin-1")
    except UnicodeEncodeError:
        return header.encode("utf-8", "surrogateescape")


def same_secret(given: str | bytes | None, expected: bytes | str) -> bool:
    """Whether ``given`` is the secret ``expected`` (constant-time; empty never matches).

    Strings are compared as UTF-8 (a form's fields are decoded from it), bytes as they are.
    """
    if not given:
        return False
    sent = given if isinstance(given, bytes) else given.encode("utf-8", "surrogateescape")
    wanted = expected.encode() if isinstance(expected, str) else expected
    return hmac.compare_digest(sent, wanted)


def _header(scope: Scope, name: bytes) -> str | None:
    raw = _raw_header(scope, name)
    return None if raw is None else raw.decode("latin-1")


def _raw_header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return bytes(value)
    return None


_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_A_BRACKET = bytes(byte for byte in range(256) if byte not in b"[]{}")
_OPENING = frozenset(b"[{")
_INT_DIGITS = getattr(sys, "get_int_max_str_digits", lambda: 0)()
_LONG_DIGITS = re.compile(rb"[0-9]{%d}" % (_INT_DIGITS + 1)) if _INT_DIGITS else None
"""A run of digits longer than Python converts to an int (none without a limit)."""


def json_too_deep(body: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether the JSON text ``body`` nests arrays and objects deeper than ``limit``.

    Counted on the raw bytes, before any parsing (a recursive parser fails on
    thousands of levels); brackets inside strings do not count.

    Example:
        ```python
        from cogito_lc.service._guard import json_too_deep

        assert not json_too_deep(b'{"a": [[1]], "b": "[[[[["}', limit=3)
        assert json_too_deep(b"[" * 10_000 + b"]" * 10_000, limit=64)
        ```
    """
    skeleton = _JSON_STRING.sub(b"", body).translate(None, _NOT_A_BRACKET)
    depth = 0
    for byte in skeleton:
        if byte in _OPENING:
            depth += 1
            if depth > limit:
                return True
        elif depth:
            depth -= 1
    return False


def too_deep_message(max_depth: int = MAX_JSON_DEPTH) -> str:
    """The error message of a JSON body nested deeper than ``max_depth``."""
    return f"the body nests arrays or objects deeper than {max_depth} levels; send a flatter one"


def content_type_problem(content_type: str | None) -> str | None:
    """Why a JSON-RPC request's ``Content-Type`` is refused (HTTP 415), or None.

    The body must be JSON (``application/json``) in UTF-8: a ``charset`` other
    than UTF-8 is refused rather than guessed.

    Example:
        ```python
        from cogito_lc.service._guard import content_type_problem

        assert content_type_problem("application/json; charset=utf-8") is None
        assert "charset" in content_type_problem("application/json; charset=latin-1")
        ```
    """
    media_type, _, parameters = (content_type or "").partition(";")
    if not is_json_media(media_type):
        sent = f"Content-Type {content_type!r}" if content_type else "no Content-Type"
        return f"the body must be JSON sent with 'Content-Type: {JSON}'; got {sent}"
    for parameter in parameters.split(";"):
        name, _, value = parameter.partition("=")
        charset = value.strip().strip('"').lower()
        if name.strip().lower() == "charset" and charset not in {"utf-8", "utf8"}:
            return (
                f"charset {value.strip()!r} is not supported: send the JSON as UTF-8 "
                f"('Content-Type: {JSON}' or charset=utf-8)"
            )
    return None


def body_problem(body: bytes, *, max_depth: int = MAX_JSON_DEPTH) -> str | None:
    """Why a JSON-RPC body is not JSON (HTTP 400, parse error), or None.

    Bytes that are not UTF-8 and nesting deeper than ``max_depth`` are found
    before parsing (a parser fails on them with an error other than a syntax
    error, or a recursion error); then the JSON syntax is checked, refusing the
    numbers JSON has no value for (``NaN``, ``Infinity``, ``1e400``), which
    would otherwise be read as null.

    Example:
        ```python
        from cogito_lc.service._guard import body_problem

        assert body_problem(b'{"jsonrpc": "2.0"}') is None
        assert "UTF-8" in body_problem(b'{"x": "' + bytes([0xFF]) + b'"}')
        assert "deeper than 64" in body_problem(b"[" * 65 + b"]" * 65)
        assert body_problem(b"hello") == (
            "the body is not JSON: Expecting value at line 1, column 1"
        )
        assert "NaN is not a JSON number" in body_problem(b'{"threshold": NaN}')
        ```
    """
    unreadable, syntax = _problems(body, max_depth)
    return unreadable or syntax


def unreadable_problem(body: bytes, max_depth: int = MAX_JSON_DEPTH) -> str | None:
    """Why a body cannot be read as JSON at all, syntax apart (HTTP 400), or None.

    It parses the body only when it holds a run of digits too long to convert,
    so a readable body is parsed once, where it is validated.

    Example:
        ```python
        from cogito_lc.service._guard import unreadable_problem

        assert unreadable_problem(b'{"text": 1') is None  # a syntax error: named elsewhere
        assert "UTF-8" in unreadable_problem(b'{"x": "' + bytes([0xFF]) + b'"}')
        ```
    """
    return _problems(body, max_depth, always_parse=False)[0]


def _problems(
    body: bytes, max_depth: int, *, always_parse: bool = True
) -> tuple[str | None, str | None]:
    """Why ``body`` cannot be read (not UTF-8, too deep, a number too long), and its syntax error.

    A parser fails on the first three with an error other than a syntax error,
    or a recursion error, so they are found apart. Without ``always_parse``, the
    body is parsed only when a number in it may be too long, and no syntax error
    is given.
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"the body is not valid UTF-8 (byte {exc.start + 1}): send the JSON as UTF-8", None
    if json_too_deep(body, max_depth):
        return too_deep_message(max_depth), None
    if not always_parse and (_LONG_DIGITS is None or not _LONG_DIGITS.search(body)):
        return None, None
    return _parse_problems(text)


def _parse_problems(text: str) -> tuple[str | None, str | None]:
    """Why the JSON ``text`` cannot be read (a number too long), and its syntax error."""
    try:
        json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        return None, f"the body is not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
    except _NonFiniteError as exc:
        return None, f"the body is not JSON: {exc}"
    except (ValueError, RecursionError) as exc:  # e.g. a number too long to convert
        return f"the body is not JSON the server can read: {str(exc).partition(';')[0]}", None
    return None, None


class _NonFiniteError(ValueError):
    """A number JSON has no value for: ``NaN``, ``Infinity``, or one too large for a float."""


def _refuse_constant(name: str) -> float:
    msg = f"{name} is not a JSON number; send a finite number"
    raise _NonFiniteError(msg)


def _finite_float(literal: str) -> float:
    value = float(literal)
    if math.isinf(value):
        shown = literal if len(literal) <= 40 else literal[:39] + "…"
        msg = f"the number {shown} is too large for a float; send a finite number"
        raise _NonFiniteError(msg)
    return value


MAX_FAILED_LOGINS = 10
"""Wrong tokens (API calls and inspector logins) a client address may send within
:data:`FAILED_LOGIN_WINDOW_SECONDS`."""

FAILED_LOGIN_WINDOW_SECONDS = 60.0
"""The window the wrong tokens of an address are counted in."""

MAX_LOGIN_CLIENTS = 4096
"""Client addresses whose wrong tokens are remembered; the least recent goes first."""


class LoginLimiter:
    """Wrong tokens by client address, in a sliding window: too many and the address waits.

    Example:
        ```python
        from cogito_lc.service._guard import LoginLimiter

        limiter = LoginLimiter(max_failures=2, window=60.0)
        limiter.failed("10.0.0.7")
        assert limiter.retry_after("10.0.0.7") is None
        limiter.failed("10.0.0.7")
        assert 0 < (limiter.retry_after("10.0.0.7") or 0) <= 60
        assert limiter.retry_after("10.0.0.8") is None
        ```
    """

    def __init__(
        self,
        max_failures: int = MAX_FAILED_LOGINS,
        window: float = FAILED_LOGIN_WINDOW_SECONDS,
        max_clients: int = MAX_LOGIN_CLIENTS,
    ) -> None:
        self.max_failures = max_failures
        self.window = window
        self.max_clients = max_clients
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()

    def _recent(self, client: str, now: float) -> deque[float] | None:
        failures = self._failures.get(client)
        if failures is None:
            return None
        while failures and failures[0] <= now - self.window:
            failures.popleft()
        if not failures:
            del self._failures[client]
            return None
        return failures

    def retry_after(self, client: str) -> int | None:
        """Seconds ``client`` must wait before its next try, or None: it may try now."""
        now = time.monotonic()
        failures = self._recent(client, now)
        if failures is None or len(failures) < self.max_failures:
            return None
        return max(1, math.ceil(failures[0] + self.window - now))

    def failed(self, client: str) -> None:
        """Count a wrong token of ``client``."""
        now = time.monotonic()
        failures = self._recent(client, now) or deque(maxlen=self.max_failures)
        failures.append(now)
        self._failures[client] = failures
        self._failures.move_to_end(client)
        while len(self._failures) > self.max_clients:
            self._failures.popitem(last=False)


class BearerAuthMiddleware:
    """Answers 401 to any request outside :data:`OPEN_PATHS` without the right bearer token.

    Paths under ``open_prefixes`` (the inspector at ``/ui``, whose pages check their
    own session cookie) are passed on without a token. A wrong token (an
    ``Authorization`` header that does not match) counts against the client
    address in ``limiter``; an address over its limit gets 429 with
    ``Retry-After``, even with the right token, until its oldest wrong token
    leaves the window.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: bytes,
        open_prefixes: Iterable[str] = (),
        limiter: LoginLimiter | None = None,
    ) -> None:
        self.app = app
        self.token = token
        self.open_prefixes = tuple(open_prefixes)
        self.limiter = limiter or LoginLimiter()

    def _is_open(self, path: str) -> bool:
        return path in OPEN_PATHS or any(
            path == prefix or path.startswith(prefix + "/") for prefix in self.open_prefixes
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the token, then pass the request on."""
        if scope["type"] != "http" or self._is_open(scope.get("path", "")):
            await self.app(scope, receive, send)
            return
        client = scope["client"][0] if scope.get("client") else "unknown"
        wait = self.limiter.retry_after(client)
        if wait is not None:
            logger.warning("API requests refused for %ss: too many wrong tokens", wait)
            detail = f"too many wrong tokens from this address; retry in {wait} s"
            await _send_json(send, 429, detail, {"Retry-After": str(wait)}, scope=scope)
            return
        header = _raw_header(scope, b"authorization")
        if not token_matches(header, self.token):
            if header is not None:
                self.limiter.failed(client)
            await _send_json(send, 401, _UNAUTHORIZED, {"WWW-Authenticate": "Bearer"}, scope=scope)
            return
        await self.app(scope, receive, send)


class LoopbackHostMiddleware:
    """Answers 421 to a request whose ``Host`` is not a loopback name or an allowed one.

    A server bound to loopback trusts that only this machine reaches it. A web
    page can break that by pointing its own name at 127.0.0.1 (DNS rebinding):
    the browser then sends the page's name as ``Host``, which this refuses. A
    request without ``Host`` (HTTP/1.0) comes from no browser and passes.

    With ``loopback_only`` (a server without a token), a request whose connection
    was not made over loopback gets 403, whatever its ``Host`` says: the local
    address it arrived on (ASGI ``server``) and the peer's (``client``) must both be
    loopback addresses (see :func:`loopback_address`). This holds however the app
    is served, such as ``uvicorn --factory ... --host 0.0.0.0``.

    A request to :data:`JSONRPC_PATHS` sent by a web page whose ``Origin`` is not
    on such a host gets 403 (a JSON-RPC error): a page elsewhere may not call the
    MCP tools through its visitor's browser. With ``loopback_only``, whose requests
    carry no credential, a request that changes something (:data:`STATE_CHANGING`)
    anywhere else but under ``csrf_prefixes`` (the inspector, whose forms carry their
    own CSRF token) gets 403 unless its ``Origin`` is this server itself (the ``Host``
    it was sent to) or on one of ``allowed_hosts``: no page, not even one on another
    loopback port, may store, forget, build or calibrate through its visitor's
    browser. With a token a page cannot send, any client holding it may (a browser
    extension too). A request without ``Origin`` (no browser sent it) passes.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        allowed_hosts: Iterable[str] = (),
        loopback_only: bool = False,
        csrf_prefixes: Iterable[str] = (),
    ) -> None:
        self.app = app
        self.allowed_hosts = frozenset(host.lower() for host in allowed_hosts)
        self.loopback_only = loopback_only
        self.csrf_prefixes = tuple(csrf_prefixes)

    def _origin_refused(self, scope: Scope, origin: str, host: str | None) -> bool:
        """Whether the web page of ``Origin`` may not send this request."""
        path = scope.get("path", "")
        if path in JSONRPC_PATHS:
            return not self._allowed_origin(origin)
        if (
            not self.loopback_only
            or scope.get("method") not in STATE_CHANGING
            or any(path == prefix or path.startswith(prefix + "/") for prefix in self.csrf_prefixes)
        ):
            return False
        return not self._own_origin(origin, host)

    def _own_origin(self, origin: str, host: str | None) -> bool:
        """Whether ``Origin`` is the server the request was sent to, or on an allowed host."""
        origin_host = _web_host(origin)
        if origin_host is None:
            return False
        same = host is not None and origin_host.lower() == host.strip().lower()
        return same or host_name(origin_host) in self.allowed_hosts

    def _allowed(self, host: str | None) -> bool:
        if host is None:
            return True
        name = host_name(host)
        return bool(name) and (is_loopback(name) or name in self.allowed_hosts)

    def _allowed_origin(self, origin: str) -> bool:
        host = _web_host(origin)
        return host is not None and self._allowed(host)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the connection, the ``Host`` and the ``Origin`` headers, then pass on."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        remote = remote_address(scope) if self.loopback_only else None
        if remote is not None:
            detail = (
                f"this server has no API token and answers only connections over loopback, "
                f"not one through {remote}: set COGITO_API_TOKEN (api_token) to serve other "
                "machines, or connect to 127.0.0.1 from this one"
            )
            await _send_json(send, 403, detail, scope=scope)
            return
        host = _header(scope, b"host")
        if not self._allowed(host):
            detail = (
                f"the Host header names {host_name(host or '')!r}, which is not a loopback "
                "host: reach this server as 127.0.0.1 or localhost, or add the name to "
                "allowed_hosts (COGITO_ALLOWED_HOSTS) when a proxy forwards it"
            )
            await _send_json(send, 421, detail, scope=scope)
            return
        origin = _header(scope, b"origin")
        if origin is not None and self._origin_refused(scope, origin, host):
            await _send_json(send, 403, _origin_refusal(scope, origin), scope=scope)
            return
        await self.app(scope, receive, send)


def _origin_refusal(scope: Scope, origin: str) -> str:
    """Why a page of ``origin`` was refused, and what would let its request in."""
    mcp = scope.get("path") in JSONRPC_PATHS
    pages = "on a loopback host" if mcp else "of this server"
    fixes = ["call it from outside a browser"]
    if _web_host(origin) is not None:
        fixes.append("add the page's host name to allowed_hosts (COGITO_ALLOWED_HOSTS)")
    if not mcp:
        fixes.append("set an API token (COGITO_API_TOKEN) for the client to send")
    return (
        f"{scope.get('method')} {scope.get('path')} answers only pages {pages}, not "
        f"Origin {origin!r}: {', or '.join(fixes)}"
    )


def _web_host(origin: str) -> str | None:
    """The host (and port) of an ``http``/``https`` ``Origin``; None for any other origin."""
    scheme, _, host = origin.partition("://")
    if scheme.lower() not in {"http", "https"} or "/" in host:
        return None
    return host


def remote_address(scope: Scope) -> str | None:
    """The socket address of a connection not made over loopback, or None.

    Both ends are checked: the local address the connection arrived on (ASGI
    ``server``) and the peer's (``client``). An end the server does not report
    (a Unix socket), or reports as a name rather than an IP address (an
    in-process transport such as a test client), is no network socket and passes.

    Example:
        ```python
        from cogito_lc.service._guard import remote_address

        local = {"server": ("127.0.0.1", 19420), "client": ("127.0.0.1", 50000)}
        assert remote_address(local) is None
        lan = {"server": ("192.168.1.20", 19420), "client": ("192.168.1.7", 50000)}
        assert remote_address(lan) == "192.168.1.20:19420"
        ```
    """
    for end in ("server", "client"):
        address = scope.get(end)
        if address and not loopback_address(str(address[0])):
            host = f"[{address[0]}]" if ":" in str(address[0]) else address[0]
            return f"{host}:{address[1]}"
    return None


def loopback_address(address: str) -> bool:
    """Whether a socket address is loopback (IPv4 in IPv6 too); a name that is no IP passes.

    Example:
        ```python
        from cogito_lc.service._guard import loopback_address

        assert loopback_address("::ffff:127.0.0.1")  # an IPv4 connection to a dual-stack socket
        assert not loopback_address("192.0.2.2")
        assert loopback_address("testserver")  # not a network socket's address
        ```
    """
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return True
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def host_name(host: str) -> str:
    """The name of a ``Host`` header, lower-cased, without its port or IPv6 brackets.

    Example:
        ```python
        from cogito_lc.service._guard import host_name

        assert host_name("[::1]:19420") == "::1"
        assert host_name("LocalHost.:80") == "localhost"
        ```
    """
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].partition("]")[0]
    return host.partition(":")[0].removesuffix(".")  # "localhost." is "localhost"


class BodyLimitMiddleware:
    """Answers 413 to a request body over ``max_bytes``, 400 to a JSON body nested too deep.

    A body sent as JSON (``Content-Type`` JSON, or none: FastAPI parses it as
    JSON then) to any path but :data:`JSONRPC_PATHS` (which check their own) is
    read whole, up to ``max_bytes``, and refused with 400 when it nests arrays or
    objects deeper than ``max_json_depth`` (:func:`json_too_deep`); None: no check.
    """

    def __init__(
        self, app: ASGIApp, *, max_bytes: int, max_json_depth: int | None = MAX_JSON_DEPTH
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.max_json_depth = max_json_depth

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
                await _send_json(send, 400, "Content-Length is not a number", scope=scope)
                return
            if int(declared) > self.max_bytes:
                await _send_json(send, 413, self._too_large(), scope=scope)
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

        if self.max_json_depth is not None and _sends_json(scope):
            content_type = _header(scope, b"content-type")
            problem = None if content_type is None else content_type_problem(content_type)
            if problem is not None:  # a charset other than UTF-8
                await _send_json(send, 415, problem, scope=scope)
                return
            await self.app(scope, _depth_checked(limited, self.max_json_depth), send)
            return
        await self.app(scope, limited, send)


def _sends_json(scope: Scope) -> bool:
    """Whether a request's body is parsed as JSON by a REST endpoint."""
    if scope.get("path") in JSONRPC_PATHS or scope.get("method") in {"GET", "HEAD", "OPTIONS"}:
        return False
    content_type = _header(scope, b"content-type")
    return content_type is None or is_json_media(content_type)


def _depth_checked(receive: Receive, max_depth: int) -> Receive:
    """``receive`` giving the whole body at the first call, once its nesting is checked.

    Raising the 400 from ``receive`` lets FastAPI answer it as any HTTP error
    (it re-raises an ``HTTPException`` met while reading a body).
    """
    replay: Receive | None = None

    async def checked() -> Message:
        nonlocal replay
        if replay is None:
            body = await read_body(receive)
            if not isinstance(body, bytes):
                return body  # the client left
            problem = unreadable_problem(body, max_depth) if body else None
            if problem is not None:
                raise HTTPException(400, problem)
            replay = replaying(body, receive)
        return await replay()

    return checked


async def read_body(receive: Receive) -> bytes | Message:
    """The whole request body, or the message that came first instead (the client left)."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return message
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def replaying(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` giving ``body`` whole at its first call, then the client's own messages."""
    given = False

    async def replay() -> Message:
        nonlocal given
        if given:
            return await receive()
        given = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


class ConcurrencyLimitMiddleware:
    """Answers 503 with ``Retry-After: 1`` while ``max_requests`` requests are in flight.

    A ``GET`` of :data:`JSONRPC_PATHS` (an MCP event stream, open until it idles
    out) is not counted: the MCP endpoint caps those streams itself, so open
    streams never turn other requests away.
    """

    def __init__(self, app: ASGIApp, *, max_requests: int) -> None:
        self.app = app
        self.max_requests = max_requests
        self.in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Count the request in, or turn it away when the server is full."""
        if scope["type"] != "http" or scope.get("path") in OPEN_PATHS or _event_stream(scope):
            await self.app(scope, receive, send)
            return
        if self.in_flight >= self.max_requests:
            await _send_json(
                send, 503, "server busy; retry shortly", {"Retry-After": "1"}, scope=scope
            )
            return
        self.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1


def _event_stream(scope: Scope) -> bool:
    return scope.get("method") == "GET" and scope.get("path") in JSONRPC_PATHS


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


def is_json_media(content_type: str | None) -> bool:
    """Whether ``content_type`` names JSON: ``application/json`` or ``application/*+json``."""
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
    if tuple(error.get("loc", ())) == ("body",) and not is_json_media(content_type):
        sent = f"Content-Type {content_type!r}" if content_type else "no Content-Type"
        message = f"the body must be a JSON object sent with 'Content-Type: {JSON}'; got {sent}"
        return FieldError(field="body", message=_capped(message), type="content_type")
    return FieldError(field=field, message=_capped(readable_message(error)), type=error["type"])


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
    matched (``GET`` for ``/memories/{id}``, which ``DELETE`` serves too). The
    routes of the request's app are asked too, so routers included after the
    handler was made (the inspector's, at ``/ui``) are named; static files
    allow ``GET`` and ``HEAD``.

    Args:
        routes: Routes to ask besides the app's (the routers' own, before inclusion).
    """
    known = list(routes)

    async def method_not_allowed(request: Request, exc: Exception) -> JSONResponse:
        methods: set[str] = set()
        probe = dict(request.scope)  # a mount (static files) moved the root path: undo it
        probe["root_path"] = probe.get("app_root_path", probe.get("root_path", ""))
        for route in _leaf_routes([*known, *request.app.routes]):
            match, _ = route.matches(probe)
            if match is not Match.NONE:
                methods |= _route_methods(route)
        allowed = ", ".join(sorted(methods))
        return JSONResponse(
            status_code=405,
            content={"detail": f"method {request.method} is not allowed here; use {allowed}"},
            headers={"Allow": allowed},
        )

    return method_not_allowed


def _leaf_routes(routes: Iterable[BaseRoute]) -> Iterator[BaseRoute]:
    """The routes, an included router's own routes in its place.

    FastAPI keeps a router included without a prefix whole (``original_router``);
    the routes of the app's routers carry their full paths (``/ui/...``).
    """
    for route in routes:
        router = getattr(route, "original_router", None)
        if router is None:
            yield route
        else:
            yield from _leaf_routes(router.routes)


def _route_methods(route: BaseRoute) -> set[str]:
    if isinstance(route, Mount) and isinstance(route.app, StaticFiles):
        return {"GET", "HEAD"}
    methods: set[str] | None = getattr(route, "methods", None)
    return set(methods or ())


async def unhandled_error_handler(request: Request, exc: Exception) -> JSONResponse:
    """500 with no detail; Starlette re-raises the error for the server to log it."""
    return JSONResponse(status_code=500, content={"detail": "internal server error"})
