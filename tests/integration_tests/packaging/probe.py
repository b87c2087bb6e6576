"""Probe the installed package; print the findings as JSON.

Run by ``test_wheel.py`` inside a virtual environment with the built wheel, in one
process to keep the tests fast: where ``cogito_lc`` was imported from, its version, the
outcome of importing each of its modules (``null`` when it imported), and the
``ImportError`` each code snippet of ``argv[1]`` (a JSON object) raised.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import sys
from pathlib import Path

import cogito_lc
from cogito_lc._core.extras import EXTRAS


def installed_modules() -> list[str]:
    root = Path(cogito_lc.__file__).parent
    names = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        if parts[-1] == "__main__":
            continue  # runs the command line
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def outcome(run: object) -> str | None:
    try:
        run()  # type: ignore[operator]
    except ImportError as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


snippets: dict[str, str] = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
json.dump(
    {
        "file": cogito_lc.__file__,
        "version": cogito_lc.__version__,
        "metadata_version": importlib.metadata.version("cogito-lc"),
        "extras": sorted(EXTRAS),
        "modules": {
            name: outcome(lambda name=name: importlib.import_module(name))
            for name in installed_modules()
        },
        "errors": {
            name: outcome(lambda code=code: exec(code, {}))  # noqa: S102 - the tests' snippets
            for name, code in snippets.items()
        },
    },
    sys.stdout,
)
