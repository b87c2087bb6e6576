"""The inspector's routes under ``/ui``: login, scopes, memories, recall, one memory, health.

Pages are rendered on the server from Jinja templates with autoescaping, so a
memory's text and metadata reach the browser as text. The only script is the
vendored htmx (``static/vendor/htmx``), loaded from the server itself; the
Content-Security-Policy allows no other script, no inline script and no inline
style. The bearer token is sent once, to the login form; the browser keeps a
random session id in an ``HttpOnly``, ``SameSite=Strict`` cookie, marked
``Secure`` when the request came over https (``request.url.scheme``: the server
trusts no ``X-Forwarded-Proto``, so behind a proxy that ends TLS the cookie is
not marked; serve such a proxy's users over https only). Every POST carries the
session's CSRF token (a hidden field or ``X-CSRF-Token``) and gets 403 without
it. A client address that sent :data:`~cogito_lc.service.ui._sessions.MAX_FAILED_LOGINS`
wrong tokens within a minute gets 429 with ``Retry-After`` for its next logins
(behind a proxy every client shares the proxy's address, and its limit).

A session acts in one scope at a time, chosen at login by the same rules as the
API's requests: the configured ``user_id``; with ``allow_request_scope``, the
``X-Cogito-User`` header of a gateway or the scope typed at login. Such a
session is bound to that scope and its Scopes view shows it alone. A login that
names no scope on a server with ``allow_request_scope`` may act in any scope, as
the token may through the API: its Scopes view lists every ``user_id`` of the
store with its memory count (the first
:data:`~cogito_lc.service.ui._views.MAX_SCOPES_SHOWN`, by ``user_id``, and how many
more), and choosing one switches the session to it. A request carrying
``X-Cogito-User`` (a gateway) is always confined to the session's current scope.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, MutableMapping
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

from fastapi import APIRouter, FastAPI, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from fastapi.routing import APIRoute
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.staticfiles import StaticFiles

from cogito_lc import __version__
from cogito_lc.service._guard import same_secret, token_matches
from cogito_lc.service._schemas import is_user_id, scope_header_value
from cogito_lc.service._service import MemoryService, ScopeView
from cogito_lc.service.config import CogitoSettings
from cogito_lc.service.ui._sessions import LoginLimiter, Session, SessionStore
from cogito_lc.service.ui._views import health as health_of
from cogito_lc.service.ui._views import (
    list_memories,
    list_scopes,
    memory_detail,
    parse_instant,
    recall_explained,
)

__all__ = ["CONTENT_SECURITY_POLICY", "PREFIX", "mount_ui"]

logger = logging.getLogger(__name__)

PREFIX = "/ui"
"""Where the inspector is served."""

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
"""The policy of every inspector response: scripts and styles from the server only."""

SESSION_COOKIE = "cogito_ui"
LOGIN_COOKIE = "cogito_ui_login"
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "x-csrf-token"
RECALL_LIMIT = 20
"""Memories a recall shows by default."""

_HERE = Path(__file__).parent
_SCOPE_HEADER = "x-cogito-user"
_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
}

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


PREVIEW_CHARS = 400
"""Characters of a memory's text that lists (memories, recall, versions) show."""


class _LoginRequired(Exception):  # noqa: N818 - a redirect, not an error
    """The request has no live session."""


class UiHeadersMiddleware:
    """Adds the Content-Security-Policy and the other security headers to ``/ui`` responses."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on; add the headers to the response of an inspector path."""
        path = scope.get("path", "")
        if scope["type"] != "http" or not (path == PREFIX or path.startswith(PREFIX + "/")):
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {bytes(key).lower() for key, _ in headers}
                for key, value in _HEADERS.items():
                    if key.lower().encode() not in present:
                        headers.append((key.lower().encode(), value.encode()))
                if b"cache-control" not in present and not path.startswith(PREFIX + "/static/"):
                    headers.append((b"cache-control", b"no-store"))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, with_headers)


