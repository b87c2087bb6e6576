r"""Request and response bodies of the HTTP service, with the reference's field names.

Request bodies reject unknown fields and wrong types (no coercion of ``"5"``
to ``5``); their JSON schema says exactly what is accepted, so a client that
follows the OpenAPI document never gets a 422. Every string must be valid
Unicode (a lone surrogate is a 422 naming the field, never a store error), and
a pattern must match the whole value, as in JSON Schema: ``"abc\n"`` is not an
id. The text limits come from the settings, so :func:`request_models` builds
the request classes per app.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Annotated, Any
from urllib.parse import unquote

from langchain_core.documents import Document
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    StrictBool,
    StrictFloat,
    StrictStr,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
)

from cogito_lc._core.timestamps import parse_since
from cogito_lc._core.validation import check_similarity_floor, check_unicode, echo
from cogito_lc._core.versions import check_as_of
from cogito_lc.memory.memory_store import (
    MEMORY_ID_MAX_CHARS,
    READ_ID_MAX_CHARS,
    RESERVED_METADATA_KEYS,
    AddResult,
    ForgetResult,
)

__all__ = [
    "AS_OF_HELP",
    "ID_PATTERN",
    "LIMIT_MAX",
    "METADATA_SCHEMA",
    "NON_BLANK",
    "USER_PATTERN",
    "USER_WORDS",
    "AddBody",
    "AddResponse",
    "AsOf",
    "CalibrateRequest",
    "CalibrateResponse",
    "DeleteResponse",
    "ErrorResponse",
    "FieldError",
    "FlushBody",
    "FlushResponse",
    "ForgetAudit",
    "ForgetBody",
    "ForgetResponse",
    "HealthResponse",
    "HistoryResponse",
    "MemoryHit",
    "MemoryIds",
    "MemoryList",
    "MemoryRecord",
    "QueryResponse",
    "RecallBResponse",
    "RecallBody",
    "RecallResponse",
    "RequestModels",
    "ScopedBody",
    "SearchBody",
    "SessionMessage",
    "SnapshotBuildRequest",
    "SnapshotBuildResponse",
    "SnapshotResponse",
    "StorableFields",
    "StoreBody",
    "StoreResponse",
    "ValidationErrorResponse",
    "add_response",
    "check_as_of_text",
    "check_metadata",
    "finite",
    "forget_response",
    "forget_target_errors",
    "is_user_id",
    "not_nullable",
    "readable_message",
    "request_models",
    "scope_header_value",
    "storable",
    "store_response",
    "text_field",
]

LIMIT_MAX = 200
"""Largest ``limit`` a request may ask for."""

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@+-]*$"
"""What a memory id given by a client looks like (letters, digits and ``._:@+-``)."""

USER_PATTERN = r"^[\p{L}\p{N}][\p{L}\p{M}\p{N}_.:@+-]*$"
"""What a per-request ``user_id`` looks like: a letter or digit of any script (``zoë``,
``张三``), then letters, their marks (``देव``), digits and ``_.:@+-``; no space, control
character or ``%``."""
USER_WORDS = (
    "must start with a letter or digit (of any script) and hold only letters, digits and "
    "_.:@+- (no spaces)"
)
""":data:`USER_PATTERN` in words."""

ID_MAX_CHARS = 128
NON_BLANK = r"[^\t-\r\u001c-\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
"""At least one character that is not whitespace, as Python's ``str.isspace`` defines it.

