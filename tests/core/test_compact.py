"""A compact answer (codemem/compact.py), as the MCP tool and `codemem search` give it: several
experiences in brief within a small budget, each with the evidence that matched best, and what
was left out named."""

from __future__ import annotations

import re

from codemem import compact
from codemem.contract.types import Hit
from codemem.ranking.answer import EVIDENCE_HEADING
from integrations import mcp_text

DIFF = "".join(f"+    cache_line_{i} = compute_the_cache_entry({i})\n" for i in range(120))


def _experience(n: int, relevance: float = 0.9) -> Hit:
    card = (f"## Task\nFix cache eviction bug number {n} in cache/store.py\n\n## Outcome\nCommit {n:07x} by Dev\n\n"
            f"## Edited\nfiles: cache/store.py\nsymbols: Store.evict\n\n## Tests\nlast run passed\n\n"
            f"## Final diff\n```diff\n{DIFF}```")
    evidence = f"[step: edit, assistant, position {n}]\ncache/store.py (modified)\n" + DIFF
    return Hit(id=f"c_{n:03d}", content=f"{card}\n\n{EVIDENCE_HEADING}\n\n{evidence}", score=1 - n / 100,
               created_at="2026-01-01T00:00:00.000Z", session_id=f"git:{n:040x}",
               metadata={"kind": "card", "relevance": relevance})


def _answer(hits: list[Hit], top_k: int, budget: int, asked: int | None = None) -> compact.CompactAnswer:
    return compact.compact(hits, top_k, budget, lambda item: mcp_text.brief_block(item, 1), asked, 0.42)


def test_a_default_budget_shows_several_experiences_each_with_its_matched_evidence() -> None:
    hits = [_experience(n) for n in range(8)]
    answer = _answer(hits, 5, 1500, 15)
    text = mcp_text.search_answer(answer, "repo:x", 1500)
    assert len(answer.shown) >= 3
    assert len(text) / 4 <= 1500  # the whole answer, head and list of what was left out included
    blocks = re.findall(r"<experience rank=\"\d\" id=\"(c_\d+)\".*?</experience>", text, re.S)
    assert blocks == [f"c_{n:03d}" for n in range(len(answer.shown))]  # best first
    for item in answer.shown:
        assert item.card.startswith("## Task\nFix cache eviction bug") and "files: cache/store.py" in item.card
        assert "## Final diff" not in item.card  # the card cut to what a reader acts on
        assert item.label.startswith("step: edit") and "compute_the_cache_entry" in item.evidence
    assert text.count("Matched evidence (step: edit") == len(answer.shown)
    left = [h.id for h in answer.left_out]
    assert left == [f"c_{n:03d}" for n in range(len(answer.shown), 8)]
    assert f"Left out, to stay within max_tokens=1,500: {len(left)} more experience" in text
    assert all(f"- {i}: Fix cache eviction bug" in text for i in left)
    assert "get_experience(id)" in text and "larger max_tokens" in text


def test_a_larger_budget_shows_more_experiences_and_more_of_each() -> None:
    hits = [_experience(n) for n in range(10)]
    small, large = _answer(hits, 8, 1500), _answer(hits, 8, 10_000)
    assert len(large.shown) == 8 > len(small.shown)
    assert len(large.shown[0].evidence) > len(small.shown[0].evidence)
    assert large.more and [h.id for h in large.left_out] == ["c_008", "c_009"]


def test_the_first_experience_comes_whatever_the_budget_and_loose_evidence_is_left_aside() -> None:
    loose = Hit(id="m_1", content="a message", score=0.1, created_at="2026-01-01T00:00:00.000Z",
                session_id="s", metadata={"kind": "message"})
    answer = _answer([_experience(0), loose], 5, 200)
    assert [b.hit.id for b in answer.shown] == ["c_000"] and answer.left_out == []


def test_an_answer_says_when_no_experience_stands_out() -> None:
    unsure = _answer([_experience(n, relevance=0.2) for n in range(3)], 5, 1500)
    assert unsure.quiet and "None stands out" in mcp_text.search_answer(unsure, "u", 1500)
    assert not _answer([_experience(0)], 5, 1500).quiet
