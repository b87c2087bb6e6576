"""``cogito-lc seed --server``: split notes locally, write them through the HTTP API."""

from __future__ import annotations

from pathlib import Path

from tqdm.auto import tqdm

from cogito_lc.cli._client import ApiClient, CliError
from cogito_lc.memory.loaders import split_markdown
from cogito_lc.memory.seed import SeedSummary, read_text_file

__all__ = ["seed_via_api"]


def seed_via_api(
    client: ApiClient, directory: Path, glob: str, *, dry_run: bool, extract: bool
) -> SeedSummary:
    """Store each paragraph of each matching file with ``/store`` (or ``/add``).

    The server's ids are stable hashes of scope and text, so a memory already
    stored is not written twice: ``/store`` answers ``created: false`` and it is
    counted as skipped.
    """
    summary = SeedSummary(dry_run=dry_run)
    files = sorted(p for p in directory.glob(glob) if p.is_file())
    for file in tqdm(files, desc="seeding", unit="file"):
        summary.files += 1
        try:
            chunks = split_markdown(read_text_file(file), source=str(file.relative_to(directory)))
        except (OSError, ValueError) as exc:
            summary.failed.append((str(file), str(exc)))
            continue
        summary.chunks += len(chunks)
        if dry_run:
            summary.stored += len(chunks)
            continue
        try:
            for chunk in chunks:
                _write(client, chunk.page_content, summary, extract=extract)
        except CliError as exc:
            summary.failed.append((str(file), str(exc)))
    return summary


def _write(client: ApiClient, text: str, summary: SeedSummary, *, extract: bool) -> None:
    if extract:
        summary.stored += int(client.call("POST", "/add", {"text": text}).get("count", 0))
    elif client.call("POST", "/store", {"text": text}).get("created", True):
        summary.stored += 1
    else:
        summary.skipped += 1
