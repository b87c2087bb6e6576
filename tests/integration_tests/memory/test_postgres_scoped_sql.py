"""Every SQL statement a scoped operation sends to Postgres filters on the scope.

A distributed Postgres such as Citus, with ``user_id`` as the distribution
column, sends a statement to one shard only when the statement pins one
``user_id``: a condition ``"user_id" = <value>`` in the ``WHERE`` clause of every
read, update and delete of a distributed table, and the ``user_id`` column in
every insert. These tests run each operation of ``memory.scoped({"user_id": "a"})``
over a store holding memories of the scopes ``a`` and ``b``, and check every
statement the server received that names the memories table or its BM25
counter table (``<table>_bm25``): each place the table is read, updated or
deleted from must be followed, in its own (sub)query, by a ``WHERE`` holding a
``"user_id" = $n`` condition bound to ``'a'`` and no ``OR`` or ``NOT``; an insert
must list ``user_id`` and bind it to ``'a'`` in every row. A statement naming
neither table must match :data:`ALLOWED`, which gives the reason it cannot carry
a scope.

How the statements are captured: by the server itself. The module creates a
database of its own on the session's private server (the ``pg_url`` fixture,
pgserver) and sets ``log_statement = 'all'`` for that database only (``ALTER
DATABASE ... SET``, a superuser setting; pgserver's ``postgres`` user is a
superuser). Every connection to it, cogito-lc's psycopg pool and
langchain-postgres's SQLAlchemy engine alike, then has the server log each
statement it runs, with its bound parameters, to the server log
(``<data_directory>/log``, where pgserver starts Postgres with ``pg_ctl -l``).
Each operation is framed by two marker statements sent on a separate
connection to the same database: the operations are synchronous and a
statement is logged before it runs, so what an operation sends lies between
its markers, and start-up (schema migration, the BM25 statistics check) and
seeding lie before the first. Nothing is wrapped or faked. Statements run
inside PL/pgSQL (the triggers keeping the BM25 counters) are not sent by the
client and are not logged.

Statements found not to filter on the scope are listed in :data:`UNSCOPED`
with the function sending them: the operations sending them are strict xfails
of :func:`test_every_table_statement_filters_on_the_scope`, and
:func:`test_operation_sends_only_known_statements` fails on any unscoped
statement not listed there (and on a listed one no longer sent).
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from psycopg import sql

from cogito_lc import MemoryStore
from tests.integration_tests.conftest_pg import close_postgres_memory

TABLE = "memories"
"""The memories table: the module's database is its own, so the name is fixed."""
STATS = f"{TABLE}_bm25"
"""Its table of per-scope BM25 counters."""
USER = "a"
"""The ``user_id`` of the scope every checked operation runs in."""

NOTES_A = {
    "refresh": "Refresh tokens last thirty days",
    "backups": "The staging database is backed up hourly",
}
NOTES_B = [
    "Port 8083 is closed on the bastion host",
    "The bastion host rotates its keys weekly",
    "Billing reports for scope b go to finance",
]

# -- what the server logged ---------------------------------------------------------


@dataclass(frozen=True)
class Statement:
    """One statement the server logged: its text and bound parameters (``$n`` -> value)."""

    sql: str
    params: dict[int, str | None] = field(default_factory=dict)

    def __str__(self) -> str:
        text = " ".join(self.sql.split())
        return text if len(text) <= 170 else f"{text[:167]}..."


_ENTRY = re.compile(r"^.*?\[(?P<pid>\d+)\] (?P<level>[A-Z]+):  (?P<message>.*)$")
"""A log line of the default ``log_line_prefix`` (``%m [%p] ``); continuation lines start
with a tab."""
_LOGGED = re.compile(r"^(?:statement|execute [^:]*):\s?(?P<sql>.*)$", re.DOTALL)
_PARAMETER = re.compile(r"\$(?P<n>\d+) = (?:NULL|'(?P<value>(?:[^']|'')*)')")