The characters are listed rather than written ``\\S``, whose meaning differs between
regex engines (Python, Rust, ECMAScript) for characters such as U+0085 and U+001C."""
_RESERVED = "|".join(sorted(RESERVED_METADATA_KEYS))
META_KEY_PATTERN = rf"^(?!(?:{_RESERVED})$)[A-Za-z_][A-Za-z0-9_.-]*$"
META_KEY_MAX_CHARS = 64
META_MAX_KEYS = 32
META_STRING_MAX_CHARS = 4096
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

UserId = Annotated[StrictStr, Field(pattern=USER_PATTERN, max_length=ID_MAX_CHARS)]


def is_user_id(value: str) -> bool:
    """Whether ``value`` is a user id (:data:`USER_PATTERN`, at most 128 characters).

    Python's ``re`` knows no Unicode categories in patterns; :mod:`unicodedata` does.

    Example:
        ```python
        from cogito_lc.service._schemas import is_user_id

        assert is_user_id("zoë") and is_user_id("张三") and is_user_id("team_a:alice@x")
        assert not is_user_id("_x") and not is_user_id("a b") and not is_user_id("")
        ```
    """
    if not 0 < len(value) <= ID_MAX_CHARS or not _letter_or_digit(value[0]):
        return False
    return all(unicodedata.category(char)[0] in "LMN" or char in "_.:@+-" for char in value[1:])


def _letter_or_digit(char: str) -> bool:
    return unicodedata.category(char)[0] in "LN"


def scope_header_value(raw: str) -> str:
    """The user id an ``X-Cogito-User`` header names, percent-decoded from UTF-8.

    A header carries ASCII: a client sends a non-ASCII id percent-encoded
    (``zo%C3%AB`` for ``zoë``); one that sends the UTF-8 bytes themselves is
    understood too. A user id holds no ``%``, so no id is read two ways.

    Raises:
        ValueError: If the header is not UTF-8 text or names no valid user id.

    Example:
        ```python
        from cogito_lc.service._schemas import scope_header_value

        assert scope_header_value("zo%C3%AB") == "zoë"
        assert scope_header_value("alice") == "alice"
        ```
    """
    try:
        text = unquote(raw.encode("latin-1").decode("utf-8"), errors="strict")
    except UnicodeError:
        msg = "is not UTF-8 text; percent-encode the user id's UTF-8 bytes (zo%C3%AB for zoë)"
        raise ValueError(msg) from None
    if not is_user_id(text):
        msg = f"{USER_WORDS}, at most {ID_MAX_CHARS} characters; percent-encode non-ASCII ones"
        raise ValueError(msg)
    return text


def _integral(value: Any) -> Any:
    # JSON Schema counts 5.0 as an integer; strict validation then rejects "5" and true.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


Limit = Annotated[int, Field(strict=True, ge=1, le=LIMIT_MAX), BeforeValidator(_integral)]
PageOffset = Annotated[int, Field(strict=True, ge=0, le=1_000_000), BeforeValidator(_integral)]
Threshold = Annotated[
    StrictFloat,
    AfterValidator(partial(check_similarity_floor, name="threshold")),
    Field(json_schema_extra={"minimum": -1.0, "maximum": 1.0}),
]


def check_as_of_text(value: str) -> str:
    """``value`` unchanged when it is a past ISO 8601 time (the error names ``as_of``).

    Example:
        ```python
        from cogito_lc.service._schemas import check_as_of_text

        assert check_as_of_text("2026-01-01T00:00:00Z") == "2026-01-01T00:00:00Z"
        ```
    """
    check_as_of(value)
    return value


AS_OF_HELP = (
    "Read what was current at this ISO 8601 instant (not in the future): memories "
    "created by then and not yet superseded then."
)
AsOf = Annotated[
    StrictStr,
    AfterValidator(check_as_of_text),
    Field(json_schema_extra={"format": "date-time"}, description=AS_OF_HELP),
]
"""An ``as_of`` time a request may give: ISO 8601, not in the future."""
IncludeSuperseded = Annotated[
    StrictBool,
    Field(description="Also return memories a newer one superseded (ignored with as_of)."),
]
Supersede = Annotated[
    StrictBool | None,
    Field(
        description=(
            "Judge which stored memories the new ones supersede or repeat (default: on "
            "when the server has a model)."
        )
    ),
]

_META_VALUE_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "string", "maxLength": META_STRING_MAX_CHARS},
        {"type": "integer", "minimum": INT64_MIN, "maximum": INT64_MAX},
        {"type": "number"},
        {"type": "boolean"},
    ]
}
METADATA_SCHEMA: dict[str, Any] = {
    "type": "object",
    "maxProperties": META_MAX_KEYS,
    "propertyNames": {"pattern": META_KEY_PATTERN, "maxLength": META_KEY_MAX_CHARS},
    "additionalProperties": _META_VALUE_SCHEMA,
    "description": (
        "Flat metadata: string, integer, number or boolean values; "
        f"the keys {sorted(RESERVED_METADATA_KEYS)} are reserved."
    ),
}


def _check_meta_key(key: Any) -> str:
    shown = echo(key)
    if not isinstance(key, str) or len(key) > META_KEY_MAX_CHARS:
        msg = f"metadata key {shown} must be a string of at most {META_KEY_MAX_CHARS} characters"
        raise ValueError(msg)
    if key in RESERVED_METADATA_KEYS:
        msg = f"metadata key {shown} is reserved: the store sets it; rename the key"
        raise ValueError(msg)
    if not re.fullmatch(META_KEY_PATTERN, key):
        msg = f"metadata key {shown} must start with a letter or '_' and use only [A-Za-z0-9_.-]"
        raise ValueError(msg)
    return key


def _check_meta_value(key: str, value: Any) -> str | int | float | bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and len(value) <= META_STRING_MAX_CHARS:
        return check_unicode(value, name=f"metadata[{echo(key)}]")
    if isinstance(value, int) and INT64_MIN <= value <= INT64_MAX:
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    msg = (
        f"metadata[{key!r}] must be a string (at most {META_STRING_MAX_CHARS} characters), "
        "a 64-bit integer, a finite number or a boolean"
    )
    raise ValueError(msg)


def check_metadata(value: Any) -> dict[str, str | int | float | bool]:
    """Validate flat request metadata; errors name the key and say what is allowed.

    Example:
        ```python
        from cogito_lc.service._schemas import check_metadata

        assert check_metadata({"topic": "auth", "ttl": 3600}) == {"topic": "auth", "ttl": 3600}
        ```
    """
    if not isinstance(value, dict):
        msg = "metadata must be a JSON object of keys to values"
        raise ValueError(msg)  # noqa: TRY004 - reported as a validation error (422)
    if len(value) > META_MAX_KEYS:
        msg = f"metadata has {len(value)} keys; at most {META_MAX_KEYS} are allowed"
        raise ValueError(msg)
    return {_check_meta_key(key): _check_meta_value(key, item) for key, item in value.items()}


Metadata = Annotated[
    dict[str, Any], PlainValidator(check_metadata), WithJsonSchema(METADATA_SCHEMA)
]


def storable(value: Any, name: str) -> Any:
    """``value`` if no string in it holds what no store can (a NUL); else a ValueError naming it.

    Example:
        ```python
        from cogito_lc.service._schemas import storable

        assert storable({"team": ["web"]}, "metadata") == {"team": ["web"]}
        ```
    """
    if isinstance(value, str):
        check_unicode(value, name=name)
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            storable(item, f"{name}[{index}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            storable(key, f"{name} key {echo(key)}")
            storable(item, f"{name}[{echo(key)}]")
    return value


def readable_message(error: Mapping[str, Any]) -> str:
    """A validation error's message, with the schema's patterns said in words.

    Example:
        ```python
        from cogito_lc.service._schemas import NON_BLANK, readable_message

        error = {"type": "string_pattern_mismatch", "msg": "...", "ctx": {"pattern": NON_BLANK}}
        assert readable_message(error) == "must contain a character that is not whitespace"
        ```
    """
    if error.get("type") == "string_pattern_mismatch":
        pattern = (error.get("ctx") or {}).get("pattern")
        if pattern in _PATTERN_WORDS:
            return _PATTERN_WORDS[pattern]
    return str(error.get("msg", "invalid"))


class StorableFields:
    """Mixed into a request or tool-argument model: no string of a field holds a NUL."""

    @field_validator("*", mode="after")
    @classmethod
    def _storable(cls, value: Any, info: ValidationInfo) -> Any:
        return storable(value, info.field_name or "value")


class _Request(StorableFields, BaseModel):
    """Strict JSON object: unknown fields and coercions are errors.

    Patterns run on the Rust engine, whose ``$`` matches only at the end of the
    value, as in the JSON Schema (ECMAScript) the OpenAPI document publishes;
    Python's ``$`` also matches before a final newline.
    """

    model_config = ConfigDict(extra="forbid", regex_engine="rust-regex")


class ScopedBody(_Request):
    """A request that may name its scope."""

    user_id: UserId | None = Field(
        default=None,
        description="Scope of this request; only when the server allows per-request scopes.",
    )


class SearchBody(ScopedBody):
    """A search: ``text``, ``limit`` and a similarity floor."""

    text: StrictStr
    limit: Limit | None = Field(
        default=None, description="How many memories to return (1..200; server default if null)."
    )
    threshold: Threshold | None = Field(
        default=None, description="Lowest cosine similarity a result may have (-1..1)."
    )
    as_of: AsOf | None = None
    include_superseded: IncludeSuperseded = False


class RecallBody(SearchBody):
    """A two-stage recall; ``since`` keeps only memories stored at or after an instant."""

    since: StrictStr | None = Field(
        default=None,
        json_schema_extra={"format": "date-time"},
        description="Only memories stored at or after this ISO 8601 instant.",
    )

    @field_validator("since", mode="after")
    @classmethod
    def _parse_since(cls, value: str | None) -> str | None:
        if value is not None:
            parse_since(value)
        return value


MemoryIds = Annotated[
    list[Annotated[StrictStr, Field(min_length=1, max_length=READ_ID_MAX_CHARS)]],
    Field(min_length=1, max_length=LIMIT_MAX),
]
"""A list of existing memory ids (1 to :data:`LIMIT_MAX`)."""


class StoreBody(ScopedBody):
    """Write one memory verbatim."""

    text: StrictStr
    id: str | None = Field(
        default=None,
        pattern=ID_PATTERN,
        max_length=MEMORY_ID_MAX_CHARS,
        description="Memory id; by default a stable hash of scope and text (idempotent).",
    )
    metadata: Metadata | None = None
    supersedes: MemoryIds | None = Field(
        default=None,
        description=(
            "Ids of current memories of the scope this one replaces: they stay stored, "
            "marked superseded, and reads leave them out (404 if one is not current here)."
        ),
    )


class AddBody(ScopedBody):
    """Extract facts from text and store each (the text verbatim if extraction fails)."""

    text: StrictStr
    context_hints: list[Annotated[StrictStr, Field(max_length=1000)]] = Field(
        default_factory=list, max_length=20, description="Hints that help fact extraction."
    )
    supersede: Supersede = None


class SnapshotBuildRequest(ScopedBody):
    """Build the snapshot of the scope."""

    rebuild: StrictBool = Field(default=False, description="Rebuild even when still fresh.")
    dry_run: StrictBool = Field(default=False, description="Return it without saving.")


class CalibrateRequest(ScopedBody):
    """Calibrate the vocabulary map of the scope."""

    dry_run: StrictBool = Field(default=False, description="Return the map without saving it.")


ROLE_PATTERN = r"^[a-z][a-z_]*$"
FLUSH_MAX_MESSAGES = 1000
_PATTERN_WORDS = {
    NON_BLANK: "must contain a character that is not whitespace",
    ID_PATTERN: "must start with a letter or digit and hold only letters, digits and ._:@+-",
    USER_PATTERN: USER_WORDS,
    ROLE_PATTERN: "must be lower-case letters and '_', such as 'user' or 'assistant'",
}
"""What each pattern of the request schema asks for, in words."""


class SessionMessage(_Request):
    """One message of a conversation."""

    role: StrictStr = Field(
        pattern=ROLE_PATTERN,
        max_length=32,
        description="Who spoke: user, assistant, system, tool...",
    )
    content: StrictStr = Field(max_length=100_000, description="What was said.")


class FlushBody(ScopedBody):
    """End-of-session flush: store what a conversation taught that memory does not hold."""

    messages: list[SessionMessage] = Field(
        min_length=1,
        max_length=FLUSH_MAX_MESSAGES,
        description=f"The conversation, oldest first (at most {FLUSH_MAX_MESSAGES} messages).",
    )
    session_id: StrictStr = Field(
        pattern=ID_PATTERN,
        max_length=ID_MAX_CHARS,
        description="Names the session in each memory's source metadata (session:<id>).",
    )
    window_size: Annotated[int, Field(strict=True, ge=1, le=100), BeforeValidator(_integral)] = (
        Field(default=8, description="Messages per extraction window.")
    )
    supersede: Supersede = None


FORGET_MAX_IDS = LIMIT_MAX
REASON_MAX_CHARS = 200
ForgetIds = MemoryIds


def _not_null(value: Any, name: str) -> Any:
    if value is None:
        msg = f"{name} must not be null; leave it out instead"
        raise ValueError(msg)
    return value


def given_not_null(name: str) -> Any:
    """A validator refusing an explicit null for ``name``, an optional field one leaves out."""
    return BeforeValidator(lambda value: _not_null(value, name))


def not_nullable(schema: dict[str, Any]) -> None:
    """Publish an optional field as its type alone: left out, never null.

    Validation keeps the field nullable (so its errors are named by the field
    alone); a validator refuses an explicit null.
    """
    options = schema.pop("anyOf", None) or []
    kept = [option for option in options if option.get("type") != "null"]
    if len(kept) == 1:
        schema.update({**kept[0], **schema})
    schema.pop("default", None)


class ForgetBody(ScopedBody):
    """Forget memories, each with every version of it: by what they say, or by id."""

    model_config = ConfigDict(
        extra="forbid",
        regex_engine="rust-regex",
        json_schema_extra={"oneOf": [{"required": ["query"]}, {"required": ["ids"]}]},
    )

    query: StrictStr | None = Field(
        default=None,
        description='What to forget, in words ("my phone number"); give this or ids.',
        json_schema_extra=not_nullable,
    )
    ids: ForgetIds | None = Field(
        default=None,
        description=f"The ids of the memories to forget (1..{FORGET_MAX_IDS}); or query.",
        json_schema_extra=not_nullable,
    )
    reason: StrictStr = Field(
        default="request",
        min_length=1,
        max_length=REASON_MAX_CHARS,
        pattern=NON_BLANK,
        description="Why, for the audit record (never put the forgotten text here).",
    )

    @field_validator("query", "ids", mode="before")
    @classmethod
    def _given_not_null(cls, value: Any, info: Any) -> Any:
        return _not_null(value, str(info.field_name))


def forget_target_errors(query: str | None, ids: Sequence[str] | None) -> list[dict[str, Any]]:
    """The 422 errors of a forget request that does not give exactly one of query and ids.

    Example:
        ```python
        from cogito_lc.service._schemas import forget_target_errors

        assert forget_target_errors("my phone number", None) == []
        [error] = forget_target_errors(None, None)
        assert error["loc"] == ("body", "query")
        ```
    """
    if query is None and ids is None:
        msg = "give query (what to forget) or ids (which memories): exactly one of them"
        return [{"loc": ("body", "query"), "msg": msg, "type": "missing"}]
    if query is not None and ids is not None:
        msg = "give query or ids, not both: forget by what memories say, or by their ids"
        return [{"loc": ("body", "ids"), "msg": msg, "type": "value_error"}]
    return []


@dataclass(frozen=True)
class RequestModels:
    """The request classes of one app, whose ``text`` fields carry its limits."""

    query: type[SearchBody]
    recall_b: type[SearchBody]
    recall: type[RecallBody]
    store: type[StoreBody]
    add: type[AddBody]
    forget: type[ForgetBody]


def text_field(max_chars: int, what: str) -> Any:
    """A ``text`` field: non-blank, at most ``max_chars`` characters, described as ``what``."""
    return Field(
        min_length=1,
        max_length=max_chars,
        pattern=NON_BLANK,
        description=f"{what} (non-blank, at most {max_chars} characters).",
    )


def request_models(max_text_chars: int, max_query_chars: int) -> RequestModels:
    """Request classes whose ``text`` fields carry these limits in validation and schema.

    Example:
        ```python
        from cogito_lc.service._schemas import request_models

        models = request_models(100, 50)
        assert models.store.model_json_schema()["properties"]["text"]["maxLength"] == 100
        ```
    """

    class QueryRequest(SearchBody):
        """Plain vector search (no LLM)."""

        text: StrictStr = text_field(max_query_chars, "The query")

    class RecallBRequest(SearchBody):
        """Zero-LLM recall (RecallB)."""

        text: StrictStr = text_field(max_query_chars, "The query")

    class RecallRequest(RecallBody):
        """Two-stage recall: RecallB, then the integer-pointer filter."""

        text: StrictStr = text_field(max_query_chars, "The query")

    class StoreRequest(StoreBody):
        """Write one memory verbatim."""

        text: StrictStr = text_field(max_text_chars, "The memory text")

    class AddRequest(AddBody):
        """Extract facts from text and store each (the text verbatim if extraction fails)."""

        text: StrictStr = text_field(max_text_chars, "The text to extract facts from")

    class ForgetRequest(ForgetBody):
        """Forget memories, each with every version of it: by what they say, or by id."""

        query: StrictStr | None = Field(
            default=None,
            min_length=1,
            max_length=max_query_chars,
            pattern=NON_BLANK,
            json_schema_extra=not_nullable,
            description=(
                f"What to forget, in words (non-blank, at most {max_query_chars} characters); "
                "give this or ids."
            ),
        )

    return RequestModels(
        QueryRequest, RecallBRequest, RecallRequest, StoreRequest, AddRequest, ForgetRequest
    )


# -- responses ------------------------------------------------------------------


def finite(value: Any) -> float | None:
    """``value`` as a float when it is a finite number, else None (JSON has no NaN)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return round(number, 6) if math.isfinite(number) else None


