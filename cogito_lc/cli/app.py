"""The ``cogito-lc`` command line: store, recall, seed, snapshot and serve memories (HTTP, MCP).

By default every command works in process on the embedded store the
configuration names; with ``--server URL`` (or ``COGITO_SERVER``) it goes
through a running service's HTTP API instead.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from cogito_lc._core.extras import missing_extra, require_extra

try:
    require_extra("cli", "The cogito-lc command line")
    import typer
    from rich.console import Console
    from rich.table import Table
except ModuleNotFoundError as exc:  # a module the check does not list
    error = missing_extra("cli", "The cogito-lc command line", exc.name)
    raise error from exc

from rich.text import Text

from cogito_lc._core.display import ANSWERED, escape_controls
from cogito_lc.cli._client import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    ApiClient,
    CliError,
    check_server_url,
    check_utf8,
)

__all__ = ["app", "main"]

EXIT_CODES = """Exit codes: 0 success; 1 failure (no server, model or store error);
2 bad input or configuration; 4 memory not found; 130 interrupted (Ctrl-C)."""

app = typer.Typer(
    name="cogito-lc",
    help=f"Long-term memory for agents: store, recall, seed, snapshot, serve.\n\n{EXIT_CODES}",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
prompts_app = typer.Typer(help="Inspect the prompt registry.", no_args_is_help=True)
bench_app = typer.Typer(help="Benchmarks on public data sets.", no_args_is_help=True)
app.add_typer(prompts_app, name="prompts")
app.add_typer(bench_app, name="bench")

out = Console()
err = Console(stderr=True)


@dataclass
class Options:
    """Global options, shared by every command."""

    config: Path | None = None
    server: str | None = None
    token: str | None = None
    user: str | None = None
    debug: bool = False


def _options(ctx: typer.Context) -> Options:
    options = ctx.find_root().obj
    return options if isinstance(options, Options) else Options()


@app.callback()
def _global(
    ctx: typer.Context,
    config: Annotated[
        Path | None, typer.Option(help="JSON config file (replaces the lookup).")
    ] = None,
    server: Annotated[
        str | None, typer.Option(envvar="COGITO_SERVER", help="Use the service at this URL.")
    ] = None,
    token: Annotated[
        str | None, typer.Option(envvar="COGITO_API_TOKEN", help="Bearer token for --server.")
    ] = None,
    user: Annotated[str | None, typer.Option(help="Scope (user_id) to act in.")] = None,
    debug: Annotated[bool, typer.Option(help="Show tracebacks.")] = False,
) -> None:
    """Long-term memory for agents."""
    ctx.obj = Options(config, server, token, user, debug)


def _settings(options: Options, **overrides: Any) -> Any:
    from cogito_lc.service.config import ConfigError, load_settings

    if options.user:
        overrides["user_id"] = options.user
    try:
        return load_settings(options.config, **overrides)
    except ConfigError as exc:
        msg = f"configuration: {exc}"
        raise CliError(msg, EXIT_USAGE) from None


@contextmanager
def _client(ctx: typer.Context, **overrides: Any) -> Iterator[ApiClient]:
    options = _options(ctx)
    if options.server:
        url = check_server_url(options.server)
        with ApiClient.remote(url, token=options.token, user=options.user) as client:
            yield client
        return
    from cogito_lc.service.config import ConfigError
    from cogito_lc.service.server import create_app

    settings = _settings(options, **overrides)
    token = settings.api_token.get_secret_value() if settings.api_token else None
    # In process nothing listens, whatever host the settings give a server.
    settings = settings.model_copy(update={"host": "127.0.0.1"})
    # One request per command, most of them embedding nothing: load models on use.
    try:
        app = create_app(settings, warm_up=False)
    except ConfigError as exc:  # the store cannot be opened: another process holds it, say
        raise CliError(str(exc)) from None
    with ApiClient.local(app, token=token) as client:
        yield client


def _check_text(value: str, name: str) -> str:
    if not value.strip():
        msg = f"{name} is empty; pass some text."
        raise CliError(msg, EXIT_USAGE)
    return check_utf8(value, name)


def _check_since(value: str) -> str:
    from cogito_lc._core.timestamps import parse_since

    check_utf8(value, "--since")
    try:
        parse_since(value, name="--since")
    except (TypeError, ValueError) as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    except OverflowError:
        msg = f"--since={value!r} is outside years 1-9999 in UTC; pass a date in that range."
        raise CliError(msg, EXIT_USAGE) from None
    return value


def _shown(value: Any) -> Text:
    """Stored or typed text as shown: control characters escaped, no markup read."""
    return Text(escape_controls(str(value)))


def _shown_lines(value: Any) -> Text:
    """:func:`_shown` line by line: the text's own line breaks kept."""
    lines = str(value).replace("\r\n", "\n").split("\n")  # other breaks stay escaped
    return Text("\n").join(_shown(line) for line in lines)


