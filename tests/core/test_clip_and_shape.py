"""An answer fits a reader's window: long items cut, the list bounded by a budget."""

from codemem.clip import clip, clip_middle
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


def test_budget_cuts_the_list_but_never_returns_nothing() -> None:
    items = ["a" * 4_000] * 10  # 1,000 tokens each
    assert len(within_budget(items, len, budget_tokens=3_500, max_bytes=10**9)) == 3
    assert len(within_budget(items, len, budget_tokens=0, max_bytes=10**9)) == 10
    # A first item larger than the budget is still returned; the byte cap is absolute.
    assert within_budget(["b" * 100_000], len, budget_tokens=10, max_bytes=10**9) == ["b" * 100_000]
    assert within_budget(["b" * 100_000], len, budget_tokens=10, max_bytes=50_000) == []