class MemoryHit(BaseModel):
    """A memory found by a search, with its score."""

    id: str
    text: str
    score: float | None = None


class QueryResponse(BaseModel):
    """Results of ``/query``: cosine similarity to the query as ``score``."""

    memories: list[MemoryHit]
    method: str = "vector"


class RecallBResponse(BaseModel):
    """Results of ``/recall_b`` with RecallB's method tag (see :data:`~cogito_lc.METADATA_KEY`)."""

    memories: list[MemoryHit]
    method: str


class RecallResponse(BaseModel):
    """Results of ``/recall``: the filter's method tag and stage 1's."""

    memories: list[MemoryHit]
    method: str
    recall_method: str | None = None


class StoreResponse(BaseModel):
    """The stored memory."""

    id: str
    text: str
    created: bool = Field(
        default=True,
        description="False when this memory was stored already (the same text in the "
        "scope, or the same id): nothing was written.",
    )


class AddResponse(BaseModel):
    """What ``/add`` stored: texts (reference shape), their ids and the method tag.

    With supersession, ``superseded`` lists the memories the new ones replaced (kept,
    marked, left out of reads; see ``/history/{id}``) and ``repeated`` the stored ones
    the text only repeated; a forget request stores nothing (``method`` ``forgotten``)
    and lists what it forgot in ``forgotten``.
    """

    count: int
    memories: list[str]
    ids: list[str]
    method: str
    superseded: list[str] = Field(default_factory=list)
    repeated: list[str] = Field(default_factory=list)
    forgotten: list[str] = Field(default_factory=list)
    supersession: str | None = Field(
        default=None,
        description="The judge's method tag (judged, skipped_empty, fallback_*); null: none asked.",
    )