def _shorten(text: str, width: int = 100) -> Text:
    flat = " ".join(text.split())
    return _shown(flat if len(flat) <= width else flat[: width - 1] + "\u2026")


def _title(text: str, method: Any = None) -> Text:
    title = _shown(text)
    if method is not None:
        title.append(f"  method: {escape_controls(str(method))}", style="dim")
    return title


def _print_hits(answer: dict[str, Any], raw: bool, title: str) -> None:
    if raw:
        out.print_json(data=answer)
        return
    method = answer.get("method", "")
    table = Table(title=_title(title, method), title_justify="left")
    for column in ("rank", "score", "id", "text"):
        table.add_column(column, overflow="fold" if column == "text" else "ellipsis")
    for rank, hit in enumerate(answer.get("memories", []), start=1):
        score = hit.get("score")
        table.add_row(
            str(rank),
            "" if score is None else f"{score:.3f}",
            _shown(str(hit.get("id", ""))[:12]),
            _shorten(str(hit.get("text", ""))),
        )
    out.print(table)
    if not answer.get("memories"):
        out.print("[dim]no memories found[/dim]")


def _limit_option(setting: str) -> Any:
    return typer.Option(
        min=1, max=200, help=f"How many memories (1-200; default: the {setting} setting)."
    )


RecallLimit = Annotated[int | None, _limit_option("recall_limit")]
QueryLimit = Annotated[int | None, _limit_option("query_limit")]
Raw = Annotated[bool, typer.Option("--raw", help="Print the JSON answer.")]


def _search_body(query: str, limit: int | None) -> dict[str, Any]:
    """A search request; without ``limit`` the settings' default applies (in process too)."""
    body: dict[str, Any] = {"text": _check_text(query, "query")}
    if limit is not None:
        body["limit"] = limit
    return body


@app.command()
def recall(
    ctx: typer.Context,
    query: str,
    limit: RecallLimit = None,
    since: Annotated[
        str | None, typer.Option(help="Only memories created at/after this ISO date.")
    ] = None,
    raw: Raw = False,
    stream: Annotated[
        bool, typer.Option("--stream", help="Print stage 1 at once, then the final order.")
    ] = False,
) -> None:
    """Two-stage recall: RecallB, then the integer-pointer filter model."""
    body = _search_body(query, limit)
    if since:
        body["since"] = _check_since(since)
    with _client(ctx) as client:
        if not stream:
            _print_hits(client.call("POST", "/recall", body), raw, f"recall: {query}")
            return
        for name, data in client.events("/recall/stream", body):
            _print_event(name, data, raw, query)


def _print_event(name: str, data: Any, raw: bool, query: str) -> None:
    if raw:  # JSON Lines: one compact object per event
        line = json.dumps({"event": name, "data": data}, ensure_ascii=True)
        out.print(line, markup=False, highlight=False, emoji=False, soft_wrap=True)
    elif name == "candidates":
        stage1 = {"memories": data.get("memories", []), "method": data.get("recall_method")}
        _print_hits(stage1, raw, f"stage 1: {query}")
    elif name == "result":
        _print_hits(data, raw, f"recall: {query}")
    if name == "error":
        msg = f"{data.get('status')} from the server: {data.get('detail')}"
        raise CliError(msg)


@app.command("recall-b")
def recall_b(ctx: typer.Context, query: str, limit: RecallLimit = None, raw: Raw = False) -> None:
    """Zero-LLM recall (RecallB)."""
    body = _search_body(query, limit)
    with _client(ctx) as client:
        _print_hits(client.call("POST", "/recall_b", body), raw, f"recall-b: {query}")


@app.command()
def query(ctx: typer.Context, query: str, limit: QueryLimit = None, raw: Raw = False) -> None:
    """Plain vector search, no LLM."""
    body = _search_body(query, limit)
    with _client(ctx) as client:
        _print_hits(client.call("POST", "/query", body), raw, f"query: {query}")


