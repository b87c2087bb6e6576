"""Short embedding calls leave a core for the database work running beside them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import torch
from langchain_core.embeddings import Embeddings

from cogito_lc.embeddings.threads import LATENCY_TEXTS, leaving_a_core
from cogito_lc.retrievers._subquery_vectors import embed_with_plan, plan_subqueries


@pytest.fixture
def two_threads() -> Iterator[None]:
    """At least two torch threads in this thread, whatever the machine has."""
    before = torch.get_num_threads()
    torch.set_num_threads(max(2, before))
    yield
    torch.set_num_threads(before)


@pytest.mark.usefixtures("two_threads")
def test_short_calls_run_on_one_thread_fewer_and_batches_on_all(minilm: Embeddings) -> None:
    every = torch.get_num_threads()
    plan = plan_subqueries(minilm)
    assert plan.mode == "span"
    seen: list[int] = []
    first_module = minilm._client[0]  # type: ignore[attr-defined]
    hook = first_module.register_forward_pre_hook(
        lambda _module, _args: seen.append(torch.get_num_threads())
    )
    try:
        minilm.embed_query("which port does billing listen on?")
        minilm.embed_documents(["billing", "port"])
        minilm.embed_documents([f"memory {i}" for i in range(LATENCY_TEXTS + 1)])
        queries = ["which port does billing listen on?", "billing", "port"]
        embed_with_plan(plan, minilm, queries)
    finally:
        hook.remove()
    assert seen == [every - 1, every - 1, every, every - 1]
    assert torch.get_num_threads() == every


@pytest.mark.usefixtures("two_threads")
def test_the_thread_count_is_put_back_after_a_failed_call() -> None:
    every = torch.get_num_threads()
    inside: list[int] = []

    def failing_call() -> None:
        with leaving_a_core(1):
            inside.append(torch.get_num_threads())
            msg = "forward failed"
            raise RuntimeError(msg)

    with pytest.raises(RuntimeError, match="forward failed"):
        failing_call()
    assert inside == [every - 1]
    assert torch.get_num_threads() == every


def test_one_thread_stays_one() -> None:
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    seen: list[Any] = []
    try:
        with leaving_a_core(1):
            seen.append(torch.get_num_threads())
    finally:
        torch.set_num_threads(before)
    assert seen == [1]
