"""Side work of a recall: in a thread while one is free, else in the caller's thread."""

from __future__ import annotations

import threading

import pytest

from cogito_lc.retrievers import _beside


def test_work_runs_in_another_thread_when_one_is_free() -> None:
    assert _beside.start(threading.get_ident).result() != threading.get_ident()


def test_work_runs_in_the_caller_when_every_thread_is_busy() -> None:
    release = threading.Event()
    busy = [_beside.start(release.wait) for _ in range(_beside.WORKERS)]
    try:
        assert _beside.start(threading.get_ident).result() == threading.get_ident()
    finally:
        release.set()
    assert all(future.result(timeout=5) for future in busy)
    assert _beside.start(threading.get_ident).result() != threading.get_ident()


def test_an_error_reaches_the_caller_either_way() -> None:
    def fail() -> None:
        msg = "index unreadable"
        raise RuntimeError(msg)

    with pytest.raises(RuntimeError, match="index unreadable"):
        _beside.start(fail).result()
    with pytest.raises(RuntimeError, match="index unreadable"):
        _beside._done(fail).result()