@app.command()
def store(
    ctx: typer.Context,
    text: str,
    memory_id: Annotated[
        str | None, typer.Option("--id", help="Memory id (default: stable hash).")
    ] = None,
    raw: Raw = False,
) -> None:
    """Store one memory verbatim."""
    body: dict[str, Any] = {"text": _check_text(text, "text")}
    if memory_id is not None:  # an empty --id is the service's to refuse, not to drop
        body["id"] = check_utf8(memory_id, "--id")
    with _client(ctx) as client:
        answer = client.call("POST", "/store", body)
    if raw:
        out.print_json(data=answer)
    else:
        verb = "stored " if answer.get("created", True) else "already stored "
        out.print(Text(verb).append(escape_controls(str(answer["id"])), style="bold"))


@app.command()
def add(
    ctx: typer.Context,
    text: str,
    hint: Annotated[list[str] | None, typer.Option(help="Context hint (repeatable).")] = None,
    raw: Raw = False,
) -> None:
    """Extract facts from text and store them (the text itself if extraction fails)."""
    hints = [check_utf8(value, "--hint") for value in hint or []]
    body = {"text": _check_text(text, "text"), "context_hints": hints}
    with _client(ctx) as client:
        answer = client.call("POST", "/add", body)
    if raw:
        out.print_json(data=answer)
        return
    out.print(f"stored {answer['count']} memories  [dim]method: {answer['method']}[/dim]")
    for memory in answer.get("memories", []):
        out.print(Text("  - ").append_text(_shorten(str(memory))))


def _json(text: str, path: Path, line: int | None = None) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        where = f"line {line if line is not None else exc.lineno}"
        msg = f"{path} is not valid JSON ({where}: {exc.msg}); give a JSON list or JSONL"
        raise CliError(msg, EXIT_USAGE) from None


def _transcript(path: Path) -> list[Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        msg = f"cannot read {path}: {exc}"
        raise CliError(msg, EXIT_USAGE) from None
    if path.suffix == ".jsonl":
        lines = enumerate(text.splitlines(), start=1)
        return [_json(line, path, number) for number, line in lines if line.strip()]
    data = _json(text, path)
    messages = data.get("messages") if isinstance(data, dict) else data
    if not isinstance(messages, list):
        msg = f"{path} must hold a list of messages or an object with 'messages'"
        raise CliError(msg, EXIT_USAGE)
    return messages


@app.command()
def flush(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="Messages: a JSON list, or JSONL.")],
    session: Annotated[
        str | None, typer.Option(help="Session id (default: the file name).")
    ] = None,
    window: Annotated[int, typer.Option(min=1, max=100, help="Messages per window.")] = 8,
    raw: Raw = False,
) -> None:
    """End of a session: store the conversation's facts that memory does not hold yet."""
    body = {
        "messages": _transcript(file),
        "session_id": check_utf8(session or file.stem, "--session"),
        "window_size": window,
    }
    with _client(ctx) as client:
        answer = client.call("POST", "/flush", body)
    if raw:
        out.print_json(data=answer)
        return
    skipped = answer["skipped_same_id"] + answer["skipped_near_duplicate"]
    out.print(
        f"stored {answer['count']} memories from {answer['windows']} windows; "
        f"skipped {skipped} already held; {answer['verbatim_windows']} windows verbatim"
    )


@app.command("history")
def history_command(
    ctx: typer.Context,
    memory_id: Annotated[str, typer.Argument(metavar="ID", help="The memory id.")],
    raw: Raw = False,
) -> None:
    """Every version of a memory, oldest first: what superseded what, and when."""
    from urllib.parse import quote

    if not memory_id.strip():
        msg = "ID is empty; pass a memory id (cogito-lc query shows them)."
        raise CliError(msg, EXIT_USAGE)
    path = f"/history/{quote(check_utf8(memory_id, 'ID'), safe='')}"
    with _client(ctx) as client:
        answer = client.call("GET", path)
    if raw:
        out.print_json(data=answer)
        return
    table = Table(title=_title(f"history: {memory_id}"), title_justify="left")
    for column in ("version", "id", "created_at", "superseded_at", "text"):
        table.add_column(column, overflow="fold" if column == "text" else "ellipsis")
    for number, version in enumerate(answer.get("versions", []), start=1):
        metadata = version.get("metadata", {})
        current = version.get("id") == answer.get("current")
        table.add_row(
            f"{number}{' (current)' if current else ''}",
            _shown(str(version.get("id", ""))[:12]),
            _shown(metadata.get("created_at", "")),
            _shown(metadata.get("superseded_at") or ""),
            _shorten(str(version.get("text", ""))),
        )
    out.print(table)


