from __future__ import annotations

from langchain_chroma import Chroma
from langchain_core.documents import Document

from cogito_lc import RecallB
from cogito_lc.stores import ChromaAdapter
from cogito_lc.stores.bm25s_index import Bm25Index, ChromaBm25Source


def test_bm25_index_ranks_rare_words_and_drops_zero_scores() -> None:
    index = Bm25Index(
        [
            Document(page_content="billing runs on port 8083", id="port"),
            Document(page_content="billing invoices are monthly", id="invoices"),
            Document(page_content="search latency budget", id="latency"),
        ]
    )
    assert [d.id for d in index.search("billing port 8083", k=5)] == ["port", "invoices"]
    assert index.search("the of and", k=5) == []
    hits = index.hits("8083")
    assert hits.score("port") > 0
    assert hits.score("latency") == 0
    assert hits.score("not-indexed") == 0


def test_empty_index_finds_nothing() -> None:
    assert Bm25Index([]).search("anything", k=3) == []


def test_chroma_source_rebuilds_after_a_write(chroma: Chroma) -> None:
    chroma.add_texts(["alpha memory"], ids=["a"])
    source = ChromaBm25Source(ChromaAdapter(chroma), refresh_interval=0.0)
    assert [d.id for d in source.index_for().search("beta", k=3)] == []
    chroma.add_texts(["beta memory"], ids=["b"])
    assert [d.id for d in source.index_for().search("beta", k=3)] == ["b"]


def test_chroma_source_applies_the_filter(chroma: Chroma) -> None:
    chroma.add_texts(
        ["shared word alice", "shared word bob"],
        ids=["a", "b"],
        metadatas=[{"user_id": "alice"}, {"user_id": "bob"}],
    )
    source = ChromaBm25Source(ChromaAdapter(chroma))
    found = source.index_for({"user_id": "bob"}).search("shared word", k=5)
    assert [d.id for d in found] == ["b"]


def test_refresh_lexical_index_sees_a_write_at_once(chroma: Chroma) -> None:
    chroma.add_texts(["Routine planning note."], ids=["n0"])
    retriever = RecallB(
        vectorstore=chroma, original_weight=0, fragment_weight=0, bm25_weight=0, cosine_weight=0
    )
    retriever.invoke("warm the index")
    chroma.add_texts(["Error code E4711 means the ledger lock timed out."], ids=["rare"])
    retriever.refresh_lexical_index()
    assert retriever.invoke("E4711")[0].id == "rare"
