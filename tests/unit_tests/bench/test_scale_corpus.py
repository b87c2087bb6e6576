"""ScaleCorpus and HashEmbeddings: distinct, deterministic texts and vectors for the scale run."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import pytest

from cogito_lc.bench.hash_embeddings import HashEmbeddings
from cogito_lc.bench.scale import CaseSpec
from cogito_lc.bench.scale_corpus import ScaleCorpus
from tests.unit_tests.bench.locomo_sample import write_locomo_sample


@pytest.fixture
def corpus(tmp_path: Path) -> ScaleCorpus:
    return ScaleCorpus.from_file(write_locomo_sample(tmp_path / "locomo.json"))


def test_texts_are_distinct_far_beyond_the_data_set(corpus: ScaleCorpus) -> None:
    count = 50 * len(corpus.bases)
    texts = list(itertools.islice(corpus.texts(), count))
    assert len(set(texts)) == count
    assert texts[0] == "Ana0 (1 May, 2023): Guess what, I adopted a cat named Miso last week!"
    assert all(text.strip() for text in texts)


def test_texts_are_the_same_on_every_run(corpus: ScaleCorpus, tmp_path: Path) -> None:
    again = ScaleCorpus.from_file(write_locomo_sample(tmp_path / "again.json"))
    assert list(itertools.islice(corpus.texts(), 500)) == list(itertools.islice(again.texts(), 500))


def test_composed_texts_reuse_the_data_sets_words(corpus: ScaleCorpus) -> None:
    composed = list(itertools.islice(corpus.texts(), 3 * len(corpus.bases)))[len(corpus.bases) :]
    assert all(any(base.text in text for base in corpus.bases) for text in composed)


def test_queries_skip_category_5_and_spread_evenly(corpus: ScaleCorpus) -> None:
    assert "An unanswerable one?" not in corpus.questions
    assert len(corpus.questions) == 12
    assert corpus.queries(3) == [corpus.questions[0], corpus.questions[4], corpus.questions[8]]
    assert corpus.queries(100) == corpus.questions
    assert corpus.queries(0) == []


def test_a_file_that_is_not_locomo_names_the_problem(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"not": "a list"}))
    with pytest.raises(ValueError, match="not a LoCoMo file"):
        ScaleCorpus.from_file(path)
    path.write_text(json.dumps([{"conversation": {}, "qa": []}]))
    with pytest.raises(ValueError, match="no text"):
        ScaleCorpus.from_file(path)


def test_hash_embeddings_are_deterministic_unit_vectors() -> None:
    embeddings = HashEmbeddings(size=384)
    first, second = embeddings.embed_documents(["Miso the cat", "Miso the cat"])
    assert first == second == HashEmbeddings(size=384).embed_query("Miso the cat")
    assert len(first) == 384
    assert math.isclose(math.sqrt(sum(x * x for x in first)), 1.0, rel_tol=1e-5)
    assert math.isclose(math.sqrt(sum(x * x for x in embeddings.embed_query("!!"))), 1.0)
    with pytest.raises(ValueError, match="size must be >= 8"):
        HashEmbeddings(size=4)


def test_spread_layout_splits_the_memories_over_the_scopes() -> None:
    spec = CaseSpec(
        "d", "dir", memories=1_005, layout="spread", scopes=100, queries=1, embeddings="hash"
    )
    blocks = spec.blocks()
    assert len(blocks) == 100
    assert blocks[0][0] == "user-000"
    assert sum(count for _, count in blocks) == 1_005
    assert {count for _, count in blocks} == {10, 11}
    one = CaseSpec(
        "d", "dir", memories=1_005, layout="one", scopes=100, queries=1, embeddings="hash"
    )
    assert one.blocks() == [("user-000", 1_005)]