@app.command("forget")
def forget_command(
    ctx: typer.Context,
    query: Annotated[
        str | None, typer.Argument(help="What to forget, in words (or give --id).")
    ] = None,
    ids: Annotated[
        list[str] | None, typer.Option("--id", help="A memory id to forget (repeatable).")
    ] = None,
    reason: Annotated[str, typer.Option(help="Why, for the audit record.")] = "request",
    raw: Raw = False,
) -> None:
    """Forget memories with every version of them (QUERY, or --id ID ...); an audit is kept."""
    if (query is None) == (not ids):
        msg = "give what to forget as QUERY, or the memories as --id ID ...; exactly one of them."
        raise CliError(msg, EXIT_USAGE)
    body: dict[str, Any] = {"reason": _check_text(reason, "--reason")}
    if query is not None:
        body["query"] = _check_text(query, "query")
    else:
        body["ids"] = [check_utf8(value, "--id") for value in ids or []]
    with _client(ctx) as client:
        answer = client.call("POST", "/forget", body)
    if raw:
        out.print_json(data=answer)
        return
    out.print(f"forgot {answer['count']} memories  [dim]method: {answer['method']}[/dim]")
    for forgotten in answer.get("ids", []):
        out.print(Text("  - ").append_text(_shown(forgotten)))
    err.print(f"audit: {answer.get('audit', {}).get('at')} (ids, scope and reason; no text)")


@app.command()
def seed(
    ctx: typer.Context,
    directory: Annotated[Path, typer.Argument(help="Folder of notes.")],
    glob: Annotated[str, typer.Option(help="Which files.")] = "**/*.md",
    add: Annotated[bool, typer.Option("--add", help="Extract facts from each chunk.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only count.")] = False,
) -> None:
    """Bulk-ingest markdown notes: one memory per paragraph, known ones skipped.

    Exits 1 when any file could not be read or stored.
    """
    if not directory.is_dir():
        msg = f"{directory} is not a directory; pass a folder of notes."
        raise CliError(msg, EXIT_USAGE)
    from cogito_lc.cli._seed import seed_via_api

    with _client(ctx) as client:
        local = client.app
        if local is not None:
            memory = local.state.service.memory
            summary = memory.seed(directory, glob, dry_run=dry_run, extract=add)
        else:
            summary = seed_via_api(client, directory, glob, dry_run=dry_run, extract=add)
    out.print(str(summary))
    for path, reason in summary.failed:
        err.print(_shown(f"  failed: {path}: {reason}"))
    if summary.files == 0:
        err.print(_shown(f"no file in {directory} matches {glob!r}"))
    if summary.failed:
        raise typer.Exit(EXIT_ERROR)


@app.command()
def snapshot(
    ctx: typer.Context,
    rebuild: Annotated[bool, typer.Option("--rebuild", help="Rebuild even if fresh.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show, do not save.")] = False,
    mode: Annotated[
        str | None, typer.Option(help="pointer (default) or summary (local only).")
    ] = None,
    raw: Raw = False,
) -> None:
    """Build (or show the fresh) snapshot: a compact index of the memory."""
    if mode not in {None, "pointer", "summary"}:
        msg = "--mode must be 'pointer' or 'summary'."
        raise CliError(msg, EXIT_USAGE)
    overrides = {"snapshot_mode": mode} if mode else {}
    if mode and _options(ctx).server:
        err.print("note: --mode applies to the embedded store; the server uses its own setting.")
    with _client(ctx, **overrides) as client:
        answer = client.call("POST", "/snapshot/build", {"rebuild": rebuild, "dry_run": dry_run})
    if raw:
        out.print_json(data=answer)
        return
    snapshot_text = answer.get("snapshot")
    empty = Text("(empty snapshot)", style="dim")
    out.print(_shown_lines(snapshot_text) if snapshot_text else empty)
    err.print(f"method: {answer.get('method')}  memories: {answer.get('count')}")


