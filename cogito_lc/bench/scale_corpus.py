"""Realistic, distinct memory texts and queries for the scale benchmark, built from LoCoMo.

The LoCoMo development split holds about 5,000 memory-like texts (dialogue turns,
observations, event and session summaries). :class:`ScaleCorpus` yields them first,
each framed with its speaker and date, then composes as many more as asked for,
deterministically: the same base text in another frame (who said it, when), followed
by a sentence taken from elsewhere in the data. Every yielded text is distinct, so
each is one memory (MemoryStore ids are hashes of scope and text). Queries are the
LoCoMo questions (category 5, the unanswerable ones, left out).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["BaseText", "ScaleCorpus"]

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_EXCLUDED_CATEGORY = 5
_MIN_SENTENCE_CHARS = 20

_FRAMES = (
    "{speaker} said on {date}: {text}",
    "Note from {date} about {speaker}: {text}",
    "{speaker}, {date}: {text}",
    "In a chat on {date}, {speaker} brought this up: {text}",
    "Remember ({speaker}, {date}): {text}",
    "From the conversation with {speaker} on {date}: {text}",
    "{date}. {speaker}: {text}",
    "Memory about {speaker} ({date}): {text}",
)
"""Wordings a composed memory is framed in (round 1 onwards)."""


@dataclass(frozen=True)
class BaseText:
    """One text of the data set with who it is about and when it was said."""

    text: str
    speaker: str
    date: str

    def canonical(self) -> str:
        """The text as first stored: a turn or fact with its speaker and date."""
        return f"{self.speaker} ({self.date}): {self.text}"


class ScaleCorpus:
    """Memory texts and questions of a LoCoMo file, as many distinct texts as asked for.

    Example:
        ```python
        import itertools
        import json
        import tempfile
        from pathlib import Path

        from cogito_lc.bench.scale_corpus import ScaleCorpus

        sample = {
            "conversation": {
                "speaker_a": "Ana",
                "speaker_b": "Ben",
                "session_1_date_time": "1:00 pm on 2 May, 2023",
                "session_1": [
                    {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a cat named Miso."},
                    {"speaker": "Ben", "dia_id": "D1:2", "text": "Miso is a lovely name!"},
                ],
            },
            "observation": {},
            "qa": [{"question": "What is Ana's cat called?", "category": 1}],
        }
        path = Path(tempfile.mkdtemp()) / "locomo.json"
        path.write_text(json.dumps([sample]))
        corpus = ScaleCorpus.from_file(path)
        texts = list(itertools.islice(corpus.texts(), 50))
        assert len(set(texts)) == 50
        assert corpus.queries(1) == ["What is Ana's cat called?"]
        ```
    """

    def __init__(self, bases: list[BaseText], questions: list[str]) -> None:
        if not bases:
            msg = "the data set holds no text to build memories from; pass a LoCoMo file."
            raise ValueError(msg)
        self.bases = bases
        self.questions = questions
        self.sentences = sorted(
            {
                sentence
                for base in bases
                for sentence in _SENTENCE_END.split(base.text)
                if len(sentence) >= _MIN_SENTENCE_CHARS
            }
        ) or [base.text for base in bases]

    @classmethod
    def from_file(cls, path: str | Path) -> ScaleCorpus:
        """Read a LoCoMo JSON file (a list of conversations).

        Raises:
            ValueError: If the file is not a list of LoCoMo conversations.
        """
        samples = json.loads(Path(path).read_text(encoding="utf-8"))
        if not isinstance(samples, list) or not all(isinstance(s, dict) for s in samples):
            msg = f"{path} is not a LoCoMo file (a JSON list of conversations)."
            raise ValueError(msg)
        bases: list[BaseText] = []
        questions: list[str] = []
        for sample in samples:
            bases.extend(_sample_texts(sample))
            questions.extend(
                str(qa["question"])
                for qa in sample.get("qa", [])
                if qa.get("category") != _EXCLUDED_CATEGORY and qa.get("question")
            )
        return cls(bases, questions)

    def texts(self) -> Iterator[str]:
        """Distinct memory texts without end: the data set's own first, then composed ones."""
        return (text for text, _ in self.entries())

    def entries(self) -> Iterator[tuple[str, int]]:
        """The texts of :meth:`texts`, each with the index in :attr:`bases` it was built from."""
        seen: set[int] = set()
        index = 0
        while True:
            text = self._compose(index, extra=0)
            extra = 1
            while (digest := _digest(text)) in seen:
                text = self._compose(index, extra=extra)
                extra += 1
            seen.add(digest)
            yield text, index % len(self.bases)
            index += 1

    def queries(self, count: int) -> list[str]:
        """``count`` questions spread evenly over the data set (all of them if fewer)."""
        if count <= 0 or not self.questions:
            return []
        if count >= len(self.questions):
            return list(self.questions)
        step = len(self.questions) / count
        return [self.questions[int(i * step)] for i in range(count)]

    def _compose(self, index: int, *, extra: int) -> str:
        base = self.bases[index % len(self.bases)]
        round_ = index // len(self.bases)
        if round_ == 0 and extra == 0:
            return base.canonical()
        pick = _digest(f"{index}/{extra}")
        date = self.bases[pick % len(self.bases)].date
        frame = _FRAMES[(round_ + index) % len(_FRAMES)]
        companions = [
            self.sentences[_digest(f"{index}/{extra}/{n}") % len(self.sentences)]
            for n in range(1 + extra)
        ]
        framed = frame.format(speaker=base.speaker, date=date, text=base.text)
        return " ".join([framed, *companions])


def _digest(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


def _sample_texts(sample: dict[str, Any]) -> list[BaseText]:
    conversation = sample.get("conversation", {})
    dates = {
        key.removesuffix("_date_time"): str(value)
        for key, value in conversation.items()
        if key.endswith("_date_time")
    }
    texts: list[BaseText] = []
    for key, turns in conversation.items():
        if key.startswith("session_") and isinstance(turns, list):
            date = _day(dates.get(key, ""))
            texts.extend(BaseText(str(t["text"]), str(t["speaker"]), date) for t in turns)
    for session, speakers in sample.get("observation", {}).items():
        date = _day(dates.get(session.removesuffix("_observation"), ""))
        for speaker, facts in speakers.items():
            texts.extend(BaseText(str(fact[0]), speaker, date) for fact in facts)
    for events in sample.get("event_summary", {}).values():
        date = str(events.get("date", ""))
        for speaker, items in events.items():
            if speaker != "date" and isinstance(items, list):
                texts.extend(BaseText(str(item), speaker, date) for item in items)
    return [t for t in texts if t.text.strip()]


def _day(date_time: str) -> str:
    """``1:56 pm on 8 May, 2023`` -> ``8 May, 2023``."""
    return date_time.split(" on ", 1)[-1]