def _logged_statements(log: str) -> list[tuple[int, Statement]]:
    """The statements in a server log, with the backend that ran each, in log order."""
    entries: list[list[Any]] = []
    for line in log.splitlines():
        if line.startswith("\t") and entries:
            entries[-1][2] += "\n" + line[1:]
        elif found := _ENTRY.match(line):
            entries.append([int(found["pid"]), found["level"], found["message"]])
    statements: list[tuple[int, Statement]] = []
    for pid, level, message in entries:
        if level == "LOG" and (logged := _LOGGED.match(message)):
            statements.append((pid, Statement(logged["sql"].strip())))
        elif (
            level == "DETAIL"
            and message.startswith("parameters: ")
            and statements
            and statements[-1][0] == pid
        ):
            params = {
                int(p["n"]): None if p["value"] is None else p["value"].replace("''", "'")
                for p in _PARAMETER.finditer(message)
            }
            statements[-1] = (pid, replace(statements[-1][1], params=params))
    return statements


def _log_file(admin: psycopg.Connection[Any]) -> Path:
    row = admin.execute("SELECT pg_current_logfile(), current_setting('data_directory')").fetchone()
    assert row is not None
    current, data = row
    # Without the logging collector pgserver's pg_ctl -l writes <data_directory>/log.
    path = Path(data, current) if current else Path(data) / "log"
    if not path.is_file():
        pytest.fail(f"cannot find the server log (looked for {path})")
    return path


