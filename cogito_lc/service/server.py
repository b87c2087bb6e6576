r"""The memory service: the reference HTTP API over a MemoryStore, served by uvicorn.

Endpoints (field names and shapes of the reference service):

- ``GET /health``: ``{"status", "count", "version", "calibrated", "snapshot"}``.
- ``GET /snapshot``: ``{"snapshot", "path"}``; 404 when none was built.
- ``POST /query`` ``{"text", "limit"}``: plain vector search, no LLM.
- ``POST /recall_b`` ``{"text", "limit"}``: RecallB, ``{"memories", "method"}``.
- ``POST /recall`` ``{"text", "limit", "since"?}``: RecallB then the pointer filter;
  ``method`` is ``filter`` or a ``fallback_*``/``skipped_*`` tag.
- ``POST /recall/stream``: the same as server-sent events, stage 1 first.
- The reads above return current memories only; ``include_superseded`` adds the
  superseded ones, ``as_of`` (ISO 8601, not in the future) reads what was current then.
- ``POST /store`` ``{"text", "id"?, "metadata"?, "supersedes"?}`` -> ``{"id", "text"}``.
- ``POST /add`` ``{"text", "context_hints"?, "supersede"?}`` -> ``{"count", "memories",
  "method", "superseded", "repeated", "forgotten", "supersession"}``.
- ``POST /flush`` ``{"messages", "session_id", "window_size"?, "supersede"?}``:
  end-of-session flush.
- ``GET /memories?limit&offset&include_superseded&as_of``, ``GET /memories/{id}``,
  ``DELETE /memories/{id}`` (forgets it with every version, as ``/forget``).
- ``GET /history/{id}``: every version of a memory, oldest first.
  An ``{id}`` is percent-encoded; it may hold ``/`` (any id a memory can have).
- ``POST /forget`` ``{"query"}`` or ``{"ids"}`` (and ``"reason"?``): forget memories
  with every version -> ``{"ids", "count", "method", "audit"}``.
- ``POST /snapshot/build``, ``POST /calibrate``.
- ``/mcp``: the same operations as MCP tools (streamable HTTP; the ``mcp`` extra),
  see :mod:`cogito_lc.service.mcp_server`.
- ``/ui``: the memory inspector, a web page (``ui`` setting; see :mod:`cogito_lc.service.ui`).

Every request acts in one scope: the configured ``user_id``, or, when
``allow_request_scope`` is on, the ``X-Cogito-User`` header or the body's
``user_id``. A request may carry the header once: two ``X-Cogito-User`` headers
are a 400, so a gateway that scopes requests sets the header itself, replacing
any the client sent (a body ``user_id`` naming another scope is then a 403).
The server binds 127.0.0.1 by default, and there answers only requests whose
``Host`` is a loopback name or one of ``allowed_hosts`` (421 otherwise), so a web
page cannot reach it by rebinding its own name, nor ``/mcp`` from a page of
another ``Origin`` (403); another address needs a
``COGITO_API_TOKEN`` of at least 16 characters (or ``allow_short_token``, see
:func:`check_bind`), and with a token every endpoint but ``/health`` requires
``Authorization: Bearer <token>``. Bodies over ``max_body_bytes`` get 413,
invalid requests 422 naming the field, a failing model or upstream server 502,
a failing store 503, an embedding model that cannot be loaded (or whose extra is
not installed) 500 naming the setting or the install line; no traceback or
internal path reaches a client. Blocking
work runs in worker threads, writes one at a time.

Example:
    ```bash
    cogito-lc-server                       # 127.0.0.1:19420, embedded store, MiniLM, no LLM
    cogito-lc-server --config ./cogito.json --port 19421
    curl -s localhost:19420/store -d '{"text": "Auth tokens expire after 3600 s."}' \\
         -H 'content-type: application/json'
    ```

    ```python
    from fastapi.testclient import TestClient

    from cogito_lc.service.config import CogitoSettings
    from cogito_lc.service.server import create_app

    app = create_app(CogitoSettings(store_path="./memory"))  # any ASGI server
    with TestClient(app, base_url="http://127.0.0.1") as client:  # in process, no port
        client.post("/store", json={"text": "Auth tokens expire after 3600 s."})
        client.post("/recall_b", json={"text": "auth tokens"}).json()["memories"][0]["text"]
        # 'Auth tokens expire after 3600 s.'
    ```
"""

import argparse
import errno
import inspect
import json
import logging
import math
import socket
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from functools import partial
from typing import Annotated, Any, TypeVar

import anyio.to_thread
from fastapi import APIRouter, Body, Depends, FastAPI, Header, HTTPException, Path, Query, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import StreamingResponse
from pydantic import AfterValidator, BaseModel, StrictStr, WithJsonSchema
from starlette.convertors import PathConvertor, register_url_convertor