@app.command()
def calibrate(
    ctx: typer.Context,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show, do not save.")] = False,
    raw: Raw = False,
) -> None:
    """Build the vocabulary map (plain words -> the corpus's own terms)."""
    with _client(ctx) as client:
        answer = client.call("POST", "/calibrate", {"dry_run": dry_run})
    if raw:
        out.print_json(data=answer)
        return
    for phrase, terms in (answer.get("vocab_map") or {}).items():
        out.print(_shown(f"{phrase} -> {', '.join(terms)}"))
    err.print(f"method: {answer.get('method')}")
    if answer.get("saved") and answer.get("in_use") is False:
        err.print("saved, not in use: the vocab_map setting is configured and wins")
    hint = _calibration_hint(answer, remote=bool(_options(ctx).server))
    if hint:
        err.print(hint)


def _calibration_hint(answer: dict[str, Any], *, remote: bool) -> str | None:
    """What to do about a calibration that built no map, from its ``reason``."""
    reason = answer.get("reason") or ("no_llm" if answer.get("method") == "fallback_no_llm" else "")
    where = " on the server" if remote else ""
    hints = {
        "no_llm": "no chat model is configured, so nothing was calibrated: set llm_model "
        f"(COGITO_LLM_MODEL){where}, e.g. COGITO_LLM_MODEL=ollama:qwen3:4b",
        "no_memories": "the scope holds no memories yet: store some, then calibrate",
        "no_terms": "the model proposed no terms: try a stronger model (llm_model)",
        "all_dropped": f"none of the {len(answer.get('dropped') or [])} proposed terms occurs "
        "in the memories, so none was kept (--raw lists them): try a stronger model",
    }
    return hints.get(reason)


@app.command()
def health(ctx: typer.Context, raw: Raw = False) -> None:
    """Status of the store (or the server): count, version, calibrated, snapshot."""
    with _client(ctx) as client:
        answer = client.call("GET", "/health")
    if raw:
        out.print_json(data=answer)
        return
    for key, value in answer.items():
        out.print(_shown(f"{key}: {value}"))


