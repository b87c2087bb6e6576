"""Where a benchmark writes its results: the published file only for a full default run.

``benchmarks/results/`` holds the figures the README quotes. A smoke run (``--quick``)
or one that narrows the data (fewer conversations, questions, sizes...) must not replace
them, and a run from outside a source checkout must not create that folder wherever it
starts: both write a new file under the system temp directory instead. An explicit
``--out`` always wins.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

__all__ = ["OUT_HELP", "add_out_argument", "narrowing_flags", "results_path"]

OUT_HELP = (
    "{what} (default: {published} on a full run in the source checkout; a partial run "
    "({flags}), or one outside the checkout, writes a new file under the system temp "
    "directory and prints its path)"
)
"""The ``--out`` help of every benchmark: format it with what the file holds, the published
file and the flags that make a run partial."""


def add_out_argument(
    parser: argparse.ArgumentParser, *, what: str, published: object, flags: str
) -> None:
    """Add ``--out``: where ``what`` goes; ``published`` on a full run, else a temp file.

    ``flags`` names the options that make a run partial (see :func:`results_path`).
    """
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help=OUT_HELP.format(what=what, published=published, flags=flags),
    )


def narrowing_flags(args: argparse.Namespace, defaults: Mapping[str, Any]) -> list[str]:
    """The flags of ``args`` that make the run partial: those not at their full-run value.

    Args:
        args: The parsed arguments.
        defaults: Each attribute that narrows the run (``"quick"``, ``"questions"``...)
            and its value in the full, published run. Lists compare in any order.

    Returns:
        The flags, spelt as on the command line (``--quick``), in ``defaults`` order.
    """
    return [
        "--" + name.replace("_", "-")
        for name, full in defaults.items()
        if not _same(getattr(args, name), full)
    ]


def _same(value: Any, full: Any) -> bool:
    if isinstance(value, (list, tuple)) and isinstance(full, (list, tuple)):
        return sorted(value) == sorted(full)
    return bool(value == full)


def results_path(out: Path | None, published: Path, narrowed: list[str]) -> Path:
    """The file a benchmark run writes its results to.

    Args:
        out: The ``--out`` given, if any; it always wins.
        published: The committed results file a full default run replaces.
        narrowed: The flags that make this run partial (see :func:`narrowing_flags`);
            empty for a full default run.

    Returns:
        ``out`` when given; else ``published`` for a full run whose results folder
        exists (a run from the repository root); else a new file under the system temp
        directory, named after ``published`` (the benchmark prints the path it wrote).

    Example:
        ```python
        from pathlib import Path

        from cogito_lc.bench.results import results_path

        published = Path("benchmarks/results/scale.json")
        path = results_path(None, published, ["--quick"])
        assert path != published and path.suffix == ".json"
        assert results_path(Path("mine.json"), published, ["--quick"]) == Path("mine.json")
        ```
    """
    if out is not None:
        return out
    if not narrowed and published.parent.is_dir():
        return published
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    name = f"{published.stem}-{stamp}-{os.getpid()}{published.suffix}"
    return Path(tempfile.gettempdir()) / "cogito-lc-bench" / name