from cogito_lc import __version__
from cogito_lc._core.extras import MissingExtraError
from cogito_lc.embeddings.lazy import LazyEmbeddings
from cogito_lc.memory.memory_store import READ_ID_MAX_CHARS, MemoryStore
from cogito_lc.service._guard import (
    BearerAuthMiddleware,
    BodyLimitMiddleware,
    ConcurrencyLimitMiddleware,
    LoginLimiter,
    LoopbackHostMiddleware,
    bearer_dependency,
    is_json_media,
    method_not_allowed_handler,
    unhandled_error_handler,
    validation_error_handler,
)
from cogito_lc.service._schemas import (
    ID_MAX_CHARS,
    LIMIT_MAX,
    AddBody,
    AddResponse,
    CalibrateRequest,
    CalibrateResponse,
    DeleteResponse,
    ErrorResponse,
    FlushBody,
    FlushResponse,
    ForgetBody,
    ForgetResponse,
    HealthResponse,
    HistoryResponse,
    MemoryList,
    MemoryRecord,
    QueryResponse,
    RecallBody,
    RecallBResponse,
    RecallResponse,
    RequestModels,
    ScopedBody,
    SearchBody,
    SnapshotBuildRequest,
    SnapshotBuildResponse,
    SnapshotResponse,
    StoreBody,
    StoreResponse,
    ValidationErrorResponse,
    add_response,
    check_as_of_text,
    forget_response,
    forget_target_errors,
    request_models,
    scope_header_value,
    storable,
    store_response,
)
from cogito_lc.service._service import MemoryService, ScopeView, ServiceOptions
from cogito_lc.service.config import (
    MIN_API_TOKEN_CHARS,
    CogitoSettings,
    ConfigError,
    is_loopback,
    load_settings,
)
from cogito_lc.service.models import (
    chat_model_from_settings,
    embeddings_from_settings,
    judge_from_settings,
    memory_from_settings,
)
from cogito_lc.stores.lexical_sync import lexical_sync_for
from cogito_lc.stores.postgres import DatabaseSetupError, redact_url

__all__ = ["check_bind", "create_app", "main", "memory_service", "serve"]

logger = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)

_NOISY_LOGGERS = ("bm25s", "chromadb", "sentence_transformers", "httpx")
_SCOPES_DISABLED = (
    "per-request scopes are disabled on this server; omit X-Cogito-User and user_id, "
    "or start it with allow_request_scope=true"
)
_SCOPES_DIFFER = "X-Cogito-User and user_id name different scopes; send one of them"
_SCOPE_HEADER = "x-cogito-user"
_SCOPE_HEADER_TWICE = (
    "X-Cogito-User was sent {count} times; send it once (a gateway must replace the "
    "client's header, not add a second one)"
)
_SCOPE_HEADER_HELP = (
    "Scope (user_id) of this request, sent at most once (two are a 400). Behind a "
    "gateway, the gateway sets it and replaces any the client sent. A user id that is "
    "not ASCII is sent percent-encoded from UTF-8 (zo%C3%AB for zoë); the server "
    "decodes it, then checks it as the body's user_id."
)
_SCOPE_HEADER_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:@+-]*$"
"""The header the schema publishes: an ASCII user id.

The server takes more: a user id that is not ASCII percent-encoded (or as raw UTF-8
bytes), decoded and then checked as the body's ``user_id`` is, length included."""
_STREAM_HELP = (
    "Server-sent events: `candidates` (`memories`, `recall_method`: stage 1, RecallB's "
    "order) as soon as it is ready, then `result` (the body of `/recall`), or `error` "
    "(`status`, `detail`). A client that disconnects cancels the model call."
)
_DESCRIPTIONS = {
    400: "Malformed request body, or X-Cogito-User sent more than once",
    401: "Missing or invalid bearer token",
    403: "Per-request scope not allowed, or two different scopes named",
    404: "Not found in this scope (for /forget: nothing matched)",
    409: "The id is taken by another memory",
    413: "Request body too large",
    502: "A model or upstream server did not answer",
    503: "Store unavailable or server busy",
}


def _responses(*codes: int, auth: bool) -> dict[int | str, dict[str, Any]]:
    documented: dict[int | str, dict[str, Any]] = {
        code: {"model": ErrorResponse, "description": _DESCRIPTIONS[code]}
        for code in sorted({*codes, 400, 413, 503, *((401,) if auth else ())})
    }
    documented[422] = {"model": ValidationErrorResponse, "description": "Invalid request"}
    return documented


def json_body(model: type[M], *, required: bool = True) -> Any:
    """A dependency that validates the JSON body against ``model`` (a class built per app).

    FastAPI reads a body's class from a parameter annotation; the request classes
    carry the app's text limits, so they are made at run time and declared here.
    A body that is not ``required`` may be left out, but not sent empty under a
    ``Content-Type`` other than JSON (422): that is what a web page's form, or a
    ``fetch`` that needs no preflight, sends.
    """

    async def body_of(request: Request, body: Any) -> Any:
        content_type = request.headers.get("content-type")
        if body is None and content_type and not is_json_media(content_type):
            raise RequestValidationError([{"loc": ("body",), "msg": "", "type": "content_type"}])
        return body

    annotation = Annotated[model if required else model | None, Body()]  # type: ignore[valid-type]
    parameter = inspect.Parameter(
        "body",
        inspect.Parameter.KEYWORD_ONLY,
        annotation=annotation,
        default=inspect.Parameter.empty if required else None,
    )
    own = inspect.Parameter("request", inspect.Parameter.KEYWORD_ONLY, annotation=Request)
    body_of.__signature__ = inspect.Signature([own, parameter])  # type: ignore[attr-defined]
    return Depends(body_of)


