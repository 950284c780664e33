"""eval.quality.locomo's data reading and scoring, without a server (the pipeline end to end is in
test_pipelines_smoke.py)."""

from __future__ import annotations

from eval._paths import REPO_ROOT
from eval.quality.locomo import (
    LOCOMO,
    Question,
    Turn,
    chunks,
    load_conversation,
    score_answer,
    session_ms,
)
from tests.shared_data import require

LOCOMO_FIXTURE = REPO_ROOT / "tests" / "fixtures" / "locomo"  # synthetic, in LoCoMo's format


def _turn(dia_id: str, text: str) -> Turn:
    return Turn(dia_id, 1, "Ana", text, f"Ana: {text}", "user", 0)


def test_the_fixture_reads_as_the_track_would_send_it() -> None:
    conv = load_conversation(LOCOMO_FIXTURE / "conv-demo.json")
    assert list(conv.sessions()) == [1, 2]  # a date with no session is no session
    first = conv.turns[0]
    assert (first.role, first.content, first.timestamp) == (
        "user", "Ana: Guess what, we adopted a golden retriever puppy on Saturday!", session_ms("1:56 pm on 8 May, 2023"))
    assert conv.turns[1].role == "assistant"
    assert conv.turns[2].content.endswith("[shares an image: a photo of a puppy lying on a shoe]")
    assert [q.evidence for q in conv.questions] == [("D1:3",), ("D2:2",), ("D1:1", "D1:3")]  # "D1:1; D1:3" split


def test_chunks_hold_at_most_20_messages_or_2000_words() -> None:
    short = [_turn(f"D1:{i}", "hi") for i in range(45)]
    assert [len(c) for c in chunks(short)] == [20, 20, 5]
    long = [_turn(f"D1:{i}", "word " * 900) for i in range(3)]
    assert [len(c) for c in chunks(long)] == [2, 1]


def test_an_evidence_turn_counts_where_its_text_ends_in_the_answer() -> None:
    turns = {"D1:1": _turn("D1:1", "we adopted a puppy"), "D1:2": _turn("D1:2", "pottery on Tuesdays")}
    q = Question("c", 0, "?", 1, ("D1:1", "D1:2"))
    pad = "x" * 8_000  # 2,000 tokens
    s = score_answer("s", q, ["Ana: we  adopted\na puppy", pad, "pottery on Tuesdays"], turns, 1.0)
    assert s.found_at[0] == len("Ana: we  adopted\na puppy") / 4 and s.found_item == [1, 3]
    assert s.recall_within(2_000) == 0.5 and s.recall_within(8_000) == 1.0 and s.recall_items(2) == 0.5


def test_the_dev_conversations_resolve_their_evidence() -> None:
    folder = require(LOCOMO)
    counts = {}
    for name in ("conv-26", "conv-30", "conv-41"):
        conv = load_conversation(folder / f"{name}.json")
        known = {t.dia_id for t in conv.turns}
        assert all(e in known for q in conv.questions for e in q.evidence)
        counts[name] = len(conv.questions)
    assert counts == {"conv-26": 150, "conv-30": 81, "conv-41": 152}  # categories 1-4 with evidence
