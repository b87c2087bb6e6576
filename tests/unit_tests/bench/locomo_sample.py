"""A small LoCoMo-shaped data set for the benchmark tests (the real split is not in the repo)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

_TOPICS = [
    ("adopted a cat named Miso", "How is Miso settling in?"),
    ("started a pottery class on Tuesdays", "What did you make in pottery?"),
    ("ran a half marathon in the rain", "What was your time in the half marathon?"),
    ("moved to a flat near the river", "Do you like the new flat?"),
    ("began learning Portuguese for a trip to Lisbon", "When do you leave for Lisbon?"),
    ("volunteered at the food bank with her sister", "How often do you volunteer?"),
]


def locomo_sample(conversations: int = 2) -> list[dict[str, Any]]:
    samples = []
    for c in range(conversations):
        a, b = f"Ana{c}", f"Ben{c}"
        conversation: dict[str, Any] = {"speaker_a": a, "speaker_b": b}
        observation: dict[str, Any] = {}
        qa = []
        for s, (event, question) in enumerate(_TOPICS, start=1):
            conversation[f"session_{s}_date_time"] = f"1:00 pm on {s} May, 2023"
            conversation[f"session_{s}"] = [
                {"speaker": a, "dia_id": f"D{s}:1", "text": f"Guess what, I {event} last week!"},
                {"speaker": b, "dia_id": f"D{s}:2", "text": f"That is great news, {a}. {question}"},
            ]
            observation[f"session_{s}_observation"] = {
                a: [[f"{a} {event}.", f"D{s}:1"]],
                b: [[f"{b} asked {a} a follow-up question about it.", f"D{s}:2"]],
            }
            qa.append({"question": f"What did {a} do in session {s}?", "category": 1})
        qa.append({"question": "An unanswerable one?", "category": 5})
        samples.append({"conversation": conversation, "observation": observation, "qa": qa})
    return samples


def write_locomo_sample(path: Path, conversations: int = 2) -> Path:
    path.write_text(json.dumps(locomo_sample(conversations)))
    return path