def _declared_query(dependant: Any) -> set[str]:
    """The query parameters a route (with its dependencies) declares."""
    names = {field.alias for field in dependant.query_params}
    for dependency in dependant.dependencies:
        names |= _declared_query(dependency)
    return names


def _only_declared_query(request: Request) -> None:
    """A route takes only its documented query parameters, each once (a typo is a 422)."""
    route = request.scope.get("route")
    accepted = _declared_query(route.dependant) if route is not None else set(request.query_params)
    unknown = sorted(set(request.query_params) - accepted)
    repeated = sorted(n for n in accepted if len(request.query_params.getlist(n)) > 1)
    if not unknown and not repeated:
        return
    hint = f"accepted: {', '.join(sorted(accepted))}" if accepted else "this route takes none"
    errors = [
        {
            "loc": ("query", name),
            "msg": f"unknown query parameter; {hint}",
            "type": "extra_forbidden",
        }
        for name in unknown
    ] + [
        {"loc": ("query", name), "msg": "given more than once; give it once", "type": "repeated"}
        for name in repeated
    ]
    raise RequestValidationError(errors)


def _scope_from_header(raw: str) -> str:
    try:
        return scope_header_value(raw)
    except ValueError as exc:
        error = {"loc": ("header", _SCOPE_HEADER), "msg": str(exc), "type": "value_error"}
        raise RequestValidationError([error]) from None


def _reject_repeated_scope_header(request: Request) -> None:
    count = len(request.headers.getlist(_SCOPE_HEADER))
    if count > 1:
        raise HTTPException(400, _SCOPE_HEADER_TWICE.format(count=count))


class _Scopes:
    """Resolves the scope of a request from the header and the body."""

    def __init__(self, service: MemoryService, allowed: bool) -> None:
        self.service = service
        self.allowed = allowed
        self.header = self._header_dependency()

    def _header_dependency(self) -> Callable[..., Any]:
        if self.allowed:

            async def scoped_header(
                request: Request,
                x_cogito_user: Annotated[
                    str | None,
                    Header(
                        description=_SCOPE_HEADER_HELP,
                        json_schema_extra={
                            "pattern": _SCOPE_HEADER_PATTERN,
                            "maxLength": ID_MAX_CHARS,
                        },
                    ),
                ] = None,
            ) -> str | None:
                _reject_repeated_scope_header(request)
                return None if x_cogito_user is None else _scope_from_header(x_cogito_user)

            return scoped_header

        async def no_scope_header(request: Request) -> str | None:
            _reject_repeated_scope_header(request)
            if _SCOPE_HEADER in request.headers:
                raise HTTPException(403, _SCOPES_DISABLED)
            return None

        return no_scope_header

    def view(self, header_user: str | None, body: ScopedBody | None = None) -> ScopeView:
        body_user = body.user_id if body is not None else None
        if body_user is not None and not self.allowed:
            raise HTTPException(403, _SCOPES_DISABLED)
        if header_user is not None and body_user is not None and header_user != body_user:
            raise HTTPException(403, _SCOPES_DIFFER)
        return self.service.view(body_user or header_user)


async def _server_sent(events: AsyncIterator[tuple[str, dict[str, Any]]]) -> AsyncIterator[str]:
    async for name, data in events:
        payload = json.dumps(jsonable_encoder(data), ensure_ascii=False)
        yield f"event: {name}\ndata: {payload}\n\n"


def _record(doc: Any) -> MemoryRecord:
    metadata = {
        key: value
        for key, value in doc.metadata.items()
        if not isinstance(value, float) or math.isfinite(value)  # JSON has no NaN
    }
    return MemoryRecord(id=doc.id or "", text=doc.page_content, metadata=metadata)


_AsOfParam = Annotated[
    StrictStr,
    AfterValidator(check_as_of_text),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]


