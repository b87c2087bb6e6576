"""Sessions of the inspector: a random id in an ``HttpOnly`` cookie, the token never stored.

A session is made by a login that gave the server's bearer token (or, on a
server without a token, by any login); it holds its scope, fixed at login, and
the CSRF token every state-changing request must send back. Sessions live in
the server's memory: a restart logs everyone out.
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass, field

__all__ = ["Session", "SessionStore"]

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
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    """The token every form and htmx request that changes something sends back."""
    expires: float = 0.0


class SessionStore:
    """Sessions by id, each expiring :data:`SESSION_TTL_SECONDS` after its last use."""

    def __init__(self, ttl: float = SESSION_TTL_SECONDS, max_sessions: int = MAX_SESSIONS) -> None:
        self.ttl = ttl
        self.max_sessions = max_sessions
        self._sessions: OrderedDict[str, Session] = OrderedDict()

    def create(self, scope: str | None) -> Session:
        """A new session in ``scope``."""
        session = Session(id=secrets.token_urlsafe(32), scope=scope)
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