def _environment() -> Environment:
    environment = Environment(
        loader=FileSystemLoader(_HERE / "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        enable_async=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters["preview"] = _preview
    environment.globals["memory_url"] = _memory_url
    return environment


def _preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    """``text`` cut to ``limit`` characters, with an ellipsis (a memory's page shows it whole)."""
    return text if len(text) <= limit else text[:limit].rstrip() + "…"


class _Inspector:
    """The state the routes share: service, settings, token, sessions, templates."""

    def __init__(
        self,
        service: MemoryService,
        settings: CogitoSettings,
        token: bytes | None,
        logins: LoginLimiter | None = None,
    ) -> None:
        self.service = service
        self.settings = settings
        self.token = token
        self.sessions = SessionStore()
        self.logins = logins or LoginLimiter()
        self.templates = _environment()
        self.two_stage = service.options.filter_llm is not None

    # -- rendering ------------------------------------------------------------------

    def context(self, request: Request, session: Session | None, **values: Any) -> dict[str, Any]:
        scope = None if session is None else (session.scope or self.settings.user_id)
        return {
            "prefix": PREFIX,
            "version": __version__,
            "session": session,
            "scope": scope,
            "csrf": session.csrf if session is not None else "",
            "two_stage": self.two_stage,
            **values,
        }

    async def page(
        self,
        request: Request,
        name: str,
        session: Session | None,
        status: int = 200,
        **values: Any,
    ) -> HTMLResponse:
        template = self.templates.get_template(name)
        html = await template.render_async(self.context(request, session, **values))
        return HTMLResponse(html, status_code=status)

    async def error(
        self, request: Request, session: Session | None, status: int, detail: str
    ) -> HTMLResponse:
        return await self.page(
            request, "error.html", session, status=status, status_code=status, detail=detail
        )

    # -- sessions -------------------------------------------------------------------

    def session(self, request: Request) -> Session:
        """The request's live session; the gateway's scope header must name its scope."""
        session = self.sessions.get(request.cookies.get(SESSION_COOKIE))
        if session is None:
            raise _LoginRequired
        headers = request.headers.getlist(_SCOPE_HEADER)
        if len(headers) > 1:
            raise HTTPException(400, "X-Cogito-User was sent more than once")
        if headers and _header_scope(headers[0]) != (session.scope or self.settings.user_id):
            raise HTTPException(403, "this session belongs to another scope; log in again")
        return session

    def view(self, session: Session) -> ScopeView:
        return self.service.view(session.scope)

    def current_scope(self, session: Session) -> str:
        """The ``user_id`` the session acts in now."""
        return session.scope or self.settings.user_id

    def sees_all_scopes(self, request: Request, session: Session) -> bool:
        """Whether this request of the session may list and switch scopes (no gateway scope)."""
        return (
            session.all_scopes
            and self.settings.allow_request_scope
            and _SCOPE_HEADER not in request.headers
        )

    async def form(self, request: Request) -> dict[str, str]:
        content_type = request.headers.get("content-type", "").partition(";")[0].strip()
        if content_type != "application/x-www-form-urlencoded":
            return {}
        body = (await request.body()).decode("utf-8", "replace")
        return dict(parse_qsl(body, keep_blank_values=True))

    async def checked_form(self, request: Request, session: Session) -> dict[str, str]:
        """The form of a state-changing request whose CSRF token is the session's, else 403."""
        form = await self.form(request)
        given = request.headers.get(CSRF_HEADER) or form.get(CSRF_FIELD)
        if not same_secret(given, session.csrf) or not _same_origin(request):
            raise HTTPException(403, "missing or wrong CSRF token: reload the page and retry")
        return form

    def login_scope(self, request: Request, typed: str) -> str | None:
        """The scope a login opens, by the API's rules for a request's scope."""
        headers = request.headers.getlist(_SCOPE_HEADER)
        if len(headers) > 1:
            raise HTTPException(400, "X-Cogito-User was sent more than once")
        header = _header_scope(headers[0]) if headers else None
        typed = typed.strip()
        if (header or typed) and not self.settings.allow_request_scope:
            raise HTTPException(
                403, "per-request scopes are disabled on this server; leave the scope empty"
            )
        if header and typed and header != typed:
            raise HTTPException(403, "the gateway's scope and the typed scope differ")
        scope = header or typed or None
        if scope is not None and not is_user_id(scope):
            raise HTTPException(422, "the scope is not a valid user_id")
        return scope


def _header_scope(raw: str) -> str:
    try:
        return scope_header_value(raw)
    except ValueError:
        raise HTTPException(422, "the scope is not a valid user_id") from None


def _client(request: Request) -> str:
    """The address failed logins are counted by (the peer: no forwarded header is trusted)."""
    return request.client.host if request.client is not None else "unknown"


def _same_origin(request: Request) -> bool:
    """A browser's ``Origin``, when it names one, is this server (``null``: the token decides)."""
    origin = request.headers.get("origin")
    if origin is None or origin == "null":
        return True
    host = request.headers.get("host", "")
    return origin.split("://", 1)[-1] == host


def _cookie(response: Response, request: Request, name: str, value: str, max_age: int) -> None:
    """Set an inspector cookie: ``HttpOnly``, ``SameSite=Strict``, ``Secure`` over https."""
    response.set_cookie(
        name,
        value,
        max_age=max_age,
        path=PREFIX,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


def _drop_cookie(response: Response, request: Request, name: str) -> None:
    response.delete_cookie(
        name, path=PREFIX, httponly=True, samesite="strict", secure=request.url.scheme == "https"
    )


def _position(value: str | None) -> int | None:
    """A listing's pinned ``top`` (a memory count), or None for none or a bad one."""
    try:
        top = int(value) if value else None
    except ValueError:
        return None
    return top if top is not None and top >= 0 else None


def _page_number(value: str | None) -> int:
    try:
        return max(1, min(int(value or 1), 1_000_000))
    except ValueError:
        return 1


async def _stages(
    inspector: _Inspector, view: ScopeView, query: str, limit: int
) -> AsyncIterator[dict[str, Any]]:
    """The streamed two-stage recall as template data: stage 1 first, then the model's pick."""
    numbers: dict[str, int] = {}
    async for name, data in inspector.service.recall_stream(view, query, limit, None, None):
        hits = [hit.model_dump() for hit in data.get("memories", [])]
        if name == "candidates":
            numbers = {hit["id"]: position for position, hit in enumerate(hits, start=1)}
        else:
            for hit in hits:
                hit["number"] = numbers.get(hit["id"])
        yield {"name": name, "hits": hits, **{k: v for k, v in data.items() if k != "memories"}}


def _route_class(inspector: _Inspector) -> type[APIRoute]:
    """Routes whose errors are pages: no session redirects to the login, an HTTP error is shown."""

    class PageRoute(APIRoute):
        def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
            handler = super().get_route_handler()

            async def page_handler(request: Request) -> Response:
                try:
                    return await handler(request)
                except _LoginRequired:
                    if "hx-request" in request.headers:  # a swap would nest the login page
                        return Response(status_code=204, headers={"HX-Redirect": f"{PREFIX}/login"})
                    if request.method in {"GET", "HEAD"}:
                        return RedirectResponse(f"{PREFIX}/login", status_code=303)
                    return await inspector.error(request, None, 401, "log in first")
                except HTTPException as exc:
                    return await inspector.error(request, None, exc.status_code, str(exc.detail))

            return page_handler

    return PageRoute


def _routes(inspector: _Inspector) -> APIRouter:  # noqa: PLR0915 - one closure per page
    router = APIRouter(prefix=PREFIX, include_in_schema=False, route_class=_route_class(inspector))
    service = inspector.service

    @router.get("")
    @router.get("/")
    async def home(request: Request) -> Response:
        inspector.session(request)
        return RedirectResponse(f"{PREFIX}/scopes", status_code=303)

    @router.get("/login")
    async def login_form(request: Request) -> Response:
        nonce = secrets.token_urlsafe(24)
        response = await inspector.page(
            request,
            "login.html",
            None,
            nonce=nonce,
            needs_token=inspector.token is not None,
            request_scopes=inspector.settings.allow_request_scope,
        )
        _cookie(response, request, LOGIN_COOKIE, nonce, 600)
        return response

    @router.post("/login")
    async def login(request: Request) -> Response:
        client = _client(request)
        wait = inspector.logins.retry_after(client)
        if wait is not None:
            logger.warning("inspector logins refused for %ss: too many wrong tokens", wait)
            refused = await inspector.error(
                request, None, 429, f"too many failed logins; retry in {wait} s"
            )
            refused.headers["Retry-After"] = str(wait)
            return refused
        form = await inspector.form(request)
        nonce = request.cookies.get(LOGIN_COOKIE)
        if nonce is None or not same_secret(form.get("nonce"), nonce):
            raise HTTPException(403, "the login form expired or was not sent from this page")
        if inspector.token is not None and not token_matches(
            f"Bearer {form.get('token', '')}", inspector.token
        ):
            logger.warning("inspector login with a wrong token")
            inspector.logins.failed(client)
            return await inspector.error(request, None, 401, "wrong token")
        scope = inspector.login_scope(request, form.get("scope", ""))
        all_scopes = scope is None and inspector.settings.allow_request_scope
        session = inspector.sessions.create(scope, all_scopes=all_scopes)
        response = RedirectResponse(f"{PREFIX}/scopes", status_code=303)
        _cookie(response, request, SESSION_COOKIE, session.id, int(inspector.sessions.ttl))
        _drop_cookie(response, request, LOGIN_COOKIE)
        return response

    @router.post("/logout")
    async def logout(request: Request) -> Response:
        session = inspector.session(request)
        await inspector.checked_form(request, session)
        inspector.sessions.drop(session.id)
        response = RedirectResponse(f"{PREFIX}/login", status_code=303)
        _drop_cookie(response, request, SESSION_COOKIE)
        return response

    @router.get("/scopes")
    async def scopes(request: Request) -> Response:
        session = inspector.session(request)
        current = inspector.current_scope(session)
        if inspector.sees_all_scopes(request, session):
            listing = await service.read(list_scopes, service.memory, current, is_user_id)
            return await inspector.page(
                request, "scopes.html", session, listing=listing, request_scopes=True
            )
        count = await service.read(service.count, inspector.view(session))
        return await inspector.page(
            request,
            "scopes.html",
            session,
            count=count,
            request_scopes=inspector.settings.allow_request_scope,
        )

    @router.post("/scopes")
    async def switch_scope(request: Request) -> Response:
        session = inspector.session(request)
        form = await inspector.checked_form(request, session)
        if not inspector.sees_all_scopes(request, session):
            raise HTTPException(403, "this session is bound to its scope; log in to another")
        user_id = form.get("user_id", "").strip()
        if not is_user_id(user_id):
            raise HTTPException(422, "the scope is not a valid user_id")
        session.scope = user_id
        return RedirectResponse(f"{PREFIX}/memories", status_code=303)

    @router.get("/memories")
    async def memories(request: Request) -> Response:
        session = inspector.session(request)
        params = request.query_params
        text = params.get("q", "")[:200]
        problem = ""
        try:
            since = parse_instant(params.get("since"))
            until = parse_instant(params.get("until"), end_of_day=True)
        except ValueError as exc:
            since = until = None
            problem = str(exc)
        listing = await service.read(
            partial(
                list_memories,
                inspector.view(session),
                text=text,
                since=since,
                until=until,
                page=_page_number(params.get("page")),
                top=_position(params.get("top")),
            )
        )
        filters = {k: params.get(k, "") for k in ("q", "since", "until")}
        partial_only = "hx-request" in request.headers and (
            "hx-history-restore-request" not in request.headers
        )
        return await inspector.page(
            request,
            "memories_table.html" if partial_only else "memories.html",
            session,
            listing=listing,
            filters=filters,
            problem=problem,
            query_of=lambda page: urlencode({**filters, "page": page, "top": listing.top}),
            fresh_query=urlencode(filters),
        )

    @router.get("/memories/{memory_id}")
    async def memory_by_path(memory_id: str) -> Response:
        return RedirectResponse(_memory_url("memory", memory_id), status_code=308)

    @router.get("/memory")
    async def memory(request: Request) -> Response:
        session = inspector.session(request)
        row, items, versions, current = await service.read(
            memory_detail, service, inspector.view(session), _memory_id(request)
        )
        return await inspector.page(
            request,
            "memory.html",
            session,
            memory=row,
            items=items,
            versions=versions,
            current=current,
        )

    @router.get("/delete")
    async def confirm_delete(request: Request) -> Response:
        session = inspector.session(request)
        row, _, versions, _ = await service.read(
            memory_detail, service, inspector.view(session), _memory_id(request)
        )
        return await inspector.page(request, "delete.html", session, memory=row, versions=versions)

    @router.post("/delete")
    async def delete(request: Request) -> Response:
        session = inspector.session(request)
        await inspector.checked_form(request, session)
        view = inspector.view(session)
        forgotten = await service.write(service.delete, view, _memory_id(request))
        logger.info("inspector deleted %d version(s) of a memory", len(forgotten))
        return await inspector.page(request, "deleted.html", session, forgotten=forgotten)

    @router.get("/recall")
    async def recall(request: Request) -> Response:
        session = inspector.session(request)
        query = request.query_params.get("q", "").strip()[: inspector.settings.max_query_chars]
        limit = min(_page_number(request.query_params.get("limit") or str(RECALL_LIMIT)), 200)
        two_stage = inspector.two_stage and request.query_params.get("two_stage") == "1"
        values: dict[str, Any] = {"query": query, "limit": limit, "use_two_stage": two_stage}
        view = inspector.view(session)
        if query and two_stage:
            template = inspector.templates.get_template("recall.html")
            context = inspector.context(
                request, session, stream=_stages(inspector, view, query, limit), **values
            )
            return StreamingResponse(
                template.generate_async(context),
                media_type="text/html; charset=utf-8",
                headers={"X-Accel-Buffering": "no"},
            )
        result = None
        if query:
            result = await service.read(recall_explained, service, view, query, limit)
        return await inspector.page(request, "recall.html", session, result=result, **values)

    @router.get("/health")
    async def health(request: Request) -> Response:
        session = inspector.session(request)
        state = await service.read(health_of, service, inspector.settings, inspector.view(session))
        return await inspector.page(request, "health.html", session, state=state)

    return router


def _memory_id(request: Request) -> str:
    """The id of the memory a page is about: its ``id`` query parameter.

    A query parameter holds any id whole (``/`` included), so no id can read as
    another page's path.

    Raises:
        HTTPException: 422 if the page was opened without an id.
    """
    memory_id = request.query_params.get("id", "")
    if not memory_id:
        raise HTTPException(422, "the page needs the memory's id: open it from a list")
    return memory_id


def _memory_url(page: str, memory_id: str) -> str:
    """The address of a memory's page (``memory`` or ``delete``), its id encoded whole."""
    return f"{PREFIX}/{page}?id={quote(memory_id, safe='')}"


def mount_ui(
    app: FastAPI,
    service: MemoryService,
    settings: CogitoSettings,
    token: bytes | None,
    logins: LoginLimiter | None = None,
) -> str:
    """Serve the inspector at ``/ui`` on ``app``.

    Its pages check the session cookie themselves, so the bearer middleware must
    leave the returned prefix open.

    Args:
        app: The service's app.
        service: The service the API serves (the same lanes, scopes and deletes).
        settings: The service's settings (scopes, models, limits).
        token: The bearer token the login asks for; None: a login needs none.
        logins: The wrong tokens counted per client address (the API's bearer check
            shares them); a limiter of the inspector's own by default.

    Returns:
        The path prefix the inspector serves (``/ui``).
    """
    inspector = _Inspector(service, settings, token, logins)
    app.include_router(_routes(inspector))
    app.mount(
        f"{PREFIX}/static",
        StaticFiles(directory=_HERE / "static", follow_symlink=False),
        name="ui-static",
    )

    app.add_middleware(UiHeadersMiddleware)
    return PREFIX