def _search_routes(
    router: APIRouter, service: MemoryService, models: RequestModels, scopes: _Scopes, auth: bool
) -> None:
    user = Annotated[str | None, Depends(scopes.header)]

    @router.post("/query", response_model=QueryResponse, responses=_responses(403, auth=auth))
    async def query(
        body: Annotated[SearchBody, json_body(models.query)], header_user: user
    ) -> QueryResponse:
        """Plain vector search in the scope (no LLM); ``score`` is cosine similarity."""
        view = scopes.view(header_user, body)
        hits = await service.read(
            service.query,
            view,
            body.text,
            body.limit,
            body.threshold,
            body.as_of,
            body.include_superseded,
        )
        return QueryResponse(memories=hits)

    @router.post("/recall_b", response_model=RecallBResponse, responses=_responses(403, auth=auth))
    async def recall_b(
        body: Annotated[SearchBody, json_body(models.recall_b)], header_user: user
    ) -> RecallBResponse:
        """Zero-LLM recall (RecallB); ``method`` is its tag (listed under ``METADATA_KEY``)."""
        view = scopes.view(header_user, body)
        hits, method = await service.read(
            service.recall_b,
            view,
            body.text,
            body.limit,
            body.threshold,
            body.as_of,
            body.include_superseded,
        )
        return RecallBResponse(memories=hits, method=method)

    @router.post(
        "/recall", response_model=RecallResponse, responses=_responses(403, 502, auth=auth)
    )
    async def recall(
        body: Annotated[RecallBody, json_body(models.recall)], header_user: user
    ) -> RecallResponse:
        """Two-stage recall: RecallB, then the integer-pointer filter (``method``)."""
        view = scopes.view(header_user, body)
        hits, method, recall_method = await service.read(
            service.recall,
            view,
            body.text,
            body.limit,
            body.threshold,
            body.since,
            body.as_of,
            body.include_superseded,
        )
        return RecallResponse(memories=hits, method=method, recall_method=recall_method)

    @router.post(
        "/recall/stream",
        response_class=StreamingResponse,
        responses={
            **_responses(403, auth=auth),
            200: {"content": {"text/event-stream": {}}, "description": _STREAM_HELP},
        },
    )
    async def recall_stream(
        body: Annotated[RecallBody, json_body(models.recall)], header_user: user
    ) -> StreamingResponse:
        """Two-stage recall as server-sent events: stage 1 at once, then the filtered result."""
        view = scopes.view(header_user, body)
        events = service.recall_stream(
            view,
            body.text,
            body.limit,
            body.threshold,
            body.since,
            body.as_of,
            body.include_superseded,
        )
        return StreamingResponse(
            _server_sent(events),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )


def _write_routes(
    router: APIRouter, service: MemoryService, models: RequestModels, scopes: _Scopes, auth: bool
) -> None:
    user = Annotated[str | None, Depends(scopes.header)]

    @router.post(
        "/store", response_model=StoreResponse, responses=_responses(403, 404, 409, auth=auth)
    )
    async def store(
        body: Annotated[StoreBody, json_body(models.store)], header_user: user
    ) -> StoreResponse:
        """Write one memory verbatim; the same text twice in a scope is one memory.

        With ``supersedes``, it is the new version of those memories (kept, marked,
        left out of reads; see ``/history/{id}``); 404 if one is not current here.
        """
        view = scopes.view(header_user, body)
        stored = await service.store(view, body.text, body.id, body.metadata, body.supersedes)
        return store_response(stored.document, created=stored.created)

    @router.post("/add", response_model=AddResponse, responses=_responses(403, 502, auth=auth))
    async def add(
        body: Annotated[AddBody, json_body(models.add)], header_user: user
    ) -> AddResponse:
        """Extract facts and store each; the text itself when extraction fails.

        With supersession (``supersede``; by default when the server has a model) the
        memories a new one replaces are kept, marked and left out of reads; a forget
        request ("Please forget my phone number.") forgets instead of storing.
        """
        view = scopes.view(header_user, body)
        result = await service.write(
            service.add, view, body.text, body.context_hints, body.supersede
        )
        return add_response(result)

    @router.post("/flush", response_model=FlushResponse, responses=_responses(403, auth=auth))
    async def flush(
        body: Annotated[FlushBody, json_body(FlushBody)], header_user: user
    ) -> FlushResponse:
        """End of a session: extract facts per window, skip what memory holds, store the rest."""
        view = scopes.view(header_user, body)
        messages = [message.model_dump() for message in body.messages]
        result = await service.write(
            service.flush, view, messages, body.session_id, body.window_size, body.supersede
        )
        return FlushResponse(
            windows=result.windows,
            count=len(result.stored),
            memories=[doc.page_content for doc in result.stored],
            ids=[doc.id or "" for doc in result.stored],
            skipped_same_id=result.skipped_same_id,
            skipped_near_duplicate=result.skipped_near_duplicate,
            verbatim_windows=result.verbatim_windows,
            methods=result.methods,
            superseded=result.superseded,
            repeated=result.repeated,
            forgotten=result.forgotten,
            supersession=result.supersession,
        )

    @router.post(
        "/forget", response_model=ForgetResponse, responses=_responses(403, 404, auth=auth)
    )
    async def forget(
        body: Annotated[ForgetBody, json_body(models.forget)], header_user: user
    ) -> ForgetResponse:
        """Forget memories, each with every version: by ``query`` or by ``ids`` (one of them).

        They are deleted from the vector store and the lexical index, the scope's
        snapshot is dropped, and an audit record (ids, time, scope, reason; never the
        text) is kept and returned. 404 when nothing matches or an id is not in the
        scope; nothing is forgotten then.
        """
        problems = forget_target_errors(body.query, body.ids)
        if problems:
            raise RequestValidationError(problems)
        view = scopes.view(header_user, body)
        result = await service.write(service.forget, view, body.query, body.ids, body.reason)
        return forget_response(result)


class _MemoryIdConvertor(PathConvertor):
    """A path id of one character or more, ``/`` included.

    ``/memories/`` is then the listing (redirected to ``/memories``), not an empty id.
    """

    regex = ".+"


register_url_convertor("memory_id", _MemoryIdConvertor())