@app.command("server", help="Alias of serve (the reference's command name).")
@app.command()
def serve(
    ctx: typer.Context,
    host: Annotated[str | None, typer.Option(help="Address (default 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(min=1, max=65535, help="Port (19420).")] = None,
    config: Annotated[Path | None, typer.Option(help="JSON config file.")] = None,
    ui: Annotated[
        bool | None,
        typer.Option("--ui/--no-ui", help="Serve the memory inspector at /ui (default: on)."),
    ] = None,
) -> None:
    """Run the HTTP service (uvicorn) until interrupted."""
    from cogito_lc.service.config import ConfigError
    from cogito_lc.service.server import check_bind
    from cogito_lc.service.server import serve as run

    options = _options(ctx)
    if config is not None:
        options.config = config
    overrides = {k: v for k, v in (("host", host), ("port", port), ("ui", ui)) if v is not None}
    settings = _settings(options, **overrides)
    try:
        check_bind(settings)
    except ConfigError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    try:
        run(settings)
    except ConfigError as exc:  # the database of database_url cannot be used
        raise CliError(str(exc), EXIT_ERROR) from None


@app.command("mcp")
def mcp_stdio(
    ctx: typer.Context,
    config: Annotated[Path | None, typer.Option(help="JSON config file.")] = None,
) -> None:
    """Serve the memory tools over MCP on stdin/stdout (for an MCP host); --user picks the scope."""
    options = _options(ctx)
    if options.server:
        msg = "mcp serves the embedded store in process; drop --server (the service has /mcp)"
        raise CliError(msg, EXIT_USAGE)
    try:
        from cogito_lc.service.mcp_server import run_stdio
    except ImportError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    from cogito_lc.service.server import memory_service

    if config is not None:
        options.config = config
    settings = _settings(options)
    run_stdio(
        memory_service(settings),
        max_text_chars=settings.max_text_chars,
        max_query_chars=settings.max_query_chars,
    )


@prompts_app.command("list")
def prompts_list() -> None:
    """The registry's prompts: name, version, source, description."""
    from cogito_lc.prompts.registry import default_registry

    table = Table("name", "version", "source", "description")
    for entry in default_registry().list():
        table.add_row(entry.name, entry.version, entry.source, entry.description)
    out.print(table)


@prompts_app.command("show")
def prompts_show(name: str) -> None:
    """Print one prompt's messages."""
    from cogito_lc.prompts.registry import default_registry

    registry = default_registry()
    if name not in registry:
        known = ", ".join(e.name for e in registry.list())
        msg = f"no prompt named {name!r}; known: {known}"
        raise CliError(msg, EXIT_USAGE)
    for message in registry.get(name).messages:
        prompt = getattr(message, "prompt", None)
        role = type(message).__name__.replace("MessagePromptTemplate", "").lower() or "message"
        out.print(f"[bold]{role}[/bold]")
        out.print(getattr(prompt, "template", str(message)), markup=False)


_BENCH_OUT_HELP = (
    "JSON results (default: the published file under benchmarks/results/ on a full default "
    "run in the source checkout; a partial run, or one elsewhere, writes a new file under "
    "the system temp directory and prints its path)."
)


@bench_app.command("locomo")
def bench_locomo(
    path: Annotated[Path, typer.Argument(help="LoCoMo JSON file.")],
    units: Annotated[list[str] | None, typer.Option(help="turns and/or facts")] = None,
    methods: Annotated[list[str] | None, typer.Option(help="methods to run")] = None,
    conversations: Annotated[int | None, typer.Option(min=1)] = None,
    out_file: Annotated[Path | None, typer.Option("--out", help=_BENCH_OUT_HELP)] = None,
) -> None:
    """LoCoMo retrieval benchmark: vector, BM25, EnsembleRetriever, RecallB."""
    if not path.is_file():
        msg = f"{path} is not a file; pass the LoCoMo JSON file."
        raise CliError(msg, EXIT_USAGE)
    from cogito_lc.bench.locomo import main as locomo_main

    argv = [str(path)]
    if units:
        argv += ["--units", *units]
    if methods:
        argv += ["--methods", *methods]
    if conversations:
        argv += ["--conversations", str(conversations)]
    if out_file:
        argv += ["--out", str(out_file)]
    code = locomo_main(argv)
    if code:
        raise typer.Exit(code)


@bench_app.command("scale")
def bench_scale(
    path: Annotated[Path | None, typer.Argument(help="LoCoMo JSON file.")] = None,
    sizes: Annotated[
        list[int] | None, typer.Option("--size", min=1, help="Memories per run (repeatable).")
    ] = None,
    queries: Annotated[int | None, typer.Option(min=1, help="LoCoMo questions per phase.")] = None,
    layouts: Annotated[
        list[str] | None, typer.Option("--layout", help="one and/or spread (repeatable).")
    ] = None,
    scopes: Annotated[int | None, typer.Option(min=2, help="Scopes of the spread layout.")] = None,
    embeddings: Annotated[
        str | None,
        typer.Option(help="auto (MiniLM up to 100,000, then pool), minilm, pool or hash."),
    ] = None,
    quick: Annotated[bool, typer.Option("--quick", help="Smoke run: 1,000 memories.")] = False,
    out_file: Annotated[Path | None, typer.Option("--out", help=_BENCH_OUT_HELP)] = None,
) -> None:
    """Scale benchmark: load, disk, RSS and recall latency as memories grow."""
    from cogito_lc.bench.scale import DEFAULT_DATA
    from cogito_lc.bench.scale import main as scale_main

    data = path or DEFAULT_DATA
    if not data.is_file():
        msg = f"{data} is not a file; pass the LoCoMo JSON file."
        raise CliError(msg, EXIT_USAGE)
    if embeddings not in {None, "auto", "minilm", "pool", "hash"}:
        msg = "--embeddings must be auto, minilm, pool or hash."
        raise CliError(msg, EXIT_USAGE)
    unknown = sorted(set(layouts or []) - {"one", "spread"})
    if unknown:
        msg = f"--layout must be 'one' or 'spread', got {unknown}."
        raise CliError(msg, EXIT_USAGE)
    argv = [str(data)]
    argv += ["--sizes", *map(str, sizes)] if sizes else []
    argv += ["--layouts", *layouts] if layouts else []
    argv += ["--queries", str(queries)] if queries else []
    argv += ["--scopes", str(scopes)] if scopes else []
    argv += ["--embeddings", embeddings] if embeddings else []
    argv += ["--out", str(out_file)] if out_file else []
    argv += ["--quick"] if quick else []
    code = scale_main(argv)
    if code:
        raise typer.Exit(code)


@bench_app.command("updates")
def bench_updates(
    conversations: Annotated[
        int | None, typer.Option(min=1, help="Generated conversations (300).")
    ] = None,
    seed: Annotated[int | None, typer.Option(help="Seed of the generator (0).")] = None,
    modes: Annotated[
        list[str] | None,
        typer.Option("--mode", help="zero_llm, local_llm and/or openai (repeatable)."),
    ] = None,
    llm_conversations: Annotated[
        int | None, typer.Option(min=1, help="Conversations of the model modes (10).")
    ] = None,
    out_file: Annotated[Path | None, typer.Option("--out", help=_BENCH_OUT_HELP)] = None,
) -> None:
    """Knowledge-update benchmark: current, past and forgotten facts after they change."""
    from cogito_lc.bench.knowledge_update import MODES
    from cogito_lc.bench.knowledge_update import main as updates_main

    unknown = sorted(set(modes or []) - set(MODES))
    if unknown:
        msg = f"--mode must be one of {', '.join(MODES)}, got {unknown}."
        raise CliError(msg, EXIT_USAGE)
    argv = ["--conversations", str(conversations)] if conversations else []
    argv += ["--seed", str(seed)] if seed is not None else []
    argv += ["--modes", *modes] if modes else []
    argv += ["--llm-conversations", str(llm_conversations)] if llm_conversations else []
    argv += ["--out", str(out_file)] if out_file else []
    code = updates_main(argv)
    if code:
        raise typer.Exit(code)


def _print_error(message: str) -> None:
    """One line on stderr: the message may quote input, so no markup, controls escaped."""
    line = Text("error:", style="red").append(" " + escape_controls(message))
    err.print(line, highlight=False, soft_wrap=True)


_WARNING_PREFIX = re.compile(r"^.*?:\d+: ")
"""The ``path:line:`` a captured warning's message starts with."""


class _OneLineLogFormatter(logging.Formatter):
    """A log record as one line (``warning: message (Error: why)``); tracebacks with ``debug``."""

    def __init__(self, *, debug: bool = False) -> None:
        super().__init__()
        self.debug = debug

    def format(self, record: logging.LogRecord) -> str:
        """The level and message; the exception's type and message, or its traceback."""
        message = record.getMessage()
        if record.name == "py.warnings":  # "path:line: UserWarning: text\n  source line"
            message = _WARNING_PREFIX.sub("", message.splitlines()[0] if message else "")
        line = f"{record.levelname.lower()}: {message}"
        error = record.exc_info[1] if record.exc_info else None
        if error is not None and self.debug:
            return f"{line}\n{self.formatException(record.exc_info)}"  # type: ignore[arg-type]
        if error is not None:
            line += f" ({type(error).__name__}: {error})"
        return escape_controls(line)


def _not_answered(record: logging.LogRecord) -> bool:
    """Whether to show ``record``: not when the service's answer, shown as the error, says it."""
    return not getattr(record, ANSWERED, False)


def _log_to_stderr(*, debug: bool = False) -> None:
    """Send warnings and errors to stderr one line each, unless logging is set up already.

    Set before any library can: the ``mcp`` package, for one, otherwise installs
    a handler printing boxed tracebacks of every logged exception.
    """
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLineLogFormatter(debug=debug))
    handler.addFilter(_not_answered)
    logging.basicConfig(level=logging.WARNING, handlers=[handler])
    logging.captureWarnings(True)  # a setting's warning (a short token) on one line too


def main() -> None:
    """Console-script entry point: one readable line per error, tracebacks only with --debug."""
    debug = "--debug" in sys.argv
    _log_to_stderr(debug=debug)
    try:
        # Without standalone mode click returns a typer.Exit's code instead of exiting.
        code = app(standalone_mode=False)
    except CliError as exc:
        if debug:
            raise
        _print_error(str(exc))
        sys.exit(exc.exit_code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        err.print("aborted")
        sys.exit(1)
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(EXIT_INTERRUPTED)
    except typer.TyperException as exc:  # usage errors: bad option values, missing arguments
        show = getattr(exc, "show", None)
        if callable(show):
            show()
        else:
            err.print(f"error: {exc}", highlight=False, soft_wrap=True)
        sys.exit(int(getattr(exc, "exit_code", EXIT_USAGE)))
    except SystemExit:
        raise
    except Exception as exc:  # the last line of defence: one line, no traceback
        if debug:
            raise
        _print_error(f"{type(exc).__name__}: {exc}")
        sys.exit(1)
    if isinstance(code, int) and code:
        sys.exit(code)


if __name__ == "__main__":
    main()