class MemoryRecord(BaseModel):
    """A stored memory with its metadata."""

    id: str
    text: str
    metadata: dict[str, Any]


class MemoryList(BaseModel):
    """A page of the memories in the scope."""

    memories: list[MemoryRecord]
    limit: int
    offset: int
    total: int


class DeleteResponse(BaseModel):
    """The deleted memory's id, and the ids of every version deleted with it."""

    id: str
    deleted: bool = True
    forgotten: list[str] = Field(default_factory=list)


class ForgetAudit(BaseModel):
    """The audit record kept of a forgetting: ids, time, scope and reason, never text."""

    event: str
    ids: list[str]
    count: int
    at: str
    scope: dict[str, str]
    reason: str


class ForgetResponse(BaseModel):
    """What ``/forget`` removed (each memory with every version) and the audit record."""

    ids: list[str]
    count: int
    method: str
    audit: ForgetAudit


class HistoryResponse(BaseModel):
    """Every version of a memory, oldest first, as stored; ``current`` is the live one."""

    id: str
    current: str | None
    versions: list[MemoryRecord]


class HealthResponse(BaseModel):
    """Liveness and the state of the default scope."""

    status: str
    count: int
    version: str
    calibrated: bool
    snapshot: bool


class SnapshotResponse(BaseModel):
    """The saved snapshot."""

    snapshot: str
    path: str | None


