"""The ``cogito-lc`` command line (Typer), a client of the service or of a local store.

Needs the ``cli`` extra (``pip install "cogito-lc[cli]"``). The top layer: it may import
every other one. Importing this package itself needs no extra, so that the console
scripts ``cogito-lc`` and ``cogito-lc-server`` can say which extra is missing instead of
failing with a traceback.
"""

from __future__ import annotations

from collections.abc import Sequence

from cogito_lc._core.extras import MissingExtraError

try:
    from cogito_lc.cli.app import app
except MissingExtraError as exc:
    _MISSING: MissingExtraError | None = exc
else:
    _MISSING = None

__all__ = ["app", "main", "server_main"]


def main() -> None:
    """Entry point of ``cogito-lc``; without the ``cli`` extra, exit with its install line."""
    if _MISSING is not None:
        msg = f"cogito-lc: {_MISSING}"
        raise SystemExit(msg)
    from cogito_lc.cli.app import main as run

    run()


def server_main(argv: Sequence[str] | None = None) -> None:
    """``cogito-lc-server``; without the ``server`` extra, exit with the install line."""
    try:
        from cogito_lc.service.server import main as run
    except MissingExtraError as exc:
        msg = f"cogito-lc-server: {exc}"
        raise SystemExit(msg) from None
    run(argv)


def __getattr__(name: str) -> object:
    """``app`` without the ``cli`` extra: the error that names it."""
    if name == "app" and _MISSING is not None:
        raise _MISSING
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)