def _memory_routes(router: APIRouter, service: MemoryService, scopes: _Scopes, auth: bool) -> None:
    user = Annotated[str | None, Depends(scopes.header)]
    memory_id = Annotated[
        str,
        Path(min_length=1, max_length=READ_ID_MAX_CHARS, description="The memory id."),
        AfterValidator(partial(storable, name="id")),
    ]

    @router.get(
        "/memories",
        response_model=MemoryList,
        responses=_responses(403, auth=auth),
    )
    async def list_memories(
        header_user: user,
        limit: Annotated[int, Query(ge=1, le=LIMIT_MAX)] = 50,
        offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
        include_superseded: Annotated[
            bool, Query(description="List superseded memories too (false: current only).")
        ] = True,
        as_of: Annotated[
            _AsOfParam | None,
            Query(
                description="List what was current at this ISO 8601 instant (not in the future).",
            ),
        ] = None,
    ) -> MemoryList:
        """A page of the memories in the scope, with the listing's total.

        Every version by default; ``include_superseded=false`` lists current memories
        only and ``as_of`` what was current then (both read the whole scope).
        """
        view = scopes.view(header_user)
        docs, total = await service.read(
            service.page, view, limit, offset, include_superseded, as_of
        )
        return MemoryList(
            memories=[_record(d) for d in docs], limit=limit, offset=offset, total=total
        )

    @router.get(
        "/memories/{id:memory_id}",
        response_model=MemoryRecord,
        responses=_responses(403, 404, auth=auth),
    )
    async def get_memory(id: memory_id, header_user: user) -> MemoryRecord:  # noqa: A002
        """One memory of the scope; 404 for an id outside it."""
        view = scopes.view(header_user)
        return _record(await service.read(service.get, view, id))

    @router.delete(
        "/memories/{id:memory_id}",
        response_model=DeleteResponse,
        responses=_responses(403, 404, auth=auth),
    )
    async def delete_memory(id: memory_id, header_user: user) -> DeleteResponse:  # noqa: A002
        """Delete one memory of the scope with every version of it; 404 for an id outside it.

        As ``/forget`` does: the lexical index too, the scope's snapshot dropped, an
        audit record kept; ``forgotten`` lists every version deleted.
        """
        view = scopes.view(header_user)
        forgotten = await service.write(service.delete, view, id)
        return DeleteResponse(id=id, forgotten=forgotten)

    @router.get(
        "/history/{id:memory_id}",
        response_model=HistoryResponse,
        responses=_responses(403, 404, auth=auth),
    )
    async def history(id: memory_id, header_user: user) -> HistoryResponse:  # noqa: A002
        """Every version of a memory of the scope, oldest first, as stored; 404 outside it.

        Each version's metadata says what it superseded (``supersedes``) or what
        superseded it (``superseded_by``, ``superseded_at``); ``current`` is the
        version not superseded.
        """
        view = scopes.view(header_user)
        versions, current = await service.read(service.history, view, id)
        return HistoryResponse(id=id, current=current, versions=[_record(d) for d in versions])


def _job_routes(router: APIRouter, service: MemoryService, scopes: _Scopes, auth: bool) -> None:
    user = Annotated[str | None, Depends(scopes.header)]

    @router.get(
        "/snapshot", response_model=SnapshotResponse, responses=_responses(403, 404, auth=auth)
    )
    async def get_snapshot(header_user: user) -> SnapshotResponse:
        """The saved snapshot of the scope; 404 when none was built."""
        snapshot = await service.read(service.snapshot, scopes.view(header_user))
        if snapshot is None:
            raise HTTPException(404, "no snapshot was built yet; POST /snapshot/build")
        return SnapshotResponse(snapshot=snapshot.text, path=service.public_path(snapshot.path))

    @router.post(
        "/snapshot/build",
        response_model=SnapshotBuildResponse,
        responses=_responses(403, 502, auth=auth),
    )
    async def build_snapshot(
        header_user: user,
        body: Annotated[
            SnapshotBuildRequest | None, json_body(SnapshotBuildRequest, required=False)
        ] = None,
    ) -> SnapshotBuildResponse:
        """Build the scope's snapshot (reused while fresh unless ``rebuild``, without waiting)."""
        request = body or SnapshotBuildRequest()
        view = scopes.view(header_user, request)
        snapshot = await service.snapshot_job(view, request.rebuild, request.dry_run)
        return SnapshotBuildResponse(
            snapshot=snapshot.text,
            path=service.public_path(snapshot.path),
            built_at=snapshot.built_at,
            count=snapshot.count,
            sampled=snapshot.sampled,
            method=snapshot.method,
            saved=snapshot.path is not None and not request.dry_run,
        )

    @router.post(
        "/calibrate",
        response_model=CalibrateResponse,
        responses=_responses(403, 502, auth=auth),
    )
    async def calibrate(
        header_user: user,
        body: Annotated[
            CalibrateRequest | None, json_body(CalibrateRequest, required=False)
        ] = None,
    ) -> CalibrateResponse:
        """Calibrate the scope's vocabulary map from a sample of its memories."""
        request = body or CalibrateRequest()
        view = scopes.view(header_user, request)
        result, in_use = await service.job(service.calibrate, view, request.dry_run)
        return CalibrateResponse(
            vocab_map=result.vocab_map,
            count=len(result.vocab_map),
            method=result.method,
            path=service.public_path(result.path),
            saved=result.path is not None,
            in_use=in_use,
            dropped=list(result.dropped),
            reason=result.reason,
        )