class SnapshotBuildResponse(BaseModel):
    """A built (or still fresh) snapshot."""

    snapshot: str
    path: str | None
    built_at: str
    count: int
    sampled: int
    method: str
    saved: bool


class CalibrateResponse(BaseModel):
    """The calibrated vocabulary map."""

    vocab_map: dict[str, list[str]]
    count: int
    method: str
    path: str | None
    saved: bool
    in_use: bool = False
    """Whether recall now uses the map: false for a dry run, an empty map, or when the
    ``vocab_map`` setting is configured (it wins; the map is saved for when it is removed)."""
    dropped: list[str]
    reason: str = ""
    """Why no map was built: ``no_llm`` (no chat model configured), ``no_memories``,
    ``no_terms`` (the model proposed none) or ``all_dropped`` (every proposed term is
    missing from the corpus); empty when a map was built or the model failed."""


class FlushResponse(BaseModel):
    """What ``/flush`` stored and what it left out."""

    windows: int
    count: int
    memories: list[str]
    ids: list[str]
    skipped_same_id: int
    skipped_near_duplicate: int
    verbatim_windows: int
    methods: list[str]
    superseded: list[str] = Field(default_factory=list)
    repeated: list[str] = Field(default_factory=list)
    forgotten: list[str] = Field(default_factory=list)
    supersession: str | None = None


