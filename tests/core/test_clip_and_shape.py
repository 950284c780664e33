"""An answer fits a reader's window: long items cut, the list bounded by a budget."""

import msgspec

from codemem.clip import clip, clip_middle
from codemem.contract.types import AddRequest, Message, SearchRequest
from codemem.memory import Memory
from codemem.ranking.shape import within_budget


def test_clip_middle_keeps_head_and_tail_and_says_what_it_left_out() -> None:
    text = "HEAD " + "x" * 10_000 + " TAIL"
    cut, omitted = clip_middle(text, 600)
    assert cut.startswith("HEAD ") and cut.endswith(" TAIL")
    assert omitted == len(text) - 600
    assert f"[... {omitted} characters omitted ...]" in cut
    assert clip_middle("short", 600) == ("short", 0)
    assert clip_middle(text, 0) == (text, 0)  # 0 = no limit


def test_clip_keeps_the_head_within_the_limit_and_ends_at_a_whole_word() -> None:
    assert clip("short", 10) == "short"
    assert clip("abcdefghij" * 3, 10) == "abcdefg..."  # no break asked for: cut where the room ends
    words = "alpha beta gamma delta epsilon"
    assert clip(words, 23, " ...", break_at=" ") == "alpha beta gamma ..."
    lines = "one\ntwo\nthree\nfour"
    assert clip(lines, 12, "\n...", break_at="\n") == "one\ntwo\n..."
    # A break that would keep half the limit or less is not worth it: cut mid-word instead.
    assert clip("a " + "b" * 40, 20, " ...", break_at=" ") == "a " + "b" * 14 + " ..."
    for limit in range(0, 40):
        assert len(clip(words, limit, " ...", break_at=" ")) <= max(limit, len(" ..."))


def _answer_tokens(hits: list) -> float:  # type: ignore[type-arg]
    return sum(len(msgspec.json.encode(h.content)) for h in hits) / 4


def test_a_search_given_a_small_budget_stays_within_it(memory: Memory) -> None:
    """A tool's compact answer (MCP's search_memory): the first experience alone used to
    carry 60,000 characters of evidence, whatever the budget."""
    for i, topic in enumerate(["csv export", "csv import", "csv header parsing"]):
        memory.add(AddRequest(f"r{i}", "u", f"s{i}", [
            Message("user", f"Fix the slow {topic} in exporter.py", timestamp=1_704_067_200_000),
            *(Message("assistant", f"Read exporter.py part {j}: " + f"{topic} rows and columns " * 120,
                      timestamp=1_704_067_200_001 + j) for j in range(12)),
        ]))
    req = SearchRequest(user_id="u", query="slow csv export in exporter.py", top_k=3)
    # An answer at full size, its first experience with 60,000 characters of evidence.
    loud = memory.search_config.replace({"calibration.quiet_below": 0, "answer.first_evidence_chars": 60_000})

    def tokens(budget: int | None) -> float:
        return _answer_tokens(memory.search(req, loud, budget_tokens=budget))

    whole, small = memory.search(req, loud), memory.search(req, loud, budget_tokens=1_500)
    assert _answer_tokens(whole) > 10_000
    # The budget cuts the answer, never its order. (Which of the two csv sessions comes first
    # is the model's: the card at 2e1c13d gives them P 0.9928 and 0.9927.)
    assert _answer_tokens(small) <= 1_500 and small[0].session_id == whole[0].session_id in {"s0", "s1"}
    assert "Evidence from this session:" in str(small[0].content)  # cut, not dropped
    assert 3_000 < tokens(6_000) <= 6_000
    assert tokens(10**9) == _answer_tokens(whole)  # never above the settings' budget


def test_budget_cuts_the_list_but_never_returns_nothing() -> None:
    items = ["a" * 4_000] * 10  # 1,000 tokens each
    assert len(within_budget(items, len, budget_tokens=3_500, max_bytes=10**9)) == 3
    assert len(within_budget(items, len, budget_tokens=0, max_bytes=10**9)) == 10
    # A first item larger than the budget is still returned; the byte cap is absolute.
    assert within_budget(["b" * 100_000], len, budget_tokens=10, max_bytes=10**9) == ["b" * 100_000]
    assert within_budget(["b" * 100_000], len, budget_tokens=10, max_bytes=50_000) == []
