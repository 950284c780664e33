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


SHAPE = dataclasses.replace(DEFAULT_SEARCH.answer, budget_tokens=0, first_evidence_items=2, short_card_chars=40)


def test_the_best_experience_carries_evidence_a_related_one_its_card_the_rest_short_cards() -> None:
    g1, rows1 = _experience("a", 5, 0.9)
    g2, rows2 = _experience("b", 3, 0.5)
    g3, rows3 = _experience("c", 3, 0.1)
    rows3[0]["text"] = "## Task\n" + "work on c, " * 40  # longer than a short card
    store = FakeStore(rows1 + rows2 + rows3)
    hits = build([g1, g2, g3], store.read, "u", 100, SHAPE, related={"k-a", "k-b"})
    assert len(store.reads) == 1
    assert [h.id for h in hits] == ["c-a", "c-b", "c-c"]  # no loose evidence after the experiences
    assert hits[0].metadata["evidence"] == ["m-a-0", "m-a-1"] and "message 1 of a" in str(hits[0].content)
    assert hits[1].metadata["evidence"] == [] and hits[1].content == rows2[0]["text"]  # whole card, no evidence
    assert len(str(hits[2].content)) <= 40 and hits[2].metadata["evidence"] == []  # short card
    assert [h.score for h in hits] == [0.9, 0.5, 0.1]


def test_one_read_whatever_top_k_and_items_gone_from_the_store_are_skipped() -> None:
    groups, rows = zip(*(_experience(s, 12, 1.0 - i / 10) for i, s in enumerate("abc")), strict=True)
    store = FakeStore([r for rs in rows for r in rs])
    for top_k in (1, 2, 13, 100):
        store.reads.clear()
        hits = build(list(groups), store.read, "u", top_k, SHAPE)
        assert len(hits) == min(top_k, 3) and len(store.reads) == 1
    del store.rows["m-a-0"], store.rows["c-b"]  # deleted between ranking and reading
    hits = build(list(groups), store.read, "u", 100, SHAPE)
    assert hits[0].metadata["evidence"] == ["m-a-1"] and [h.id for h in hits] == ["c-a", "c-c"]


def test_images_follow_the_experiences_as_their_own_items() -> None:
    g1, rows1 = _experience("a", 3, 0.9)
    rows1[2]["content"] = '[{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]'
    store = FakeStore(rows1)
    hits = build([g1], store.read, "u", 100, SHAPE)
    assert [h.id for h in hits] == ["c-a", "m-a-1"] and hits[0].metadata["evidence"] == ["m-a-0"]
    assert hits[1].score < hits[0].score and build([g1], store.read, "u", 1, SHAPE)[0].id == "c-a"


def test_evidence_already_said_is_not_repeated() -> None:
    g1, rows1 = _experience("a", 3, 0.9)
    rows1[2]["text"] = "  " + str(rows1[1]["text"]).replace(" ", "\n")  # the same words, other whitespace
    rows1[3]["text"] = "see: " + str(rows1[1]["text"]) + " and more"  # quotes the first
    store = FakeStore(rows1)
    hits = build([g1], store.read, "u", 100, dataclasses.replace(SHAPE, first_evidence_items=3))
    text = " ".join(" ".join(str(h.content).split()) for h in hits)
    assert text.count("message 0 of a") == 2  # once as itself, once inside the item that quotes it
    assert hits[0].metadata["evidence"] == ["m-a-0", "m-a-2"]


def test_long_evidence_is_recognised_as_said_whatever_its_whitespace() -> None:
    g1, rows1 = _experience("a", 3, 0.9)
    words = " ".join(f"word{i}" for i in range(400))  # ~3.5k characters: longer than the head looked at first
    rows1[1]["text"] = words
    rows1[2]["text"] = "\n\n  " + words.replace(" ", " \t\n ", 37)  # the same words, other whitespace
    rows1[3]["text"] = words[:3000] + " but then a different ending"  # the same head only
    store = FakeStore(rows1)
    hits = build([g1], store.read, "u", 100, dataclasses.replace(SHAPE, first_evidence_items=3))
    assert hits[0].metadata["evidence"] == ["m-a-0", "m-a-2"]
