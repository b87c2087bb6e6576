"""LazyEmbeddings: built once, on first use, from whichever thread asks first."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings

from cogito_lc.embeddings import LazyEmbeddings


class CountingFactory:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> Embeddings:
        self.calls += 1
        time.sleep(0.05)  # a model load: other threads arrive meanwhile
        return DeterministicFakeEmbedding(size=8)


def test_nothing_is_built_until_an_embedding_is_asked_for() -> None:
    factory = CountingFactory()
    lazy = LazyEmbeddings(factory)
    assert (factory.calls, lazy.loaded) == (0, False)
    assert "not loaded" in repr(lazy)

    real = DeterministicFakeEmbedding(size=8)
    assert lazy.embed_query("tokens expire after 3600 s") == real.embed_query(
        "tokens expire after 3600 s"
    )
    assert lazy.embed_documents(["a", "b"]) == real.embed_documents(["a", "b"])
    assert (factory.calls, lazy.loaded) == (1, True)


def test_other_attributes_come_from_the_built_embeddings() -> None:
    factory = CountingFactory()
    lazy = LazyEmbeddings(factory)
    assert lazy.size == 8  # type: ignore[attr-defined]
    assert factory.calls == 1
    with pytest.raises(AttributeError, match="no_such_field"):
        lazy.no_such_field  # type: ignore[attr-defined]  # noqa: B018


def test_threads_asking_at_once_build_it_once() -> None:
    factory = CountingFactory()
    lazy = LazyEmbeddings(factory)
    with ThreadPoolExecutor(8) as pool:
        vectors = list(pool.map(lazy.embed_query, ["same text"] * 32))
    assert factory.calls == 1
    assert all(vector == vectors[0] for vector in vectors)


async def test_async_calls_build_it_in_a_worker_thread() -> None:
    built_in: list[str] = []

    def factory() -> Embeddings:
        built_in.append(threading.current_thread().name)
        return DeterministicFakeEmbedding(size=8)

    lazy = LazyEmbeddings(factory)
    vector = await lazy.aembed_query("hello")
    assert vector == DeterministicFakeEmbedding(size=8).embed_query("hello")
    assert len(await lazy.aembed_documents(["a", "b"])) == 2
    assert built_in != [threading.main_thread().name]
    assert len(built_in) == 1


def test_a_factory_that_fails_is_tried_again_on_the_next_use() -> None:
    attempts: list[int] = []

    def factory() -> Embeddings:
        attempts.append(1)
        if len(attempts) == 1:
            msg = "model server not up yet"
            raise ConnectionError(msg)
        return DeterministicFakeEmbedding(size=8)

    lazy = LazyEmbeddings(factory)
    with pytest.raises(ConnectionError, match="not up yet"):
        lazy.embed_query("hello")
    assert not lazy.loaded
    assert len(lazy.embed_query("hello")) == 8
    assert len(attempts) == 2


def test_a_factory_that_is_not_callable_is_refused_with_the_fix() -> None:
    with pytest.raises(TypeError, match=r"LazyEmbeddings\(local_embeddings\)"):
        LazyEmbeddings(DeterministicFakeEmbedding(size=8))  # type: ignore[arg-type]


def test_a_copy_builds_its_own_embeddings_on_its_first_use() -> None:
    import copy
    import pickle

    factory = CountingFactory()
    lazy = LazyEmbeddings(factory)
    lazy.embed_query("hello")
    duplicate = copy.deepcopy(lazy)
    assert not duplicate.loaded
    assert duplicate.embed_query("hello") == lazy.embed_query("hello")
    restored = pickle.loads(  # noqa: S301 - our own bytes
        pickle.dumps(LazyEmbeddings(partial(DeterministicFakeEmbedding, size=8)))
    )
    assert not restored.loaded
    assert len(restored.embed_query("hello")) == 8


def _size_is(size: int, seen: list[int]) -> Callable[[Embeddings], None]:
    def check(model: Embeddings) -> None:
        seen.append(len(model.embed_query("probe")))
        if seen[-1] != size:
            msg = f"wrong size {seen[-1]}"
            raise ValueError(msg)

    return check


def _sixteen(model: Embeddings) -> None:
    if len(model.embed_query("probe")) != 16:
        msg = "wrong size"
        raise ValueError(msg)


def test_a_checked_view_checks_the_shared_model_before_its_first_use() -> None:
    factory, seen = CountingFactory(), []
    shared = LazyEmbeddings(factory)
    view = shared.checked(_size_is(8, seen))
    assert (factory.calls, seen, shared.loaded, view.loaded) == (0, [], False, False)
    assert len(view.embed_query("a")) == 8
    assert (factory.calls, seen) == (1, [8])
    view.embed_documents(["b"])
    assert seen == [8]  # once, at its first use
    assert view.embeddings is shared.embeddings  # one model for both


def test_a_failing_check_fails_each_use_of_its_view_only() -> None:
    factory, seen = CountingFactory(), []
    shared = LazyEmbeddings(factory)
    misfit = shared.checked(_size_is(16, seen))
    fits = shared.checked(_size_is(8, seen))
    errors = []
    for _ in range(3):
        with pytest.raises(ValueError, match="wrong size 8") as caught:
            misfit.embed_documents(["a"])
        errors.append(caught.value)
    assert not misfit.loaded
    assert len({id(error) for error in errors}) == 3  # a new error each time
    assert len(_frames(errors[2])) == len(_frames(errors[0]))  # no traceback piles up
    assert len(fits.embed_query("b")) == 8  # the model serves a store it fits
    assert len(shared.embed_query("c")) == 8
    assert factory.calls == 1  # built once, never again


def _frames(error: BaseException) -> list[object]:
    frames, traceback = [], error.__traceback__
    while traceback is not None:
        frames.append(traceback.tb_frame)
        traceback = traceback.tb_next
    return frames


def test_a_check_that_failed_on_a_passing_fault_passes_on_the_next_use() -> None:
    answers = iter([ConnectionError("the model server is not up yet")])

    def check(model: Embeddings) -> None:
        error = next(answers, None)
        if error is not None:
            raise error

    view = LazyEmbeddings(CountingFactory()).checked(check)
    with pytest.raises(ConnectionError):
        view.embed_query("a")
    assert len(view.embed_query("a")) == 8


def test_a_copy_of_a_checked_view_keeps_its_check() -> None:
    import copy
    import pickle

    shared = LazyEmbeddings(partial(DeterministicFakeEmbedding, size=8))
    view = shared.checked(_sixteen)
    for duplicate in (copy.deepcopy(view), pickle.loads(pickle.dumps(view))):  # noqa: S301
        with pytest.raises(ValueError, match="wrong size"):
            duplicate.embed_query("a")


def test_the_inline_methods_a_postgres_store_looks_for_do_not_build_it() -> None:
    factory = CountingFactory()
    lazy = LazyEmbeddings(factory)
    assert not hasattr(lazy, "embed_query_inline")
    assert not hasattr(lazy, "embed_query_inline_template")
    assert factory.calls == 0
    assert lazy.size == 8  # any other attribute builds it
    assert factory.calls == 1