def _health_router(service: MemoryService) -> APIRouter:
    router = APIRouter()

    @router.head("/health", include_in_schema=False)
    async def health_head() -> None:
        """Liveness for probes that send HEAD (no body)."""

    @router.get("/health", response_model=HealthResponse, responses=_responses(auth=False))
    async def health() -> HealthResponse:
        """Liveness and the configured scope's state; needs no token.

        503 with ``Retry-After`` while the database or Chroma server is unavailable,
        naming it (``"the database is unavailable; retry shortly"``).
        """
        view = service.view(None)
        count = await service.read(service.count, view)
        snapshot = await service.read(service.snapshot, view)
        return HealthResponse(
            status="ok",
            count=count,
            version=__version__,
            calibrated=bool(view.memory.vocab_map),
            snapshot=snapshot is not None,
        )

    return router


def _options(settings: CogitoSettings) -> ServiceOptions:
    extract_llm = chat_model_from_settings(settings, purpose="extract")
    return ServiceOptions(
        filter_llm=chat_model_from_settings(settings, purpose="filter"),
        extract_llm=extract_llm,
        judge=judge_from_settings(settings, extract_llm),
        structured_output=settings.llm_structured_output,
        filter_timeout=settings.filter_timeout_ms / 1000,
        query_limit=settings.query_limit,
        recall_limit=settings.recall_limit,
        query_threshold=settings.query_threshold,
        recall_threshold=settings.recall_threshold,
        vocab_map=settings.vocab_map,
        snapshot_mode=settings.snapshot_mode,
        worker_threads=settings.worker_threads,
    )


def memory_service(
    settings: CogitoSettings, memory: MemoryStore | None = None, *, lazy: bool = False
) -> MemoryService:
    """The service behind the endpoints (and the MCP tools) for these settings.

    Args:
        settings: The settings (models, defaults, concurrency).
        memory: The store to serve; by default one built from the settings.
        lazy: Build the default store's embeddings on their first use
            (:class:`~cogito_lc.embeddings.LazyEmbeddings`), not now.
    """
    if memory is None:
        embeddings = LazyEmbeddings(partial(embeddings_from_settings, settings)) if lazy else None
        memory = memory_from_settings(settings, embeddings=embeddings)
    return MemoryService(memory, _options(settings))


def _lifespan(service: MemoryService, *, warm_up: bool) -> Callable[[FastAPI], Any]:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            async with _serving(app, service.memory, warm_up=warm_up):
                yield
        finally:
            service.close()  # stop probing the dependencies

    return lifespan


@asynccontextmanager
async def _serving(app: FastAPI, memory: MemoryStore, *, warm_up: bool) -> AsyncIterator[None]:
    """Warm the models and indexes up (if asked), then serve (with the MCP endpoint, if mounted)."""
    if warm_up:
        await _warm_up(memory)
    mcp_endpoint = getattr(app.state, "mcp_endpoint", None)
    if mcp_endpoint is None:
        yield
        return
    async with mcp_endpoint.running():
        yield


async def _warm_up(memory: MemoryStore) -> None:
    """Load the embedding model and the lexical index before the first request."""
    embeddings = memory.vectorstore.embeddings
    if embeddings is not None:  # load the model before the first request, if it answers
        try:
            await anyio.to_thread.run_sync(embeddings.embed_query, "warm up")
        except Exception as exc:  # requests report it as 502/503
            logger.warning("embeddings warm-up failed (%s); serving anyway", type(exc).__name__)
    sync = lexical_sync_for(memory.vectorstore)
    if sync is not None:  # the lexical index's start-up and in-memory postings
        try:
            await anyio.to_thread.run_sync(sync.warm_up)
        except Exception as exc:  # the first recall tries again and reports it
            logger.warning("lexical warm-up failed (%s); serving anyway", type(exc).__name__)


def _mount_mcp(app: FastAPI, service: MemoryService, settings: CogitoSettings) -> Any:
    """Serve the MCP tools at ``/mcp``; None without the ``mcp`` extra."""
    try:
        from cogito_lc.service.mcp_server import create_mcp_server, mount_mcp
    except ImportError:
        logger.info("the 'mcp' extra is not installed: no MCP endpoint at /mcp")
        return None
    factory = partial(
        create_mcp_server,
        service,
        max_text_chars=settings.max_text_chars,
        max_query_chars=settings.max_query_chars,
        allow_request_scope=settings.allow_request_scope,
    )
    return mount_mcp(
        app,
        factory,
        allowed=settings.allow_request_scope,
        stream_idle_timeout=settings.mcp_stream_idle_timeout_ms / 1000,
        max_streams=settings.mcp_max_streams_per_token,
    )