class ErrorResponse(BaseModel):
    """An error with a short message."""

    detail: str


class FieldError(BaseModel):
    """One invalid field of a request."""

    field: str
    message: str
    type: str


class ValidationErrorResponse(BaseModel):
    """A request that failed validation: a summary naming the fields, and each error."""

    detail: str
    errors: list[FieldError]


def store_response(document: Document, *, created: bool) -> StoreResponse:
    """The answer of ``/store`` (and of the MCP ``store`` tool) for the memory stored."""
    return StoreResponse(id=document.id or "", text=document.page_content, created=created)


def add_response(result: AddResult) -> AddResponse:
    """The answer of ``/add`` (and of the MCP ``add`` tool) for what ``MemoryStore.add`` did."""
    return AddResponse(
        count=result.count,
        memories=[doc.page_content for doc in result.memories],
        ids=[doc.id or "" for doc in result.memories],
        method=result.method,
        superseded=result.superseded,
        repeated=result.repeated,
        forgotten=result.forgotten,
        supersession=result.supersession,
    )


def forget_response(result: ForgetResult) -> ForgetResponse:
    """The answer of ``/forget`` (and of the MCP ``forget`` tool) for what was forgotten."""
    return ForgetResponse(
        ids=result.ids,
        count=result.count,
        method=result.method,
        audit=ForgetAudit.model_validate(result.audit),
    )
