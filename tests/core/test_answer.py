"""Building a Search answer from ranked experiences, with a fake store: no model, no disk."""

from __future__ import annotations

import dataclasses

from codemem.ranking.answer import build
from codemem.ranking.assemble import FoundExperience
from codemem.ranking.recipes import DEFAULT_SEARCH
from codemem.ranking.types import Candidate


def _row(item_id: str, kind: str, text: str, session: str = "s1") -> dict[str, object]:
    return {"id": item_id, "user_id": "u", "session_id": session, "session_key": "k-" + session, "kind": kind,
            "position": 0, "role": "user", "text": text, "content": "", "metadata": "",
            "created_at": 1_700_000_000_000, "timestamp": 1_700_000_000_000}


class FakeStore:
    def __init__(self, rows: list[dict[str, object]]) -> None:
        self.rows = {str(r["id"]): r for r in rows}
        self.reads: list[list[str]] = []

    def read(self, ids: list[str]) -> list[Candidate]:
        self.reads.append(ids)
        return [Candidate(i, 0.0, self.rows[i]) for i in ids if i in self.rows]


def _experience(session: str, n_evidence: int, score: float) -> tuple[FoundExperience, list[dict[str, object]]]:
    card = _row(f"c-{session}", "card", f"## Task\nwork on {session}", session)
    evidence = [_row(f"m-{session}-{j}", "message", f"message {j} of {session}", session) for j in range(n_evidence)]
    group = FoundExperience("k-" + session, score, Candidate(str(card["id"]), 0.0, card),
                  [Candidate(str(r["id"]), 0.0, r) for r in evidence])
    return group, [card, *evidence]


SHAPE = dataclasses.replace(DEFAULT_SEARCH.answer, budget_tokens=0, first_evidence_items=2, evidence_items=1)


def test_one_read_fetches_cards_inlined_and_loose_evidence() -> None:
    g1, rows1 = _experience("a", 5, 0.9)
    g2, rows2 = _experience("b", 3, 0.5)
    store = FakeStore(rows1 + rows2)
    hits = build([g1, g2], store.read, "u", 100, SHAPE)
    assert len(store.reads) == 1
    # Each experience inlines at most its allotment of evidence items; the rest follow, loose.
    assert [h.metadata["kind"] for h in hits[:2]] == ["card", "card"]
    assert hits[0].metadata["evidence"] == ["m-a-0", "m-a-1"] and hits[1].metadata["evidence"] == ["m-b-0"]
    assert [h.id for h in hits[2:]] == ["m-a-2", "m-a-3", "m-a-4", "m-b-1", "m-b-2"]


def test_one_read_whatever_top_k_and_items_gone_from_the_store_are_skipped() -> None:
    g1, rows1 = _experience("a", 12, 0.9)
    store = FakeStore(rows1)
    for top_k in (1, 6, 13, 100):
        store.reads.clear()
        hits = build([g1], store.read, "u", top_k, SHAPE)
        assert len(hits) == min(top_k, 11) and len(store.reads) == 1  # 1 card (2 inlined) + 10 loose
    del store.rows["m-a-0"], store.rows["m-a-5"]  # deleted between ranking and reading
    hits = build([g1], store.read, "u", 100, SHAPE)
    assert hits[0].metadata["evidence"] == ["m-a-1"]
    assert "m-a-5" not in [h.id for h in hits] and len(hits) == 10


def test_evidence_already_said_is_not_repeated() -> None:
    g1, rows1 = _experience("a", 3, 0.9)
    rows1[2]["text"] = "  " + str(rows1[1]["text"]).replace(" ", "\n")  # the same words, other whitespace
    rows1[3]["text"] = "see: " + str(rows1[1]["text"]) + " and more"  # quotes the first
    store = FakeStore(rows1)
    hits = build([g1], store.read, "u", 100, SHAPE)
    text = " ".join(" ".join(str(h.content).split()) for h in hits)
    assert text.count("message 0 of a") == 2  # once as itself, once inside the item that quotes it
    assert [h.id for h in hits] == ["c-a", "m-a-2"]
    assert hits[0].metadata["evidence"] == ["m-a-0"]


def test_long_evidence_is_recognised_as_said_whatever_its_whitespace() -> None:
    g1, rows1 = _experience("a", 3, 0.9)
    words = " ".join(f"word{i}" for i in range(400))  # ~3.5k characters: longer than the head looked at first
    rows1[1]["text"] = words
    rows1[2]["text"] = "\n\n  " + words.replace(" ", " \t\n ", 37)  # the same words, other whitespace
    rows1[3]["text"] = words[:3000] + " but then a different ending"  # the same head only
    store = FakeStore(rows1)
    hits = build([g1], store.read, "u", 100, dataclasses.replace(SHAPE, first_evidence_items=3))
    assert hits[0].metadata["evidence"] == ["m-a-0", "m-a-2"]