def _mount_ui(
    app: FastAPI,
    service: MemoryService,
    settings: CogitoSettings,
    token: bytes | None,
    logins: LoginLimiter,
) -> tuple[str, ...]:
    """Serve the inspector at ``/ui`` (see :mod:`cogito_lc.service.ui`); its path prefixes."""
    try:
        from cogito_lc.service.ui import mount_ui
    except ImportError:
        logger.info("jinja2 is not installed (the 'server' extra): no inspector at /ui")
        return ()
    return (mount_ui(app, service, settings, token, logins),)


_NO_NUL = {"pattern": r"\u0000"}
"""Said (as ``not``) of every string a request sends: no store holds a NUL character."""


def _document_nul_free_requests(app: FastAPI) -> None:
    """Make the OpenAPI document say that no string of a request may hold a NUL character."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = generate()
            _say_no_nul(document)
            app.openapi_schema = document
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _say_no_nul(document: dict[str, Any]) -> None:
    """Add ``not: {pattern: NUL}`` to the strings of request bodies and parameters."""
    components = document.get("components", {}).get("schemas", {})
    seen: set[str] = set()

    def mark(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                mark(item)
            return
        if not isinstance(node, dict):
            return
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
            name = ref.rsplit("/", 1)[-1]
            if name not in seen:
                seen.add(name)
                mark(components.get(name))
        if node.get("type") == "string":
            node.setdefault("not", dict(_NO_NUL))
        for key, value in list(node.items()):
            if key != "not":
                mark(value)

    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            if isinstance(operation, dict):
                mark(operation.get("requestBody"))
                mark(operation.get("parameters"))


def create_app(
    settings: CogitoSettings | None = None,
    *,
    memory: MemoryStore | None = None,
    warm_up: bool = True,
) -> FastAPI:
    """The FastAPI app of the memory service.

    Args:
        settings: The settings; :func:`~cogito_lc.service.config.load_settings` by default.
        memory: The store to serve; by default one built from the settings
            (embedded Chroma at ``store_path``, ``embed_model``, extraction with
            ``llm_model`` when set). Its scope is the default scope of requests.
        warm_up: Load the embedding model and the lexical index at start-up, so
            the first request does not wait for them. False loads each on its
            first use (the store built here embeds through
            :class:`~cogito_lc.embeddings.LazyEmbeddings`): what a one-shot
            command wants, where most requests embed nothing.

    Returns:
        The app, ready for any ASGI server (``serve`` runs it with uvicorn, and
        ``uvicorn --factory cogito_lc.service.server:create_app`` serves it as well).
        Without ``api_token`` it answers only connections made over loopback, and
        403 to others, whatever address the server binds.

    Raises:
        ConfigError: If the settings are refused for the address they bind (see
            :func:`check_bind`).

    Example:
        ```python
        # needs: a free port (runs a server until interrupted)
        import uvicorn

        from cogito_lc.service.config import load_settings
        from cogito_lc.service.server import create_app

        uvicorn.run(create_app(load_settings()), host="127.0.0.1", port=19420)
        ```
    """
    settings = settings or load_settings()
    check_bind(settings)
    service = memory_service(settings, memory, lazy=not warm_up)
    token = settings.api_token.get_secret_value().encode() if settings.api_token else None
    auth = token is not None
    app = FastAPI(
        title="cogito-lc memory service",
        version=__version__,
        summary="Long-term memory for agents over HTTP: store, recall, snapshot.",
        lifespan=_lifespan(service, warm_up=warm_up),
        docs_url=None if auth else "/docs",
        redoc_url=None,
    )
    app.state.service = service
    _document_nul_free_requests(app)
    scopes = _Scopes(service, settings.allow_request_scope)
    models = request_models(settings.max_text_chars, settings.max_query_chars)
    router = APIRouter(
        dependencies=[
            *([Depends(bearer_dependency(token))] if token else []),
            Depends(_only_declared_query),
        ]
    )
    _search_routes(router, service, models, scopes, auth)
    _write_routes(router, service, models, scopes, auth)
    _memory_routes(router, service, scopes, auth)
    _job_routes(router, service, scopes, auth)
    health = _health_router(service)
    app.include_router(health)
    app.include_router(router)
    app.state.mcp_endpoint = _mount_mcp(app, service, settings)  # run by the lifespan
    logins = LoginLimiter(max_failures=settings.max_wrong_tokens)  # the API's and inspector's
    ui_prefixes = _mount_ui(app, service, settings, token, logins) if settings.ui else ()
    app.add_exception_handler(RequestValidationError, validation_error_handler)
    app.add_exception_handler(405, method_not_allowed_handler([*health.routes, *router.routes]))
    app.add_exception_handler(Exception, unhandled_error_handler)
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_body_bytes)
    if token:
        app.add_middleware(
            BearerAuthMiddleware, token=token, open_prefixes=ui_prefixes, limiter=logins
        )
    app.add_middleware(ConcurrencyLimitMiddleware, max_requests=settings.max_concurrent_requests)
    if is_loopback(settings.host):  # always so without a token (check_bind)
        app.add_middleware(
            LoopbackHostMiddleware,
            allowed_hosts=settings.allowed_hosts,
            loopback_only=not auth,
            csrf_prefixes=ui_prefixes,
        )
    return app


def check_bind(settings: CogitoSettings) -> None:
    """Refuse to bind a non-loopback address without a strong enough API token.

    On loopback any token will do (a short one gets a warning when the settings
    are read). Elsewhere the token must have at least
    :data:`~cogito_lc.service.config.MIN_API_TOKEN_CHARS` characters, unless
    ``allow_short_token`` accepts the risk of a guessable token.

    Raises:
        ConfigError: If ``host`` is not a loopback address and ``api_token`` is
            unset, or shorter than ``MIN_API_TOKEN_CHARS`` without ``allow_short_token``.

    Example:
        ```python
        from pydantic import SecretStr

        from cogito_lc.service.config import CogitoSettings, ConfigError
        from cogito_lc.service.server import check_bind

        check_bind(CogitoSettings(host="127.0.0.1"))  # loopback: no token needed
        token = SecretStr("a-long-random-token-0123456789")
        check_bind(CogitoSettings(host="0.0.0.0", api_token=token))  # a token: any address
        try:
            check_bind(CogitoSettings(host="0.0.0.0"))
        except ConfigError as exc:
            print(exc)  # host='0.0.0.0' is not a loopback address: set COGITO_API_TOKEN ...
        ```
    """
    if is_loopback(settings.host):
        return
    if settings.api_token is None:
        msg = (
            f"host={settings.host!r} is not a loopback address: set COGITO_API_TOKEN (api_token) "
            "so that clients must authenticate, or bind 127.0.0.1."
        )
        raise ConfigError(msg)
    length = len(settings.api_token.get_secret_value())
    if length < MIN_API_TOKEN_CHARS and not settings.allow_short_token:
        msg = (
            f"host={settings.host!r} is not a loopback address and COGITO_API_TOKEN (api_token) "
            f"has {length} characters: set one of at least {MIN_API_TOKEN_CHARS} (python -c "
            "'import secrets; print(secrets.token_urlsafe(32))'), bind 127.0.0.1, or set "
            "COGITO_ALLOW_SHORT_TOKEN=true to serve with a guessable token."
        )
        raise ConfigError(msg)


def serve(settings: CogitoSettings | None = None, *, log_level: str = "info") -> None:
    """Run the service with uvicorn until interrupted.

    Raises:
        ConfigError: If the settings are invalid, the bind is refused (see
            :func:`check_bind`), the port is taken, or the database of
            ``database_url`` cannot be used.
        MissingExtraError: If a configured model's extra is not installed (the
            default embeddings need the ``local`` extra).
    """
    import uvicorn

    settings = settings or load_settings()
    check_bind(settings)
    check_port_free(settings.host, settings.port)
    try:
        app = create_app(settings)
    except DatabaseSetupError as exc:
        raise ConfigError(str(exc)) from None
    logger.info(
        "serving %s on %s:%d (collection %r, embeddings %s, model %s)",
        _store_name(settings),
        settings.host,
        settings.port,
        settings.collection,
        settings.embed_model,
        settings.chat_model or "none",
    )
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        log_level=log_level,
        server_header=False,
        proxy_headers=False,
        timeout_graceful_shutdown=10,
    )


def check_port_free(host: str, port: int) -> None:
    """Refuse a port another process listens on, before the store and models are loaded.

    Raises:
        ConfigError: If ``host:port`` cannot be bound; the message names the setting.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind((host, port))
        except OSError as exc:
            reason = "is in use" if exc.errno == errno.EADDRINUSE else f"cannot be bound ({exc})"
            msg = (
                f"{host}:{port} {reason}: stop the process holding it, or serve on another "
                "port (--port, COGITO_PORT)."
            )
            raise ConfigError(msg) from None


