"""The knowledge-update benchmark at a small size: real MiniLM embeddings, embedded Chroma."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.embeddings import Embeddings
from typer.testing import CliRunner

from cogito_lc.bench import knowledge_update as ku
from cogito_lc.cli.app import app

CONVERSATIONS = 10
READ_PATHS = {
    "search",
    "search_include_superseded",
    "search_as_of",
    "recall_b",
    "recall_b_include_superseded",
    "recall_b_as_of",
    "list",
    "get",
    "history",
}


def _check_rates(group: dict[str, float]) -> None:
    for name, value in group.items():
        if name not in {"n", "leaked_questions"}:
            assert 0.0 <= value <= 1.0, name


def test_zero_llm_run_reports_every_figure_and_forgets_completely(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_BASE_URL", "COGITO_FILTER_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    out = tmp_path / "results" / "updates.json"
    args = ["bench", "updates", "--conversations", str(CONVERSATIONS), "--out", str(out)]
    done = CliRunner().invoke(app, [*args, "--mode", "zero_llm", "--mode", "openai"])
    assert done.exit_code == 0, done.output
    report = json.loads(out.read_text())
    conversations = ku.generate_conversations(CONVERSATIONS)
    questions = [q for c in conversations for q in c.questions]
    assert report["settings"]["conversations"] == CONVERSATIONS
    assert report["settings"]["questions"] == len(questions)
    assert report["modes"]["openai"]["skipped"].startswith("no OpenAI-compatible endpoint")
    result = report["modes"]["zero_llm"]
    assert result["conversations"] == CONVERSATIONS
    assert set(result["retrieval"]) == {"recall_b", "search"}
    for summary in result["retrieval"].values():
        assert set(summary) == {"current_cue", "current_plain", "current", "past", "forget"}
        for qtype in ("current_cue", "current_plain", "past", "forget"):
            assert summary[qtype]["n"] == sum(q.qtype == qtype for q in questions)
            _check_rates(summary[qtype])
        assert summary["current"]["n"] == summary["current_cue"]["n"] * 2
    writes = result["writes"]
    assert writes["writes"] == sum(t.role != "forget" for c in conversations for t in c.turns)
    assert 0 < writes["p50_ms"] <= writes["p95_ms"]
    assert writes["model_calls"] == 0
    assert writes["superseded"] == 0  # no judge: nothing is marked superseded
    forget = result["forget"]
    requests = sum(c.forget_request is not None for c in conversations)
    assert forget["requests"] == requests > 0
    assert forget["recognised"] + forget["forgotten_by_ids"] == requests
    assert forget["errors"] == 0
    assert forget["forgotten_memories"] > 0
    assert forget["compliance"] == 0
    assert set(forget["compliance_by_path"]) == READ_PATHS
    assert all(count == 0 for count in forget["compliance_by_path"].values())
    current_kinds = {c.kind for c in conversations if c.forget_request is None}
    assert set(result["by_kind"]["recall_b"]) == current_kinds
    assert result["seconds"]["write"] > 0
    tables = out.with_suffix(".md").read_text()
    assert f"| zero_llm | recall_b | {CONVERSATIONS} |" in tables
    assert "`openai` skipped" in tables
    assert "| mode | forget requests |" in done.output


def test_stores_built_once_score_any_recall_b_configuration(minilm: Embeddings) -> None:
    conversations = ku.generate_conversations(8, seed=3)
    asked = [q for c in conversations for q in c.questions]
    with ku.build_evaluation(conversations, embeddings=minilm) as evaluation:
        defaults = evaluation.score()
        assert [h.qid for h in defaults] == [q.qid for q in asked]
        assert all(h.returned <= 3 for h in evaluation.score({"k": 3}, k=3))
        # past questions read as_of: no memory written after that time comes back
        for conversation in conversations:
            past = next((q for q in conversation.questions if q.qtype == "past"), None)
            if past is None:
                continue
            docs = evaluation.retriever(conversation).invoke(past.text, as_of=past.as_of)
            later = {t.text for t in conversation.turns if past.as_of and t.created_at > past.as_of}
            assert docs
            assert not {d.page_content for d in docs} & later
        search = evaluation.score_search()
        assert {h.read for h in search} == {"search"}
        assert len(search) == len(defaults)
        cv = ku.cross_validate(evaluation, [{}, {"cosine_weight": 0.8}], folds=2)
        assert len(cv.chosen) == 2
        assert sorted(h.qid for h in cv.held_out) == sorted(q.qid for q in asked)
        checks = evaluation.check_forgets()
        assert len(checks) == sum(c.forget_request is not None for c in conversations)
        assert all(check.returned_forgotten_any == 0 for check in checks)
        assert all(set(check.returned_forgotten) == READ_PATHS for check in checks)
