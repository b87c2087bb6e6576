"""numpy's BLAS runs on one thread inside a search's products, and gets its threads back."""

from __future__ import annotations

import multiprocessing
import os
import threading
from typing import Any

import numpy as np
import pytest

threadpoolctl = pytest.importorskip("threadpoolctl")

from cogito_lc._core.blas import one_blas_thread  # noqa: E402


def _blas_threads() -> int:
    [info] = threadpoolctl.ThreadpoolController().select(user_api="blas").info()[:1]
    return int(info["num_threads"])


@pytest.fixture
def two_blas_threads() -> None:
    # Not set here: threadpoolctl lets the thread holding a limit alone change it.
    if _blas_threads() < 2:
        pytest.skip("BLAS runs on one thread here")


@pytest.mark.usefixtures("two_blas_threads")
def test_products_inside_run_on_one_thread_and_the_threads_come_back() -> None:
    with one_blas_thread():
        assert _blas_threads() == 1
        product = np.ones((4, 8), dtype=np.float32) @ np.ones((8, 3), dtype=np.float32)
        with one_blas_thread():
            assert _blas_threads() == 1
        assert _blas_threads() == 1  # the outer block still holds it
    assert _blas_threads() >= 2
    assert product.tolist() == [[8.0] * 3] * 4


@pytest.mark.usefixtures("two_blas_threads")
def test_blocks_in_threads_take_turns_and_give_the_threads_back() -> None:
    start = threading.Barrier(4)
    seen: list[int] = []
    inside: list[str] = []

    def search(name: str) -> None:
        start.wait()
        for _ in range(20):
            with one_blas_thread():
                inside.append(name)
                seen.append(_blas_threads())
                assert inside == [name]  # no other block runs meanwhile
                inside.remove(name)

    workers = [threading.Thread(target=search, args=(f"t{i}",)) for i in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)
    assert seen == [1] * 80
    assert _blas_threads() >= 2  # set and restored from worker threads


@pytest.mark.usefixtures("two_blas_threads")
def test_an_error_inside_gives_the_threads_back() -> None:
    def fail() -> None:
        with one_blas_thread():
            msg = "boom"
            raise ValueError(msg)

    with pytest.raises(ValueError, match="boom"):
        fail()
    assert _blas_threads() >= 2


@pytest.mark.parametrize("rows", [0, 1, 4_095, 4_096 * 2 + 7, 30_001])
def test_row_product_equals_the_whole_product(rows: int) -> None:
    from cogito_lc._core.blas import row_product

    generator = np.random.default_rng(rows)
    matrix = generator.standard_normal((rows, 16)).astype(np.float32)
    queries = generator.standard_normal((3, 16)).astype(np.float32)
    product = row_product(queries, matrix)
    assert product.shape == (3, rows)
    np.testing.assert_allclose(product, queries @ matrix.T, rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_row_product_works_in_a_forked_child_after_the_parent_used_it() -> None:
    from cogito_lc._core.blas import row_product

    matrix = np.ones((20_000, 8), dtype=np.float32)
    queries = np.ones((2, 8), dtype=np.float32)
    assert float(row_product(queries, matrix).sum()) == 2 * 20_000 * 8  # the parent's pool
    context = multiprocessing.get_context("fork")
    answers = context.Queue()
    child = context.Process(target=lambda: answers.put(float(row_product(queries, matrix).sum())))
    child.start()
    try:
        assert answers.get(timeout=60) == 2 * 20_000 * 8  # no pool threads in the child
    finally:
        child.join(10)
        if child.is_alive():
            child.kill()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
@pytest.mark.usefixtures("two_blas_threads")
def test_a_fork_waits_for_a_block_under_way_and_the_child_gets_its_threads() -> None:
    entered, leave = threading.Event(), threading.Event()

    def hold() -> None:
        with one_blas_thread():
            entered.set()
            leave.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    entered.wait(10)
    threading.Timer(0.3, leave.set).start()  # the fork below waits until the block ends

    def child_reports(answers: Any) -> None:
        with one_blas_thread():  # a lock held in the parent would hang here
            pass
        answers.put(_blas_threads())

    context = multiprocessing.get_context("fork")
    answers = context.Queue()
    child = context.Process(target=child_reports, args=(answers,))
    child.start()
    holder.join(10)
    try:
        assert answers.get(timeout=60) >= 2  # not forked inside the block
    finally:
        child.join(10)
        if child.is_alive():
            child.kill()