def _read_log_until(path: Path, marker: str, timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    while True:
        text = path.read_text(errors="replace")
        if marker in text:
            return text
        if time.monotonic() > deadline:
            pytest.fail(f"the server log {path} never showed the marker {marker!r}")
        time.sleep(0.05)


# -- the scope check ----------------------------------------------------------------

_TABLE_REF = re.compile(rf'(?:"public"\.)?"(?P<name>{TABLE}|{STATS})"')
_KEYWORD_BEFORE = re.compile(r"\b(?P<keyword>FROM|JOIN|UPDATE|INTO)\s*$", re.IGNORECASE)
_SUBQUERY = re.compile(r"\(\s*SELECT\b", re.IGNORECASE)
_WHERE = re.compile(r"\bWHERE\b(?P<clause>.*)", re.IGNORECASE | re.DOTALL)
_CLAUSE_END = re.compile(
    r"\b(?:ORDER\s+BY|GROUP\s+BY|LIMIT|OFFSET|RETURNING|FOR\s+UPDATE)\b", re.IGNORECASE
)
_OR_NOT = re.compile(r"\bOR\b|(?<!\bIS )\bNOT\b", re.IGNORECASE)
_SCOPE_CONDITION = re.compile(r'"user_id"\s*=\s*\$(?P<n>\d+)')
_PLACEHOLDER = re.compile(r"\$(?P<n>\d+)(?:::\w+)?")


def _names_a_table(statement: Statement) -> bool:
    return _TABLE_REF.search(statement.sql) is not None


def scope_violation(statement: Statement, user: str = USER) -> str | None:
    """Why ``statement`` may reach rows outside ``user_id = user``; None when it cannot."""
    text = statement.sql
    for ref in _TABLE_REF.finditer(text):
        keyword = _KEYWORD_BEFORE.search(text, 0, ref.start())
        if keyword is None:
            return f"names {ref['name']} outside FROM, JOIN, UPDATE and INTO"
        own = _own_level(text[ref.end() :])
        if keyword["keyword"].upper() == "INTO":
            problem = _insert_violation(own, statement.params, user)
        else:
            problem = _where_violation(own, statement.params, user)
        if problem is not None:
            return f"{ref['name']}: {problem}"
    return None


def _own_level(text: str) -> str:
    """``text`` up to the end of its (sub)query, without the subqueries nested in it."""
    kept: list[str] = []
    nested: list[bool] = []  # for each open parenthesis: does it open a subquery?
    for index, char in enumerate(text):
        if char == "(":
            nested.append(_SUBQUERY.match(text, index) is not None)
            if not any(nested):
                kept.append(char)
            continue
        if char == ")":
            if not nested:
                break
            if not (nested.pop() or any(nested)):
                kept.append(char)
            continue
        if not any(nested):
            kept.append(char)
    return "".join(kept)


def _where_violation(own: str, params: dict[int, str | None], user: str) -> str | None:
    where = _WHERE.search(own)
    if where is None:
        return "no WHERE clause"
    clause = _CLAUSE_END.split(where["clause"], maxsplit=1)[0].strip()
    if _OR_NOT.search(clause):
        return f"OR or NOT in WHERE {clause}"
    bound = [params.get(int(n)) for n in _SCOPE_CONDITION.findall(clause)]
    if not bound:
        return f"no user_id condition in WHERE {clause}"
    if user not in bound:
        return f"user_id bound to {bound}, not {user!r}"
    return None


def _insert_violation(own: str, params: dict[int, str | None], user: str) -> str | None:
    found = re.match(r"\s*\((?P<columns>[^)]*)\)\s*VALUES\s*", own, re.IGNORECASE)
    if found is None:
        return "an INSERT without a column list and VALUES"
    columns = [column.strip().strip('"') for column in found["columns"].split(",")]
    if "user_id" not in columns:
        return f"inserts no user_id (columns {columns})"
    position = columns.index("user_id")
    rows = _value_rows(own[found.end() :])
    if not rows:
        return "no VALUES rows"
    for row in rows:
        value = row[position].strip() if len(row) == len(columns) else ""
        placeholder = _PLACEHOLDER.fullmatch(value)
        if placeholder is None or params.get(int(placeholder["n"])) != user:
            return f"inserts user_id {value or row} (not bound to {user!r})"
    return None


def _value_rows(text: str) -> list[list[str]]:
    """The rows of ``VALUES (...), (...)``, each split into its items."""
    rows: list[list[str]] = []
    index = 0
    while (start := re.compile(r"\s*\(").match(text, index)) is not None:
        depth, items, item = 0, [], ""
        for end in range(start.end() - 1, len(text)):
            char = text[end]
            depth += {"(": 1, ")": -1}.get(char, 0)
            if depth == 0:
                break
            if char == "," and depth == 1:
                items.append(item)
                item = ""
            elif depth > 1 or char != "(":
                item += char
        rows.append([*items, item])
        comma = re.compile(r"\s*,").match(text, end + 1)
        if comma is None:
            break
        index = comma.end()
    return rows


# -- what may be sent without a scope -------------------------------------------------


class Allowed(NamedTuple):
    pattern: re.Pattern[str]
    reason: str


ALLOWED = {
    "connection check": Allowed(
        re.compile(r";?"),
        "psycopg_pool's check of a pooled connection (an empty query) and SQLAlchemy's "
        "pre-ping (';'): they read no table",
    ),
    "transaction control": Allowed(
        re.compile(r"BEGIN|COMMIT|ROLLBACK", re.IGNORECASE),
        "BEGIN/COMMIT around statements that are themselves checked",
    ),
    "search setting": Allowed(
        re.compile(r"SET LOCAL hnsw\.(?:ef_search|iterative_scan) = \w+"),
        "a setting for the vector search that follows in the same transaction",
    ),
    "lexical search setting": Allowed(
        re.compile(r"SET LOCAL max_parallel_workers_per_gather = 0"),
        "no parallel plan for the lexical search that follows in the same transaction",
    ),
    "insertion order": Allowed(
        re.compile(
            r"SELECT nextval\(pg_get_serial_sequence\(\$1, 'seq'\)\) "
            r"FROM generate_series\(1, \$2\)"
        ),
        "PostgresAdapter._next_seqs takes a batch's numbers of the insertion order from the "
        "table's sequence, in the order written: it reads no row (a distributed table's "
        "sequence is served by the coordinator)",
    ),
    "vector type lookup": Allowed(
        re.compile(r"SELECT .* FROM pg_type t WHERE .*"),
        "psycopg's lookup of the vector type when the pool opens a connection "
        "(register_vector): a catalog, no memories",
    ),
    "column statistics": Allowed(
        re.compile(r"SELECT .* FROM pg_stats WHERE .*"),
        "PostgresLexicalIndex._term_shares reads the planner's statistics of the "
        "tsvector column: a catalog, no memories",
    ),
    "forget audit record": Allowed(
        re.compile(
            r"INSERT INTO cogito_state \(name, content\) VALUES \(\$1, \$2\) ON CONFLICT "
            r"\(name\) DO UPDATE SET content = EXCLUDED\.content, updated_at = now\(\)"
        ),
        "MemoryStore._audited writes the record of a forgetting (ids, time, scope, reason) to "
        "the state table, which holds no memories and is not distributed by scope",
    ),
    "saved vocabulary map": Allowed(
        re.compile(re.escape("SELECT content FROM cogito_state WHERE name = $1")),
        "a forget reads the vocabulary maps saved in the state table to take out the terms "
        "only the forgotten text held; the state table is not distributed by scope",
    ),
    "connection setting": Allowed(
        re.compile(r"SET statement_timeout = \d+"),
        "the statement timeout set on each connection the pool opens (one opens when the "
        "write lock's transaction holds a pooled connection); it reads no table",
    ),
    "write lock wait": Allowed(
        re.compile(r"SET LOCAL (?:lock_timeout|idle_in_transaction_session_timeout) = '\d+ms'"),
        "how long the write lock that follows in the same transaction is waited for, and "
        "how long the server keeps the transaction holding it while idle (the lease)",
    ),
    "write lock renewal": Allowed(
        re.compile(re.escape("SELECT 1")),
        "the lock's transaction saying its replica is alive during a long section; it "
        "reads no table",
    ),
    "write lock": Allowed(
        re.compile(
            re.escape("SELECT pg_advisory_xact_lock(hashtext('cogito_lc_writes'), hashtext($1))")
        ),
        "PostgresAdapter.exclusive: the table's advisory lock, taken by every replica for a "
        "check and the write it allows (a supersession, a forget); it reads no table",
    ),
    "snapshot drop": Allowed(
        re.compile(r"DELETE FROM cogito_state WHERE name = ANY\(\$1\)"),
        "MemoryStore._drop_snapshot drops the saved snapshot of the store a view was made "
        "from (it covers the view's scope) from the state table, which is not distributed "
        "by scope",
    ),
}
"""Statements naming neither table, and why each cannot carry a scope."""


def _allowed(statement: Statement) -> str | None:
    text = " ".join(statement.sql.split())
    return next((name for name, a in ALLOWED.items() if a.pattern.fullmatch(text)), None)


# -- the statements known not to filter on the scope ----------------------------------


class Unscoped(NamedTuple):
    statement: str
    pattern: re.Pattern[str]
    sender: str


def _pattern(text: str) -> re.Pattern[str]:
    return re.compile(text, re.DOTALL)


UNSCOPED = {
    "get by id": Unscoped(
        'SELECT ... FROM "memories" WHERE id = ANY($1) AND TRUE',
        _pattern(r'SELECT .* FROM "memories" WHERE id = ANY\(\$1\) AND TRUE'),
        "PostgresAdapter.get(ids) without where, called by MemoryStore._existing "
        "(MemoryStore._write checks whether the ids are held in any scope before inserting: "
        "an id given by the caller may be held in another scope, a conflict it reports)",
    ),
    "rows held": Unscoped(
        "SELECT coalesce(sum(rows) FILTER (WHERE ...), 0), coalesce(sum(rows), 0) "
        'FROM "memories_bm25"',
        _pattern(
            r"SELECT coalesce\(sum\(rows\) FILTER \(WHERE .*\), 0\), "
            r'coalesce\(sum\(rows\), 0\) FROM "memories_bm25"'
        ),
        "PostgresAdapter._filtered_plan (pgvector before 0.8, as pgserver bundles): the rows "
        "held in the whole table are summed from the BM25 counters to choose exact or HNSW "
        "search",
    ),
}
"""Statements sent in scoped operations that do not filter on the scope."""


def _unscoped_label(statement: Statement) -> str | None:
    text = " ".join(statement.sql.split())
    return next((name for name, u in UNSCOPED.items() if u.pattern.fullmatch(text)), None)


# -- the operations ---------------------------------------------------------------------


@dataclass
class Views:
    """The store, its views of the scopes ``a`` and ``b``, and the ids of ``a``'s memories."""

    memory: MemoryStore
    a: MemoryStore
    b: MemoryStore
    ids: dict[str, str]


def _store(views: Views) -> Any:
    doc = views.a.store("The billing service listens on port 8083 behind the gateway")
    views.ids["billing"] = doc.id or ""
    return doc


def _store_many(views: Views) -> Any:
    notes = {
        "tokens": "Tokens expire after 3600 seconds",
        "gateway": "The gateway retries webhooks three times",
        "deploys": "Deploys freeze on Fridays",
    }
    ids = views.a.store_many(list(notes.values()))
    views.ids.update(zip(notes, ids, strict=True))
    return ids


def _supersede(views: Views) -> Any:
    doc = views.a.store("Tokens expire after 7200 seconds", supersedes=[views.ids["tokens"]])
    views.ids["tokens2"] = doc.id or ""
    return doc


class Operation(NamedTuple):
    name: str
    run: Callable[[Views], Any]
    unscoped: tuple[str, ...]
    """The labels of :data:`UNSCOPED` this operation sends."""


OPERATIONS = [
    Operation("store", _store, ("get by id",)),
    Operation("store_many", _store_many, ("get by id",)),
    Operation(
        "recall",
        lambda v: v.a.as_retriever(k=3).invoke("Which port does billing listen on?"),
        ("rows held",),
    ),
    Operation("search", lambda v: v.a.search("billing port 8083", k=2), ("rows held",)),
    Operation("count", lambda v: v.a.count(), ()),
    Operation("list", lambda v: v.a.list(limit=2, offset=1), ()),
    Operation("get", lambda v: v.a.get(v.ids["billing"]), ()),
    Operation("history", lambda v: v.a.history(v.ids["billing"]), ()),
    Operation(
        "update", lambda v: v.a.update(v.ids["deploys"], "Deploys freeze on Fridays after noon"), ()
    ),
    Operation("supersede", _supersede, ("get by id",)),
    Operation(
        "forget_query",
        lambda v: v.a.forget("The gateway retries webhooks three times"),
        ("rows held",),
    ),
    Operation("forget_ids", lambda v: v.a.forget(ids=[v.ids["deploys"]]), ()),
    Operation("delete", lambda v: v.a.delete(v.ids["billing"]), ()),
    Operation("delete_scope", lambda v: v.a.delete_scope({"user_id": USER}), ()),
]
"""Run in this order (later ones use the memories earlier ones wrote)."""

CONTROLS = {
    "control: no scope": lambda v: v.memory.count(),
    "control: scope b": lambda v: v.b.count(),
}
"""Run after the operations: statements the check must reject."""


@dataclass
class Capture:
    """What each operation sent, what it returned, and the ids of the memories."""

    statements: dict[str, list[Statement]]
    results: dict[str, Any]
    ids: dict[str, str]


@pytest.fixture(scope="module")
def capture(pg_url: str) -> Iterator[Capture]:
    database = f"scoped_sql_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
        admin.execute(
            sql.SQL("ALTER DATABASE {} SET log_statement = 'all'").format(sql.Identifier(database))
        )
        log = _log_file(admin)
    url = urlunsplit(urlsplit(pg_url)._replace(path=f"/{database}"))
    memory = MemoryStore.from_database_url(
        url, embeddings=DeterministicFakeEmbedding(size=8), collection=TABLE
    )
    views = Views(memory, memory.scoped({"user_id": USER}), memory.scoped({"user_id": "b"}), {})
    views.ids.update(zip(NOTES_A, views.a.store_many(list(NOTES_A.values())), strict=True))
    views.b.store_many(NOTES_B)

    token = uuid.uuid4().hex
    steps = [(op.name, op.run) for op in OPERATIONS] + list(CONTROLS.items())
    results: dict[str, Any] = {}
    with psycopg.connect(url, autocommit=True) as marker:
        marker_pid = marker.info.backend_pid
        for name, run in steps:
            marker.execute(sql.SQL("SELECT {}").format(sql.Literal(f"{token} begin {name}")))
            results[name] = run(views)
            marker.execute(sql.SQL("SELECT {}").format(sql.Literal(f"{token} end {name}")))

    logged = _logged_statements(_read_log_until(log, f"{token} end {steps[-1][0]}"))
    statements: dict[str, list[Statement]] = {}
    current: str | None = None
    for pid, statement in logged:
        if pid == marker_pid:
            if f"{token} begin " in statement.sql:
                current = statement.sql.split(f"{token} begin ", 1)[1].rstrip("'")
                statements[current] = []
            elif f"{token} end " in statement.sql:
                current = None
        elif current is not None:
            statements[current].append(statement)
    assert set(statements) == {name for name, _ in steps}, "markers missing from the log"
    yield Capture(statements, results, dict(views.ids))
    close_postgres_memory(memory)


def _listing(statements: list[Statement]) -> str:
    return "\n".join(f"  {s}" for s in statements) or "  (none)"


def _operation_param(op: Operation) -> Any:
    if not op.unscoped:
        return op.name
    reason = "; ".join(
        f"{UNSCOPED[label].statement} from {UNSCOPED[label].sender}" for label in op.unscoped
    )
    return pytest.param(
        op.name, marks=pytest.mark.xfail(strict=True, reason=f"not scoped: {reason}")
    )


# -- the tests ------------------------------------------------------------------------


@pytest.mark.parametrize("operation", [_operation_param(op) for op in OPERATIONS])
def test_every_table_statement_filters_on_the_scope(capture: Capture, operation: str) -> None:
    sent = capture.statements[operation]
    unscoped = {
        str(s): why for s in sent if _names_a_table(s) and (why := scope_violation(s)) is not None
    }
    assert not unscoped, f"{operation} sent statements not pinned to user_id={USER!r}:\n" + (
        "\n".join(f"  {text}\n    -> {why}" for text, why in unscoped.items())
    )


@pytest.mark.parametrize("operation", [op.name for op in OPERATIONS])
def test_operation_sends_only_known_statements(capture: Capture, operation: str) -> None:
    sent = capture.statements[operation]
    listing = f"{operation} sent:\n{_listing(sent)}"
    table_statements = [s for s in sent if _names_a_table(s)]
    assert table_statements, f"no statement on the memories tables was captured; {listing}"
    others = [str(s) for s in sent if not _names_a_table(s) and _allowed(s) is None]
    assert others == [], f"statements not in ALLOWED: {others}; {listing}"
    unscoped = [s for s in table_statements if scope_violation(s) is not None]
    unknown = [str(s) for s in unscoped if _unscoped_label(s) is None]
    assert unknown == [], f"unscoped statements not in UNSCOPED: {unknown}; {listing}"
    expected = next(op.unscoped for op in OPERATIONS if op.name == operation)
    assert {_unscoped_label(s) for s in unscoped} == set(expected), listing


def test_the_check_rejects_other_scopes_and_no_scope(capture: Capture) -> None:
    [everything] = [s for s in capture.statements["control: no scope"] if _names_a_table(s)]
    assert everything.sql.startswith('SELECT count(*) FROM "memories" WHERE')
    assert scope_violation(everything) == f"{TABLE}: no user_id condition in WHERE TRUE"
    [other] = [s for s in capture.statements["control: scope b"] if _names_a_table(s)]
    assert other.params == {1: "b"}
    assert scope_violation(other, user="b") is None
    assert scope_violation(other) == f"{TABLE}: user_id bound to ['b'], not 'a'"
    held = Statement(
        'SELECT (SELECT count(*) FROM (SELECT 1 FROM "memories" WHERE (("user_id" = $1)) '
        'LIMIT $2) AS matching), (SELECT count(*) FROM (SELECT 1 FROM "memories" LIMIT $3) '
        "AS held)",
        {1: USER, 2: "20001", 3: "40002"},
    )
    assert scope_violation(held) == f"{TABLE}: no WHERE clause"
    everywhere_else = Statement(
        'SELECT EXISTS (SELECT 1 FROM "memories_bm25" WHERE rows > 0 '
        'AND NOT coalesce(("user_id" = $1), FALSE))',
        {1: USER},
    )
    assert (scope_violation(everywhere_else) or "").startswith(f"{STATS}: OR or NOT in WHERE")
    insert = Statement(
        'INSERT INTO "memories" (id, "user_id") VALUES ($1, $2), ($3, $4) ON CONFLICT (id) '
        "DO NOTHING RETURNING id",
        {1: "x", 2: USER, 3: "y", 4: "b"},
    )
    assert scope_violation(insert) == f"{TABLE}: inserts user_id $4 (not bound to 'a')"


def test_operations_ran_in_the_scope(capture: Capture) -> None:
    results, ids = capture.results, capture.ids
    assert results["count"] == len(NOTES_A) + 4
    recalled = results["recall"]
    assert recalled
    assert {doc.metadata["user_id"] for doc in recalled} == {USER}
    assert results["get"].id == ids["billing"]
    assert [doc.id for doc in results["history"]] == [ids["billing"]]
    assert results["forget_query"].ids == [ids["gateway"]]
    assert results["forget_ids"].ids == [ids["deploys"]]
    # Left in a: the two seeded memories and both versions of the tokens memory.
    assert results["delete_scope"] == len(NOTES_A) + 2
    assert results["control: no scope"] == results["control: scope b"] == len(NOTES_B)
