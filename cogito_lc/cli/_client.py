"""How the CLI reaches the memory: in process on the embedded store, or over HTTP.

Both paths speak the service's HTTP API, so they answer with the same shapes:
without ``--server`` the app runs in process on the store the configuration
names (no server, no port); with ``--server URL`` requests go to that server.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any
from urllib.parse import quote, urlsplit

import httpx

from cogito_lc._core.display import escape_controls

__all__ = ["ApiClient", "CliError", "check_server_url", "check_utf8"]

EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_NOT_FOUND = 4
EXIT_INTERRUPTED = 130
"""Ctrl-C (SIGINT), as shells report a command a SIGINT ended (128 + 2)."""
_WRITE_GRACE_S = 30.0
"""Longest wait, after Ctrl-C, for a write of the in-process app under way to end."""
_USER_ASCII = ".:@+-"
"""Characters of a user id, besides letters, digits and ``_``, a header carries as they are."""


class CliError(Exception):
    """A failure the CLI reports as one line and an exit code."""

    def __init__(self, message: str, exit_code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def check_utf8(value: str, name: str) -> str:
    """``value`` unchanged, or a usage error when it holds bytes that are not UTF-8.

    A shell argument with such bytes reaches Python as lone surrogates, which
    no JSON request can carry.
    """
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        msg = (
            f"{name} is not valid UTF-8 text (character {exc.start + 1}); "
            "pass UTF-8 text (check the terminal's or the file's encoding)."
        )
        raise CliError(msg, EXIT_USAGE) from None
    return value


def check_server_url(value: str) -> str:
    """``value`` stripped, or a usage error when it is not an ``http(s)://`` URL with a host.

    Example:
        ```python
        from cogito_lc.cli._client import CliError, check_server_url

        assert check_server_url(" http://127.0.0.1:19420 ") == "http://127.0.0.1:19420"
        try:
            check_server_url("notaurl")
        except CliError as exc:
            assert exc.exit_code == 2
        ```
    """
    try:
        parts = urlsplit(value.strip())
        valid = parts.scheme in {"http", "https"} and bool(parts.hostname)
        _ = parts.port  # a port that is not a number, or out of range, is a ValueError
    except ValueError:
        valid = False
    if not valid:
        msg = (
            f"--server (COGITO_SERVER) must be an http:// or https:// URL, got "
            f"{escape_controls(repr(value))}; pass e.g. --server http://127.0.0.1:19420, "
            "or drop it to use the embedded store."
        )
        raise CliError(msg, EXIT_USAGE)
    return value.strip()


def _ascii_token(token: str) -> str:
    if not token.isascii():
        msg = (
            "--token (COGITO_API_TOKEN) holds characters that are not ASCII, which an HTTP "
            "header cannot carry; pass the server's token as it was generated."
        )
        raise CliError(msg, EXIT_USAGE)
    return token


def _detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:200] or response.reason_phrase
    if isinstance(body, dict):
        errors = body.get("errors")
        if isinstance(errors, list) and errors:
            return "; ".join(
                f"{e.get('field', '?')}: {e.get('message', '')}"
                for e in errors
                if isinstance(e, dict)
            )
        return str(body.get("detail") or body.get("error") or body)
    return str(body)


def _no_such_route(response: httpx.Response) -> bool:
    """Whether a 404 says the path is unknown (not the API), not that a memory is."""
    try:
        body = response.json()
    except ValueError:
        return True
    return not isinstance(body, dict) or body.get("detail") == "Not Found"


class ApiClient:
    """A thin client of the memory service's HTTP API."""

    def __init__(
        self,
        http: Any,
        where: str,
        headers: dict[str, str] | None = None,
        *,
        is_remote: bool = True,
    ) -> None:
        self._http = http
        self.where = where
        self._headers = headers or {}
        self.is_remote = is_remote
        """Whether the API is a server's (a ``--server`` URL), not this process's own."""
        self._sigint: Any = None

    @classmethod
    def remote(cls, url: str, *, token: str | None, user: str | None) -> ApiClient:
        """A client of the server at ``url``; ``user`` goes in ``X-Cogito-User``.

        A header carries ASCII, so the user id is percent-encoded from UTF-8
        (``zo%C3%AB`` for ``zoë``), as the server expects; ASCII ids go as they are.
        """
        headers = {"Authorization": f"Bearer {_ascii_token(token)}"} if token else {}
        if user:
            headers["X-Cogito-User"] = quote(check_utf8(user, "--user"), safe=_USER_ASCII)
        http = httpx.Client(base_url=url.rstrip("/"), timeout=httpx.Timeout(120.0, connect=5.0))
        return cls(http, url, headers)

    @classmethod
    def local(cls, app: Any, *, token: str | None) -> ApiClient:
        """A client of ``app`` running in this process (lifespan included)."""
        from fastapi.testclient import TestClient

        http = TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return cls(http, "the embedded store", headers, is_remote=False)

    def __enter__(self) -> ApiClient:
        if isinstance(self._http, AbstractContextManager):
            self._http.__enter__()
        if not self.is_remote and threading.current_thread() is threading.main_thread():
            self._sigint = signal.signal(signal.SIGINT, self._interrupted)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._sigint is not None:
            signal.signal(signal.SIGINT, self._sigint)
            self._sigint = None
        if isinstance(self._http, AbstractContextManager):
            self._http.__exit__(*exc)

    def _interrupted(self, signum: int, frame: Any) -> None:
        """End the process on Ctrl-C with one line and exit code 130.

        The app's worker threads cannot be cancelled (a model call may wait long), so
        the process exits at once, after any write under way has ended; state files
        are replaced whole, so nothing half-written is left.
        """
        sys.stderr.write("interrupted\n")
        sys.stderr.flush()
        sys.stdout.flush()
        service = getattr(getattr(self.app, "state", None), "service", None)
        writes = getattr(service, "writes", None)
        deadline = time.monotonic() + _WRITE_GRACE_S
        while writes is not None and writes.borrowed_tokens and time.monotonic() < deadline:
            time.sleep(0.05)
        os._exit(EXIT_INTERRUPTED)

    @property
    def app(self) -> Any | None:
        """The in-process app, or None for a remote server."""
        return getattr(self._http, "app", None)

    def call(
        self, method: str, path: str, body: dict[str, Any] | None = None, **params: Any
    ) -> Any:
        """Send one request; return the JSON answer or raise a one-line :class:`CliError`."""
        with self._errors():
            response = self._http.request(
                method, path, json=body, params=params or None, headers=self._headers
            )
        self._check(response)
        try:
            return response.json()
        except ValueError:
            raise CliError(self._not_the_api(path)) from None

    def events(self, path: str, body: dict[str, Any]) -> Iterator[tuple[str, Any]]:
        """POST ``body`` and yield the server-sent events of the answer as they arrive."""
        with (
            self._errors(),
            self._http.stream("POST", path, json=body, headers=self._headers) as response,
        ):
            if response.status_code >= 400:
                response.read()
                self._check(response)
            name = "message"
            for line in response.iter_lines():
                if line.startswith("event:"):
                    name = line.partition(":")[2].strip()
                elif line.startswith("data:"):
                    yield name, json.loads(line.partition(":")[2])

    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except httpx.ConnectError:
            msg = (
                f"no cogito-lc server answers at {self.where}; start one with "
                "`cogito-lc serve` or drop --server to use the embedded store."
            )
            raise CliError(msg) from None
        except httpx.TimeoutException:
            msg = f"the server at {self.where} did not answer in time."
            raise CliError(msg) from None
        except UnicodeEncodeError:
            msg = "bad input: a value is not valid UTF-8 text; pass UTF-8 text."
            raise CliError(msg, EXIT_USAGE) from None

    def _not_the_api(self, path: str) -> str:
        return (
            f"{self.where} does not answer {path} as the cogito-lc API does; check the "
            "--server URL (e.g. http://127.0.0.1:19420, with no path)."
        )

    def _no_route(self, path: str) -> str:
        if self.is_remote:
            return self._not_the_api(path)
        return f"the API has no route for {path}; this id cannot be sent in a URL path."

    def _check(self, response: httpx.Response) -> None:
        # Only the API's own 404 says a memory does not exist; a path no route matches does not.
        if response.status_code == 404 and _no_such_route(response):
            raise CliError(self._no_route(response.request.url.path))
        if response.status_code == 404:
            msg_0 = f"not found: {_detail(response)}"
            raise CliError(msg_0, EXIT_NOT_FOUND)
        if response.status_code in {400, 413, 422}:
            msg_0 = f"bad input: {_detail(response)}"
            raise CliError(msg_0, EXIT_USAGE)
        if response.status_code == 401:
            sent = "Authorization" in self._headers
            msg = (
                "the server refused the token: check --token or COGITO_API_TOKEN."
                if sent
                else "the server wants a token: pass --token or set COGITO_API_TOKEN."
            )
            raise CliError(msg)
        if response.status_code >= 400:
            msg_0 = f"{response.status_code} from {self.where}: {_detail(response)}"
            raise CliError(msg_0)
