"""Sessions of the inspector: a random id in an ``HttpOnly`` cookie, the token never stored.

A session is made by a login that gave the server's bearer token (or, on a
server without a token, by any login); it holds its scope and the CSRF token
every state-changing request must send back. Its scope is fixed at login, unless
the login named none on a server that lets requests choose their scope: such a
session may list every scope and switch between them (``all_scopes``). Sessions
live in the server's memory: a restart logs everyone out.

Failed logins are limited per client address (:class:`LoginLimiter`, shared with
the API's bearer check): after :data:`MAX_FAILED_LOGINS` wrong tokens within
:data:`FAILED_LOGIN_WINDOW_SECONDS`, the address gets 429 until the oldest of them
is that old.
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from cogito_lc.service._guard import (
    FAILED_LOGIN_WINDOW_SECONDS,
    MAX_FAILED_LOGINS,
    MAX_LOGIN_CLIENTS,
    LoginLimiter,
)

__all__ = [
    "FAILED_LOGIN_WINDOW_SECONDS",
    "MAX_FAILED_LOGINS",
    "MAX_LOGIN_CLIENTS",
    "LoginLimiter",
    "Session",
    "SessionStore",
]

SESSION_TTL_SECONDS = 8 * 3600.0
"""How long a session lasts without a request."""

MAX_SESSIONS = 1024
"""Sessions kept at once; the least recently used goes first."""


@dataclass
class Session:
    """One logged-in browser."""

    id: str
    scope: str | None
    """The ``user_id`` the session acts in; None: the server's configured scope."""
    all_scopes: bool = False
    """Whether the session may list every scope and switch to any of them (a login that
    named no scope, by header or form, on a server with ``allow_request_scope``)."""
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    """The token every form and htmx request that changes something sends back."""
    expires: float = 0.0


class SessionStore:
    """Sessions by id, each expiring :data:`SESSION_TTL_SECONDS` after its last use."""

    def __init__(self, ttl: float = SESSION_TTL_SECONDS, max_sessions: int = MAX_SESSIONS) -> None:
        self.ttl = ttl
        self.max_sessions = max_sessions
        self._sessions: OrderedDict[str, Session] = OrderedDict()

    def create(self, scope: str | None, *, all_scopes: bool = False) -> Session:
        """A new session in ``scope`` (that may switch to any scope with ``all_scopes``)."""
        session = Session(id=secrets.token_urlsafe(32), scope=scope, all_scopes=all_scopes)
        session.expires = time.monotonic() + self.ttl
        self._sessions[session.id] = session
        while len(self._sessions) > self.max_sessions:
            self._sessions.popitem(last=False)
        return session

    def get(self, session_id: str | None) -> Session | None:
        """The live session of this id (its lifetime renewed), or None."""
        if not session_id:
            return None
        session = self._sessions.get(session_id)
        if session is None:
            return None
        now = time.monotonic()
        if session.expires < now:
            del self._sessions[session_id]
            return None
        session.expires = now + self.ttl
        self._sessions.move_to_end(session_id)
        return session

    def drop(self, session_id: str | None) -> None:
        """End a session (logout)."""
        if session_id:
            self._sessions.pop(session_id, None)