def _store_name(settings: CogitoSettings) -> str:
    if settings.database_url is not None:
        return redact_url(settings.database_url.get_secret_value())
    return str(settings.store_path)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cogito-lc-server", description="Serve cogito-lc memory over HTTP."
    )
    parser.add_argument("--config", help="JSON config file (replaces the default lookup)")
    parser.add_argument("--host", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port (default 19420)")
    parser.add_argument(
        "--ui",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="serve the memory inspector at /ui (default: on; COGITO_UI)",
    )
    parser.add_argument(
        "--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"]
    )
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of ``cogito-lc-server``: ``[--config PATH] [--host H] [--port P] [--no-ui]``."""
    parser = _parser()
    args = parser.parse_args(argv)
    level = getattr(logging, args.log_level.upper())
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    for noisy in _NOISY_LOGGERS:  # per-request debug chatter of libraries
        logging.getLogger(noisy).setLevel(max(level, logging.WARNING))
    overrides = {
        key: value for key in ("host", "port", "ui") if (value := getattr(args, key)) is not None
    }
    try:
        settings = load_settings(args.config, **overrides)
        check_bind(settings)
    except ConfigError as exc:
        parser.exit(2, f"cogito-lc-server: error: {exc}\n")
    try:
        serve(settings, log_level=args.log_level)
    except (ConfigError, MissingExtraError) as exc:  # the database or a model cannot be used
        parser.exit(1, f"cogito-lc-server: error: {exc}\n")


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1:])
