"""An answer fits a reader's window: long items trimmed, the list bounded by a budget."""

from codemem.ranking.shape import trim, within_budget


def test_trim_keeps_head_and_tail_and_says_what_it_left_out() -> None:
    text = "HEAD " + "x" * 10_000 + " TAIL"
    cut, omitted = trim(text, 600)
    assert cut.startswith("HEAD ") and cut.endswith(" TAIL")
    assert omitted == len(text) - 600
    assert f"[... {omitted} characters omitted ...]" in cut
    assert trim("short", 600) == ("short", 0)
    assert trim(text, 0) == (text, 0)  # 0 = no limit


def test_budget_cuts_the_list_but_never_returns_nothing() -> None:
    items = ["a" * 4_000] * 10  # 1,000 tokens each
    assert len(within_budget(items, len, budget_tokens=3_500, max_bytes=10**9)) == 3
    assert len(within_budget(items, len, budget_tokens=0, max_bytes=10**9)) == 10
    # A first item larger than the budget is still returned; the byte cap is absolute.
    assert within_budget(["b" * 100_000], len, budget_tokens=10, max_bytes=10**9) == ["b" * 100_000]
    assert within_budget(["b" * 100_000], len, budget_tokens=10, max_bytes=50_000) == []
