"""A recall's forward pass leaves a core for the database work running beside it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from langchain_chroma import Chroma
from langchain_core.embeddings import Embeddings

from cogito_lc import MemoryStore, RecallB
from cogito_lc.embeddings.threads import LATENCY_TEXTS, leaving_a_core
from cogito_lc.retrievers._subquery_vectors import embed_with_plan, plan_subqueries
from tests.integration_tests.conftest_pg import closed_after_test

NOTES = ["The billing service listens on port 8083.", "Deploys run on Tuesdays."]
QUERY = "which port does billing listen on?"


@pytest.fixture
def two_threads() -> Iterator[None]:
    """At least two torch threads in this thread, whatever the machine has."""
    before = torch.get_num_threads()
    torch.set_num_threads(max(2, before))
    yield
    torch.set_num_threads(before)


@pytest.fixture
def threads_seen(minilm: Embeddings) -> Iterator[list[int]]:
    """The torch threads of each forward pass of the local model, in order."""
    seen: list[int] = []
    first_module = minilm._client[0]  # type: ignore[attr-defined]
    hook = first_module.register_forward_pre_hook(
        lambda _module, _args: seen.append(torch.get_num_threads())
    )
    yield seen
    hook.remove()


@pytest.mark.usefixtures("two_threads")
def test_a_spare_core_is_left_by_short_calls_only(
    minilm: Embeddings, threads_seen: list[int]
) -> None:
    every = torch.get_num_threads()
    plan = plan_subqueries(minilm)
    assert plan.mode == "span"
    threads_seen.clear()
    embed_with_plan(plan, minilm, [QUERY, "billing", "port"], spare_core=True)
    embed_with_plan(plan, minilm, [QUERY, "billing", "port"])
    batch = [f"query {i}" for i in range(LATENCY_TEXTS + 1)]
    embed_with_plan(plan, minilm, batch, spare_core=True)
    minilm.embed_query(QUERY)
    assert threads_seen == [every - 1, every, every, every]
    assert torch.get_num_threads() == every


@pytest.mark.usefixtures("two_threads")
def test_only_a_recall_with_a_lexical_run_beside_its_forward_pass_spares_a_core(
    minilm: Embeddings, threads_seen: list[int], pg_url: str, pg_collection: str, tmp_path: Path
) -> None:
    every = torch.get_num_threads()
    postgres = closed_after_test(
        MemoryStore.from_database_url(pg_url, embeddings=minilm, collection=pg_collection)
    )
    chroma = MemoryStore(Chroma("notes", minilm, persist_directory=str(tmp_path)))
    no_lexical = {"corpus_bm25_weight": 0.0, "bm25_weight": 0.0, "lexical_blend_weight": 0.0}
    postgres.store_many(NOTES)
    chroma.store_many(NOTES)
    recalls = []
    for memory, fields in ((postgres, {}), (chroma, {}), (chroma, no_lexical)):
        recall = memory.as_retriever(k=1, **fields)
        assert isinstance(recall, RecallB)
        recall.invoke(QUERY)  # the sub-query plan is probed once
        recalls.append(recall)
    threads_seen.clear()
    for recall in recalls:
        assert "8083" in recall.invoke(QUERY)[0].page_content
    assert threads_seen == [every - 1, every - 1, every]


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


def test_overlapping_calls_never_lower_the_count_for_good() -> None:
    before = torch.get_num_threads()
    torch.set_num_threads(4)  # enough to see a count lowered twice
    a_inside, b_inside, a_left = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, int] = {}

    def first() -> None:
        with leaving_a_core(1):
            seen["a"] = torch.get_num_threads()
            a_inside.set()
            b_inside.wait(5.0)
        a_left.set()

    def second() -> None:  # its first torch call falls inside the first call
        with leaving_a_core(1):
            seen["b"] = torch.get_num_threads()
            b_inside.set()
            a_left.wait(5.0)  # it leaves last

    try:
        a = threading.Thread(target=first)
        a.start()
        a_inside.wait(5.0)
        b = threading.Thread(target=second)
        b.start()
        a.join(5.0)
        b.join(5.0)
        fresh: list[int] = []
        newcomer = threading.Thread(target=lambda: fresh.append(torch.get_num_threads()))
        newcomer.start()
        newcomer.join()
        after = torch.get_num_threads()
    finally:
        torch.set_num_threads(before)
    assert seen == {"a": 3, "b": 3}
    assert fresh == [4]
    assert after == 4


def test_one_thread_stays_one() -> None:
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    seen: list[int] = []
    try:
        with leaving_a_core(1):
            seen.append(torch.get_num_threads())
    finally:
        torch.set_num_threads(before)
    assert seen == [1]
