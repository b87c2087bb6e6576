"""The memory tools over MCP (Model Context Protocol), for agents outside Python.

Ten tools over the same :class:`~cogito_lc.service._service.MemoryService` the
HTTP endpoints use, so they act alike: ``recall``, ``recall_b``, ``query``,
``store``, ``add``, ``snapshot``, ``list_memories``, ``history``, ``forget`` and
``delete_memory``. Their inputs are JSON-schema typed with the HTTP service's
limits; a missing, extra or invalid argument is a tool error naming the field.
Results carry the verbatim memory text and ids, as structured content and as JSON
text. Reads return current memories (``include_superseded`` adds the superseded
ones, ``as_of`` reads what was current then); ``forget`` and ``delete_memory``
remove a memory with every version of it and keep an audit record.

Two transports, built on the official ``mcp`` SDK (the ``mcp`` extra):

- stdio: ``cogito-lc mcp`` (see :func:`run_stdio`), acting in the configured
  scope (``--user`` or ``user_id``).
- streamable HTTP: the service mounts the tools at ``/mcp`` (see
  :func:`mount_mcp`), behind its bearer token. The scope is the one of the
  ``X-Cogito-User`` header, under the REST endpoints' rules: allowed only with
  ``allow_request_scope``, sent at most once, a valid user id (percent-encoded from
  UTF-8 when it is not ASCII).

The tools take no ``user_id`` argument: the transport, not the model, picks the scope.

Example:
    ```python
    import asyncio

    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.vectorstores import InMemoryVectorStore

    from cogito_lc import MemoryStore
    from cogito_lc.service._service import MemoryService, ServiceOptions
    from cogito_lc.service.mcp_server import create_mcp_server

    memory = MemoryStore(InMemoryVectorStore(DeterministicFakeEmbedding(size=16)))
    server = create_mcp_server(MemoryService(memory, ServiceOptions()))
    result = asyncio.run(server.call_tool("store", {"text": "Auth tokens expire after 1 h."}))
    assert memory.count() == 1
    ```
"""

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, MutableMapping, Sequence
from contextlib import asynccontextmanager
from typing import Annotated, Any, TypeVar

import anyio
from fastapi import HTTPException
from fastapi.exceptions import RequestValidationError
from pydantic import AfterValidator, ConfigDict, Field, StrictBool, StrictStr, ValidationError

from cogito_lc._core.extras import missing_extra

try:
    from mcp.server.fastmcp import Context, FastMCP
    from mcp.server.fastmcp.exceptions import ToolError
    from mcp.server.fastmcp.tools import Tool
    from mcp.server.fastmcp.utilities.func_metadata import ArgModelBase, FuncMetadata
    from mcp.server.transport_security import TransportSecuritySettings
    from mcp.types import ToolAnnotations
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    error = missing_extra("mcp", "The MCP server", exc.name)
    raise error from exc

from cogito_lc._core.timestamps import parse_since
from cogito_lc.memory.memory_store import MEMORY_ID_MAX_CHARS, READ_ID_MAX_CHARS
from cogito_lc.service._guard import (
    MAX_JSON_DEPTH,
    PARSE_ERROR,
    body_problem,
    content_type_problem,
    jsonrpc_error_body,
    read_body,
    replaying,
)
from cogito_lc.service._schemas import (
    AS_OF_HELP,
    ID_PATTERN,
    LIMIT_MAX,
    NON_BLANK,
    REASON_MAX_CHARS,
    AddResponse,
    AsOf,
    DeleteResponse,
    ForgetIds,
    ForgetResponse,
    HistoryResponse,
    IncludeSuperseded,
    Limit,
    MemoryIds,
    MemoryList,
    MemoryRecord,
    Metadata,
    PageOffset,
    QueryResponse,
    RecallBResponse,
    RecallResponse,
    SnapshotBuildResponse,
    StorableFields,
    StoreResponse,
    Supersede,
    Threshold,
    add_response,
    finite,
    forget_response,
    forget_target_errors,
    given_not_null,
    not_nullable,
    readable_message,
    scope_header_value,
    store_response,
    text_field,
)
from cogito_lc.service._service import MemoryService, ScopeView

__all__ = [
    "MCP_PATH",
    "SCOPE_HEADER",
    "McpEndpoint",
    "ScopeError",
    "create_mcp_server",
    "invalid_arguments",
    "mount_mcp",
    "request_scope",
    "run_stdio",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

MCP_PATH = "/mcp"
"""Where the HTTP service serves the MCP tools (streamable HTTP)."""

SCOPE_HEADER = "x-cogito-user"
"""The header naming the scope of a request (as for the REST endpoints)."""

INSTRUCTIONS = (
    "Long-term memory. Call recall (or recall_b, which needs no model) with what you "
    "want to remember before answering; call store to keep a fact verbatim, add to "
    "extract facts from a longer text (a newer fact supersedes the one it replaces). "
    "Call forget when the user asks you to forget something; history shows how a "
    "memory changed. Results carry each memory's id and exact text."
)

_SCOPES_DISABLED = (
    "per-request scopes are disabled on this server; omit X-Cogito-User, "
    "or start it with allow_request_scope=true"
)
_SCOPE_TWICE = "X-Cogito-User was sent {count} times; send it once"
_SCOPE_INVALID = "X-Cogito-User {reason}"
_INTERNAL = "internal error while running the tool; the server log has the details"

Ctx = Context[Any, Any, Any]


class ScopeError(Exception):
    """A scope header the server refuses, with the HTTP status it gets."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


def request_scope(values: Sequence[str], *, allowed: bool) -> str | None:
    """The scope named by a request's ``X-Cogito-User`` values, or None for the default.

    Raises:
        ScopeError: 400 if sent twice, 403 if per-request scopes are off, 422 if invalid.

    Example:
        ```python
        from cogito_lc.service.mcp_server import ScopeError, request_scope

        assert request_scope(["alice"], allowed=True) == "alice"
        assert request_scope([], allowed=False) is None
        try:
            request_scope(["alice"], allowed=False)
        except ScopeError as exc:
            assert exc.status == 403
        ```
    """
    if len(values) > 1:
        raise ScopeError(400, _SCOPE_TWICE.format(count=len(values)))
    if not values:
        return None
    if not allowed:
        raise ScopeError(403, _SCOPES_DISABLED)
    try:
        return scope_header_value(values[0])
    except ValueError as exc:
        raise ScopeError(422, _SCOPE_INVALID.format(reason=exc)) from None


def _check_since(value: str) -> str:
    parse_since(value)
    return value


def _argument_types(max_text_chars: int, max_query_chars: int) -> dict[str, Any]:
    return {
        "query": Annotated[StrictStr, text_field(max_query_chars, "What to look for")],
        "text": Annotated[StrictStr, text_field(max_text_chars, "The memory text, kept verbatim")],
        "source": Annotated[
            StrictStr, text_field(max_text_chars, "The text to extract facts from")
        ],
        "forget": Annotated[
            StrictStr | None,
            given_not_null("query"),
            Field(
                min_length=1,
                max_length=max_query_chars,
                pattern=NON_BLANK,
                description=(
                    f"What to forget, in words (non-blank, at most {max_query_chars} "
                    "characters); give this or ids, not both."
                ),
                json_schema_extra=not_nullable,
            ),
        ],
    }


HowMany = Annotated[
    Limit | None,
    Field(description=f"How many memories to return (1..{LIMIT_MAX}; server default if null)."),
]
Floor = Annotated[
    Threshold | None, Field(description="Lowest cosine similarity a result may have (-1..1).")
]
Since = Annotated[
    StrictStr | None,
    AfterValidator(lambda value: value if value is None else _check_since(value)),
    Field(
        json_schema_extra={"format": "date-time"},
        description="Only memories stored at or after this ISO 8601 instant.",
    ),
]
MemoryId = Annotated[
    str | None,
    Field(
        pattern=ID_PATTERN,
        max_length=MEMORY_ID_MAX_CHARS,
        description="Memory id; by default a stable hash of scope and text (idempotent).",
    ),
]
Hints = Annotated[
    list[Annotated[StrictStr, Field(max_length=1000)]],
    Field(max_length=20, description="Hints that help fact extraction (at most 20)."),
]
PageLimit = Annotated[Limit, Field(description=f"Page size (1..{LIMIT_MAX}).")]
Offset = Annotated[PageOffset, Field(description="How many memories to skip.")]
ExistingId = Annotated[
    StrictStr, Field(min_length=1, max_length=READ_ID_MAX_CHARS, description="The memory id.")
]
Rebuild = Annotated[StrictBool, Field(description="Rebuild even when the snapshot is fresh.")]
AsOfTime = Annotated[AsOf | None, Field(description=AS_OF_HELP)]
Replaces = Annotated[
    MemoryIds | None,
    Field(description="Ids of current memories this one replaces (they are kept, marked)."),
]
ListAll = Annotated[
    StrictBool, Field(description="List superseded memories too (false: current only).")
]
WhichIds = Annotated[
    ForgetIds | None,
    given_not_null("ids"),
    Field(
        description="The ids of the memories to forget; give this or query, not both.",
        json_schema_extra=not_nullable,
    ),
]
Reason = Annotated[
    StrictStr,
    Field(
        min_length=1,
        max_length=REASON_MAX_CHARS,
        pattern=NON_BLANK,
        description="Why, for the audit record (never the forgotten text).",
    ),
]


class _Tools:
    """The tool functions, bound to one service; each acts in the caller's scope."""

    def __init__(self, service: MemoryService, *, allow_request_scope: bool) -> None:
        self.service = service
        self.allow_request_scope = allow_request_scope

    def view(self, ctx: Ctx) -> ScopeView:
        try:
            request = ctx.request_context.request
        except ValueError:  # called in process, outside a client's request
            request = None
        headers = getattr(request, "headers", None)
        values = headers.getlist(SCOPE_HEADER) if headers is not None else []
        try:
            user = request_scope(values, allowed=self.allow_request_scope)
        except ScopeError as exc:
            raise ToolError(exc.detail) from None
        return self.service.view(user)


def _refused(errors: Sequence[Any]) -> ToolError:
    """A tool error naming each refused argument, as schema errors are named."""
    named = "; ".join(
        f"{error['loc'][-1]}: {error['msg']}"
        for error in errors
        if isinstance(error, Mapping) and error.get("loc")
    )
    return ToolError(f"invalid arguments: {named or 'refused'}")


async def _answer(call: Awaitable[T]) -> T:
    """The call's result; its failure as a tool error with a short message, never a path."""
    try:
        return await call
    except ToolError:
        raise
    except RequestValidationError as exc:
        raise _refused(exc.errors()) from None
    except HTTPException as exc:
        raise ToolError(str(exc.detail)) from None
    except Exception:
        logger.exception("MCP tool failed")
        raise ToolError(_INTERNAL) from None


def _search_tools(tools: _Tools, types: dict[str, Any]) -> list[Callable[..., Any]]:
    service = tools.service
    query_text = types["query"]

    async def recall(
        ctx: Ctx,
        text: query_text,  # type: ignore[valid-type]
        limit: HowMany = None,
        threshold: Floor = None,
        since: Since = None,
        as_of: AsOfTime = None,
        include_superseded: IncludeSuperseded = False,
    ) -> RecallResponse:
        """Recall the memories relevant to ``text``: RecallB, then the pointer filter.

        ``method`` is ``filter`` when the model filtered the candidates, or a
        ``fallback_*``/``skipped_*`` tag when stage 1's order was kept. Current
        memories only, unless ``include_superseded`` or ``as_of``.
        """
        view = tools.view(ctx)
        hits, method, recall_method = await _answer(
            service.read(
                service.recall, view, text, limit, threshold, since, as_of, include_superseded
            )
        )
        return RecallResponse(memories=hits, method=method, recall_method=recall_method)

    async def recall_b(
        ctx: Ctx,
        text: query_text,  # type: ignore[valid-type]
        limit: HowMany = None,
        threshold: Floor = None,
        as_of: AsOfTime = None,
        include_superseded: IncludeSuperseded = False,
    ) -> RecallBResponse:
        """Recall the memories relevant to ``text`` with RecallB (no model call)."""
        view = tools.view(ctx)
        hits, method = await _answer(
            service.read(service.recall_b, view, text, limit, threshold, as_of, include_superseded)
        )
        return RecallBResponse(memories=hits, method=method)

    async def query(
        ctx: Ctx,
        text: query_text,  # type: ignore[valid-type]
        limit: HowMany = None,
        threshold: Floor = None,
        as_of: AsOfTime = None,
        include_superseded: IncludeSuperseded = False,
    ) -> QueryResponse:
        """Plain vector search; ``score`` is the cosine similarity to ``text``."""
        view = tools.view(ctx)
        hits = await _answer(
            service.read(service.query, view, text, limit, threshold, as_of, include_superseded)
        )
        return QueryResponse(memories=hits)

    return [recall, recall_b, query]


def _write_tools(tools: _Tools, types: dict[str, Any]) -> list[Callable[..., Any]]:
    service = tools.service
    memory_text, source_text = types["text"], types["source"]
    forget_text = types["forget"]

    async def store(
        ctx: Ctx,
        text: memory_text,  # type: ignore[valid-type]
        id: MemoryId = None,  # noqa: A002 - the HTTP body's field name
        metadata: Metadata | None = None,
        supersedes: Replaces = None,
    ) -> StoreResponse:
        """Store one memory verbatim; the same text twice in a scope is one memory.

        ``supersedes``: the ids of the current memories this one replaces (kept,
        marked, left out of reads; see ``history``).
        """
        view = tools.view(ctx)
        stored = await _answer(service.store(view, text, id, metadata, supersedes))
        return store_response(stored.document, created=stored.created)

    async def add(
        ctx: Ctx,
        text: source_text,  # type: ignore[valid-type]
        context_hints: Hints | None = None,
        supersede: Supersede = None,
    ) -> AddResponse:
        """Extract facts from ``text`` and store each; the text itself when extraction fails.

        A newer fact supersedes the one it replaces (``superseded``: kept, left out of
        reads); a forget request ("Please forget my phone number.") forgets instead.
        """
        view = tools.view(ctx)
        result = await _answer(
            service.write(service.add, view, text, context_hints or [], supersede)
        )
        return add_response(result)

    async def forget(
        ctx: Ctx,
        query: forget_text = None,  # type: ignore[valid-type]
        ids: WhichIds = None,
        reason: Reason = "request",
    ) -> ForgetResponse:
        """Forget memories, each with every version: by what they say (``query``) or ``ids``.

        Give exactly one of them. They are deleted everywhere they are kept, and an
        audit record (ids, time, scope, reason; never the text) is returned.
        """
        problems = forget_target_errors(query, ids)
        if problems:
            raise _refused(problems)
        view = tools.view(ctx)
        result = await _answer(service.write(service.forget, view, query, ids, reason))
        return forget_response(result)

    async def delete_memory(ctx: Ctx, id: ExistingId) -> DeleteResponse:  # noqa: A002
        """Delete one memory of the scope by id, with every version of it (as ``forget``)."""
        view = tools.view(ctx)
        forgotten = await _answer(service.write(service.delete, view, id))
        return DeleteResponse(id=id, forgotten=forgotten)

    return [store, add, forget, delete_memory]


def _browse_tools(tools: _Tools) -> list[Callable[..., Any]]:
    service = tools.service

    async def list_memories(
        ctx: Ctx,
        limit: PageLimit = 50,
        offset: Offset = 0,
        include_superseded: ListAll = True,
        as_of: AsOfTime = None,
    ) -> MemoryList:
        """A page of the memories in the scope, with ids, verbatim text and the total."""
        view = tools.view(ctx)
        docs, total = await _answer(
            service.read(service.page, view, limit, offset, include_superseded, as_of)
        )
        records = [_record(doc) for doc in docs]
        return MemoryList(memories=records, limit=limit, offset=offset, total=total)

    async def history(ctx: Ctx, id: ExistingId) -> HistoryResponse:  # noqa: A002
        """Every version of a memory, oldest first, as stored; ``current`` is the live one."""
        view = tools.view(ctx)
        versions, current = await _answer(service.read(service.history, view, id))
        return HistoryResponse(id=id, current=current, versions=[_record(d) for d in versions])

    async def snapshot(ctx: Ctx, rebuild: Rebuild = False) -> SnapshotBuildResponse:
        """The scope's snapshot: an index of what memory holds (built, or reused while fresh)."""
        view = tools.view(ctx)
        built = await _answer(service.snapshot_job(view, rebuild, False))
        return SnapshotBuildResponse(
            snapshot=built.text,
            path=service.public_path(built.path),
            built_at=built.built_at,
            count=built.count,
            sampled=built.sampled,
            method=built.method,
            saved=built.path is not None,
        )

    return [list_memories, history, snapshot]


def _record(doc: Any) -> MemoryRecord:
    metadata = {
        key: value
        for key, value in doc.metadata.items()
        if not isinstance(value, float) or finite(value) is not None
    }
    return MemoryRecord(id=doc.id or "", text=doc.page_content, metadata=metadata)


_READ_ONLY = ToolAnnotations(readOnlyHint=True, openWorldHint=False)
_ANNOTATIONS = {
    "recall": _READ_ONLY,
    "recall_b": _READ_ONLY,
    "query": _READ_ONLY,
    "list_memories": _READ_ONLY,
    "history": _READ_ONLY,
    "forget": ToolAnnotations(
        readOnlyHint=False, destructiveHint=True, idempotentHint=False, openWorldHint=False
    ),
    "store": ToolAnnotations(readOnlyHint=False, idempotentHint=True, openWorldHint=False),
    "add": ToolAnnotations(readOnlyHint=False, idempotentHint=False, openWorldHint=False),
    "snapshot": ToolAnnotations(readOnlyHint=False, idempotentHint=True, openWorldHint=False),
    "delete_memory": ToolAnnotations(
        readOnlyHint=False, destructiveHint=True, idempotentHint=False, openWorldHint=False
    ),
}


def _field_message(error: Mapping[str, Any]) -> str:
    field = ".".join(str(part) for part in error.get("loc", ())) or "arguments"
    return f"{field}: {readable_message(error)}"


def invalid_arguments(exc: ValidationError) -> ValueError:
    """One line per invalid argument, naming it (``limit: Input should be ...``).

    Example:
        ```python
        from pydantic import BaseModel, ValidationError

        from cogito_lc.service.mcp_server import invalid_arguments

        class Args(BaseModel):
            limit: int

        try:
            Args.model_validate({})
        except ValidationError as exc:
            assert str(invalid_arguments(exc)) == "invalid arguments: limit: Field required"
        ```
    """
    errors = exc.errors(include_url=False)
    return ValueError("invalid arguments: " + "; ".join(_field_message(e) for e in errors))


class _StrictArguments(StorableFields):
    """Mixed into a tool's argument model: unknown names are errors, and errors are short."""

    model_config = ConfigDict(extra="forbid", regex_engine="rust-regex")

    @classmethod
    def model_validate(cls, obj: Any, **kwargs: Any) -> Any:
        try:
            return super().model_validate(obj, **kwargs)  # type: ignore[misc]
        except ValidationError as exc:
            raise invalid_arguments(exc) from None


class _VerbatimArguments(FuncMetadata):
    """Arguments validated as sent: a string is never read as JSON first.

    The SDK parses a string argument whose type is not exactly ``str`` as JSON,
    so an ``id`` of ``"null"`` would become null; here strings stay strings.
    """

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        return data


def _strict_tool(fn: Callable[..., Any]) -> Tool:
    """A tool whose arguments reject unknown names and are read as sent, as the HTTP bodies."""
    tool = Tool.from_function(fn, annotations=_ANNOTATIONS[fn.__name__])
    loose = tool.fn_metadata.arg_model
    strict: type[ArgModelBase] = type(
        loose.__name__, (_StrictArguments, loose), {"__module__": __name__}
    )
    metadata = _VerbatimArguments(**{**dict(tool.fn_metadata), "arg_model": strict})
    parameters = strict.model_json_schema(by_alias=True)
    return tool.model_copy(update={"fn_metadata": metadata, "parameters": parameters})


def create_mcp_server(
    service: MemoryService,
    *,
    max_text_chars: int = 100_000,
    max_query_chars: int = 10_000,
    allow_request_scope: bool = False,
) -> FastMCP[Any]:
    """The MCP server of the memory tools over ``service``.

    The SDK's own ``Host`` and ``Origin`` checks are off: the HTTP service checks
    both, as for every endpoint (see
    :class:`~cogito_lc.service._guard.LoopbackHostMiddleware`).

    Args:
        service: The service whose operations the tools run (the HTTP service's own).
        max_text_chars: Longest memory text (``store``, ``add``).
        max_query_chars: Longest query (``recall``, ``recall_b``, ``query``, ``forget``).
        allow_request_scope: Whether an ``X-Cogito-User`` header may pick the scope.

    Returns:
        A FastMCP server (stateless streamable HTTP, JSON responses).
    """
    tools = _Tools(service, allow_request_scope=allow_request_scope)
    types = _argument_types(max_text_chars, max_query_chars)
    functions = [*_search_tools(tools, types), *_write_tools(tools, types), *_browse_tools(tools)]
    return FastMCP(
        "cogito-lc",
        instructions=INSTRUCTIONS,
        tools=[_strict_tool(fn) for fn in functions],
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        log_level="WARNING",
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )


Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

STREAM_IDLE_TIMEOUT = 60.0
"""Seconds an ``SSE`` stream (``GET /mcp``) may stay open without sending an event."""

MAX_STREAMS_PER_TOKEN = 8
"""``GET /mcp`` streams open at once: the server has one token, so its clients share them."""


async def _send_error(
    send: Send, status: int, detail: str, *, code: int | None = None, headers: Any = None
) -> None:
    body = jsonrpc_error_body(status, detail, code=code)
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(key.lower().encode(), value.encode()) for key, value in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


def _header_values(scope: Scope, name: bytes) -> list[str]:
    return [
        bytes(value).decode("latin-1")
        for key, value in scope.get("headers", [])
        if key.lower() == name
    ]


class McpEndpoint:
    """The ASGI endpoint of the tools over streamable HTTP, guarding the SDK's transport.

    Before the SDK's session manager sees a request, the endpoint answers with a
    JSON-RPC error (and ``detail``, as the REST endpoints do):

    - 400/403/422 to an ``X-Cogito-User`` the server refuses (as the REST endpoints);
    - 415 to a ``POST`` whose ``Content-Type`` is not JSON in UTF-8;
    - 413 to a body over ``max_body_bytes`` (streamed past the declared length);
    - 400 (parse error) to a body that is not UTF-8 or nests deeper than
      :data:`~cogito_lc.service._guard.MAX_JSON_DEPTH` levels (checked before
      parsing), that is not JSON, or that holds ``NaN``, ``Infinity`` or a number
      too large for a float (the SDK would read them as null);
    - 429 to a ``GET`` (an ``SSE`` stream) over ``max_streams`` open streams; the
      server has one bearer token (or none), so every client shares them,
      however it spells its ``Authorization`` header;
    - 503 while the app's lifespan is not running.

    A ``GET`` stream that sends no event for ``stream_idle_timeout`` seconds
    (keep-alive pings do not count) is closed; a client that leaves closes its
    stream at once. Each run of the lifespan (:meth:`running`) gets a fresh server
    from ``factory``: the SDK's session manager runs once per instance.
    """

    def __init__(
        self,
        factory: Callable[[], FastMCP[Any]],
        *,
        allowed: bool,
        stream_idle_timeout: float = STREAM_IDLE_TIMEOUT,
        max_streams: int = MAX_STREAMS_PER_TOKEN,
        max_depth: int = MAX_JSON_DEPTH,
    ) -> None:
        self.factory = factory
        self.allowed = allowed
        self.stream_idle_timeout = stream_idle_timeout
        self.max_streams = max_streams
        self.max_depth = max_depth
        self.open_streams = 0
        """Open ``GET`` streams."""
        self._manager: Any = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Serve requests while the context is open (enter it in the app's lifespan)."""
        server = self.factory()
        server.streamable_http_app()  # creates the session manager
        manager = server.session_manager
        async with manager.run():
            self._manager = manager
            try:
                yield
            finally:
                self._manager = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the scope header and the body, then hand the request to the SDK."""
        try:
            request_scope(_header_values(scope, SCOPE_HEADER.encode()), allowed=self.allowed)
        except ScopeError as exc:
            await _send_error(send, exc.status, exc.detail)
            return
        manager = self._manager
        if manager is None:
            await _send_error(send, 503, "the MCP endpoint is not running; retry shortly")
            return
        method = scope.get("method")
        if method == "POST":
            await self._post(manager, scope, receive, send)
        elif method == "GET":
            await self._stream(manager, scope, receive, send)
        else:
            await manager.handle_request(scope, receive, send)

    async def _post(self, manager: Any, scope: Scope, receive: Receive, send: Send) -> None:
        content_types = _header_values(scope, b"content-type")
        problem = content_type_problem(content_types[0] if content_types else None)
        if problem is not None:
            await _send_error(send, 415, problem)
            return
        try:
            body = await read_body(receive)
        except HTTPException as exc:  # the body limit, past the declared length
            await _send_error(send, exc.status_code, str(exc.detail))
            return
        if not isinstance(body, bytes):
            return  # the client left
        problem = body_problem(body, max_depth=self.max_depth)
        if problem is not None:
            await _send_error(send, 400, problem, code=PARSE_ERROR)
            return
        await manager.handle_request(scope, replaying(body, receive), send)

    async def _stream(self, manager: Any, scope: Scope, receive: Receive, send: Send) -> None:
        if self.open_streams >= self.max_streams:
            detail = (
                f"too many open MCP streams (at most {self.max_streams}, "
                "mcp_max_streams_per_token); close one, or use POST /mcp"
            )
            await _send_error(send, 429, detail, headers={"Retry-After": "5"})
            return
        self.open_streams += 1
        try:
            await _IdleStream(self.stream_idle_timeout).run(manager, scope, receive, send)
        finally:
            self.open_streams -= 1


class _IdleStream:
    """Runs one ``GET`` stream, ending it once it has sent no event for ``timeout`` seconds.

    At the deadline the stream is told its client left (``http.disconnect``), as
    when it really leaves, so the SDK ends it cleanly; the endpoint then ends
    the HTTP response. Keep-alive pings (``SSE`` comments) are not events.
    """

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.deadline = anyio.current_time() + timeout
        self.started = False
        self.finished = False
        self.timed_out = False

    async def run(self, manager: Any, scope: Scope, receive: Receive, send: Send) -> None:
        async def watched_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                self.started = True
            elif message["type"] == "http.response.body":
                chunk = bytes(message.get("body", b""))
                if chunk and not chunk.startswith(b":"):  # an event, not a ping
                    self.deadline = anyio.current_time() + self.timeout
                if not message.get("more_body", False):
                    self.finished = True
            await send(message)

        async def timed_receive() -> Message:
            while True:
                with anyio.move_on_after(self.deadline - anyio.current_time()):
                    return await receive()
                if anyio.current_time() >= self.deadline:
                    self.timed_out = True
                    return {"type": "http.disconnect"}

        await manager.handle_request(scope, timed_receive, watched_send)
        if self.timed_out:
            logger.info("closed an MCP stream idle for %.0f s", self.timeout)
        if self.started and not self.finished:
            await send({"type": "http.response.body", "body": b"", "more_body": False})


def mount_mcp(
    app: Any,
    factory: Callable[[], FastMCP[Any]],
    *,
    allowed: bool,
    stream_idle_timeout: float = STREAM_IDLE_TIMEOUT,
    max_streams: int = MAX_STREAMS_PER_TOKEN,
) -> McpEndpoint:
    """Serve the tools of ``factory()``'s server on ``app`` at :data:`MCP_PATH`.

    The app's middlewares (bearer token, body limit, concurrency) apply, and
    answer this path with JSON-RPC errors. The caller enters the endpoint's
    :meth:`~McpEndpoint.running` in the app's lifespan.

    Args:
        app: A Starlette or FastAPI app.
        factory: Makes the MCP server (see :func:`create_mcp_server`).
        allowed: Whether an ``X-Cogito-User`` header may pick the scope.
        stream_idle_timeout: Seconds a ``GET`` stream may send no event before
            it is closed.
        max_streams: ``GET`` streams open at once (the server's one token shares them).
    """
    endpoint = McpEndpoint(
        factory, allowed=allowed, stream_idle_timeout=stream_idle_timeout, max_streams=max_streams
    )
    app.add_route(MCP_PATH, endpoint, include_in_schema=False)
    return endpoint


def run_stdio(service: MemoryService, **options: Any) -> None:
    """Serve the memory tools on stdin/stdout until the client closes them.

    Args:
        service: The service whose operations the tools run.
        **options: Keyword arguments of :func:`create_mcp_server`.
    """
    server = create_mcp_server(service, **options)
    service.memory.warm_up()  # the model and the lexical postings, before the first call
    server.run("stdio")
