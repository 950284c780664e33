"""The replay's metric code and renderer: fast, no server, no model."""

from __future__ import annotations

import json

import pytest

from eval._stats import percentile, summary_ms
from eval.replay.baselines import Tokenizer, message_index, pack_chunks, trajectory_index
from eval.replay.data import (
    Condition,
    Message,
    Task,
    Trajectory,
    build_conditions,
    parse_kinds,
    render_lines,
)
from eval.replay.metrics import (
    Item,
    count_tokens,
    distinct_trajectories,
    first_gold_rank,
    first_gold_session_rank,
    gold_share,
    hit_at,
    reciprocal_rank,
    score_query,
    summarize,
    tokens_before,
)

GOLD = frozenset({"g"})


def items(*spec: tuple[str, float]) -> list[Item]:
    return [Item(s, t) for s, t in spec]


# -- metrics ----------------------------------------------------------------------------------

def test_rank_is_item_position_and_session_rank_counts_distinct_sessions() -> None:
    res = items(("a", 10), ("a", 10), ("b", 10), ("g", 10), ("g", 5))
    assert first_gold_rank(res, GOLD) == 4
    assert first_gold_session_rank(res, GOLD) == 3
    assert distinct_trajectories(res) == ["a", "b", "g"]
    assert first_gold_rank(items(("a", 1)), GOLD) is None
    assert first_gold_session_rank(items(("a", 1)), GOLD) is None


def test_hit_and_reciprocal_rank() -> None:
    assert hit_at(1, 1) == 1.0 and hit_at(5, 5) == 1.0 and hit_at(6, 5) == 0.0 and hit_at(None, 5) == 0.0
    assert reciprocal_rank(4) == 0.25 and reciprocal_rank(None) == 0.0


def test_token_count_is_chars_over_four_of_text_parts() -> None:
    assert count_tokens("abcdefgh") == 2.0
    parts = [{"type": "text", "text": "abcd"}, {"type": "image_url", "image_url": {"url": "data:x"}},
             {"type": "text", "text": "efg"}]
    assert count_tokens(parts) == len("abcd\nefg") / 4
    assert count_tokens(None) == 0.0


def test_tokens_before_first_gold() -> None:
    res = items(("a", 100), ("b", 50), ("g", 10))
    assert tokens_before(res, first_gold_rank(res, GOLD)) == 150
    assert tokens_before(res, 1) == 0
    assert tokens_before(res, None) is None


def test_gold_share_of_window_counts_the_part_inside() -> None:
    assert gold_share(items(("g", 4000), ("a", 4000), ("g", 4000)), GOLD) == pytest.approx(0.5)
    assert gold_share(items(("a", 6000), ("g", 4000)), GOLD) == pytest.approx(2000 / 8000)
    assert gold_share(items(("g", 100), ("a", 300)), GOLD) == pytest.approx(0.25)  # window not filled
    assert gold_share([], GOLD) == 0.0


def test_score_and_summary() -> None:
    s1 = score_query("x", "noisy-all", "t1", items(("g", 8), ("a", 4)), GOLD, 10.0)
    s2 = score_query("x", "noisy-all", "t2", items(("a", 8), ("b", 4), ("g", 4)), GOLD, 20.0)
    s3 = score_query("x", "noisy-all", "t3", items(("a", 8)), GOLD, 30.0)
    assert (s1.gold_rank, s2.gold_rank, s3.gold_rank) == (1, 3, None)
    assert (s2.items, s2.sessions, s2.tokens_total, s2.tokens_before_gold) == (3, 3, 16, 12)
    sm = summarize([s1, s2, s3])
    assert sm.hit1 == pytest.approx(1 / 3) and sm.hit5 == pytest.approx(2 / 3)
    assert sm.mrr == pytest.approx((1 + 1 / 3) / 3)
    assert sm.found == 2 and sm.found_share == pytest.approx(2 / 3) and sm.tokens_before_gold_p50 == 6
    assert sm.latency_p50_ms == 20.0 and sm.items_p50 == 2


def test_every_system_is_ranked_by_distinct_trajectories_not_items() -> None:
    # Many items of one non-gold trajectory (messages, chunks, evidence) push the gold item
    # down by position, but not by trajectory: a chunk baseline and a whole-trajectory
    # baseline with the same order of trajectories score the same.
    chunks = score_query("chunks", "noisy-all", "t", items(("a", 1), ("a", 1), ("a", 1), ("a", 1), ("a", 1), ("g", 1)),
                         GOLD, 1.0)
    whole = score_query("whole", "noisy-all", "t", items(("a", 5), ("g", 1)), GOLD, 1.0)
    assert chunks.gold_rank == whole.gold_rank == 2 and chunks.gold_item_rank == 6
    a, b = summarize([chunks]), summarize([whole])
    assert (a.hit1, a.hit5, a.mrr, a.found) == (b.hit1, b.hit5, b.mrr, b.found) == (0.0, 1.0, 0.5, 1)
    assert a.item_mrr == pytest.approx(1 / 6) and b.item_mrr == 0.5


def test_the_report_shows_found_and_labels_how_latency_was_taken() -> None:
    from eval.replay.report import HTTP, IN_PROCESS, markdown_table

    rows = [summarize([score_query("codemem", "noisy-all", "t1", items(("g", 1)), GOLD, 5.0),
                       score_query("codemem", "noisy-all", "t2", items(("a", 1)), GOLD, 5.0)]),
            summarize([score_query("bm25-msg", "noisy-all", "t1", items(("a", 1)), GOLD, 1.0)])]
    table = markdown_table(rows).splitlines()
    assert "| found |" in table[0] and table[0].endswith("| latency |")
    assert table[2].startswith("| codemem | noisy-all | 2 | 0.50 | 0.50 | 0.50 | 0.500 | 1 (50%) |")
    assert table[2].endswith(f"| {HTTP} |") and table[3].endswith(f"| {IN_PROCESS} |")


def test_absent_condition_has_no_ranking_figures() -> None:
    s = score_query("x", "absent", "t", items(("a", 8), ("b", 4)), frozenset(), 1.0)
    assert s.gold_rank is None and s.gold_share_8k is None and s.tokens_total == 12
    sm = summarize([s])
    assert sm.hit1 is None and sm.mrr is None and sm.tokens_total_p50 == 12


def test_percentile_interpolates() -> None:
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([5], 95) == 5
    assert percentile([], 50) is None


def test_summary_ms_reports_milliseconds_rounded_on_request() -> None:
    s = summary_ms([0.010, 0.020, 0.0304], digits=1)
    assert s["n"] == 3 and s["p50"] == 20.0 and s["max"] == 30.4 and s["min"] == 10.0
    assert summary_ms([])["p95"] is None


# -- rendering --------------------------------------------------------------------------------

SAMPLE = [
    {"type": "summary", "summary": "x"},
    {"type": "user", "timestamp": "2025-01-01T00:00:00.000Z", "message": {"role": "user", "content": "Fix the bug"}},
    {"type": "assistant", "timestamp": "2025-01-01T00:00:01.000Z",
     "message": {"content": [{"type": "thinking", "thinking": "Let me look."}]}},
    {"type": "assistant", "message": {"content": [
        {"type": "tool_use", "name": "Bash", "input": {"command": "ls src"}}]}},
    {"type": "user", "message": {"content": [{"type": "tool_result", "content": "a.py\nb.py"}]}},
    {"type": "assistant", "message": {"content": [
        {"type": "tool_use", "name": "Edit", "input": {"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 2"}}]}},
    {"type": "user", "message": {"content": [{"type": "tool_result", "content": [{"type": "text", "text": "ok"}]}]}},
    {"type": "assistant", "message": {"content": [{"type": "text", "text": "   "}]}},  # empty: skipped
    {"type": "assistant", "message": {"content": [{"type": "text", "text": "Done."}]}},
]


def jsonl() -> list[str]:
    lines = [json.dumps(e) for e in SAMPLE]
    lines.insert(4, lines[4][:25])  # a truncated line, as in the real data
    return lines


def test_default_rendering() -> None:
    msgs = render_lines(jsonl())
    assert [m.role for m in msgs] == ["user", "assistant", "assistant", "user", "assistant", "user", "assistant"]
    assert msgs[0] == Message("user", "Fix the bug", 1735689600000)
    assert msgs[1].content == "Let me look." and msgs[1].timestamp == 1735689601000
    assert msgs[2].content == 'Tool call Bash {"command": "ls src"}' and msgs[2].timestamp is None
    assert msgs[3].content == "Tool result:\na.py\nb.py"
    assert msgs[5].content == "Tool result:\nok"
    assert msgs[-1].content == "Done."


def test_plain_rendering_has_no_json() -> None:
    msgs = render_lines(jsonl(), "plain")
    assert msgs[2].content == "Ran: ls src"
    assert msgs[3].content == "a.py\nb.py"
    assert msgs[4].content == "Edited a.py: x = 1 -> x = 2"
    assert not any("{" in m.content for m in msgs)


def test_noreasoning_drops_thinking() -> None:
    default, nore = render_lines(jsonl()), render_lines(jsonl(), "noreasoning")
    assert len(nore) == len(default) - 1
    assert all(m.content != "Let me look." for m in nore)


def test_unknown_rendering_is_refused() -> None:
    with pytest.raises(ValueError):
        render_lines([], "fancy")


# -- conditions and baselines -----------------------------------------------------------------

def traj(iid: str, repo: str, *texts: str) -> Trajectory:
    return Trajectory(iid, repo, [Message("user", t) for t in texts])


def test_conditions() -> None:
    tasks = [Task("t1", "r1", "q", frozenset({"g1"})), Task("t2", "r2", "q", frozenset({"g2"}))]
    repos = {"g1": "r1", "a": "r1", "g2": "r2", "b": "r2", "c": "r3"}
    conds = build_conditions(tasks, repos, set(repos), {"g1", "g2"}, parse_kinds("relevant,repo,all,absent"))
    by = {c.user_id: c for c in conds}
    assert by["relevant:t1"] == Condition("relevant:t1", "relevant", ("g1",), ("t1",))
    assert by["repo:r1"].trajectories == ("a", "g1") and by["repo:r1"].tasks == ("t1",)
    assert by["all"].trajectories == ("a", "b", "c", "g1", "g2") and by["all"].tasks == ("t1", "t2")
    assert by["absent"].trajectories == ("a", "b", "c")
    with pytest.raises(ValueError):
        parse_kinds("noisy")


def test_bm25_baselines_rank_the_matching_trajectory_first() -> None:
    trajs = [traj("x", "r", "pandas dataframe merge"), traj("g", "r", "slugify strips dashes", "django utils text"),
             traj("y", "r", "matplotlib colorbar")]
    tok = Tokenizer()
    q = tok("django slugify should strip dashes")
    by_traj = trajectory_index(trajs, tok).search(q, 100)
    assert [i.session_id for i in by_traj] == ["g"]  # score-0 documents are not returned
    assert by_traj[0].tokens == len("slugify strips dashes\n\ndjango utils text") / 4
    by_msg = message_index(trajs, tok).search(q, 100)
    assert [i.session_id for i in by_msg] == ["g", "g"]


def test_dense_chunks_pack_to_about_256_tokens() -> None:
    t = traj("x", "r", "a" * 500, "b" * 500, "c" * 500, "d" * 3000, "e" * 10)
    chunks = pack_chunks(t)
    assert chunks == ["a" * 500 + "\n\n" + "b" * 500, "c" * 500, "d" * 3000, "e" * 10]


def test_useful_at_1_counts_a_same_file_fix_first_and_gold_first() -> None:
    """useful@1: the first trajectory is gold, or edited a file the task's own fix touches."""
    from eval.replay.metrics import Item, score_query, summarize

    twin = [Item("twin", 10), Item("gold", 10)]
    other = [Item("other", 10), Item("gold", 10)]
    gold, useful = frozenset({"gold"}), frozenset({"twin"})
    scores = [score_query("s", "noisy-all", "t1", twin, gold, 1.0, useful),
              score_query("s", "noisy-all", "t2", other, gold, 1.0, useful),
              score_query("s", "noisy-all", "t3", [Item("gold", 5)], gold, 1.0, useful)]
    assert [s.useful1 for s in scores] == [True, False, True]
    summary = summarize(scores)
    assert summary.hit1 == 1 / 3 and summary.useful1 == 2 / 3
    assert score_query("s", "absent", "t4", twin, frozenset(), 1.0, useful).useful1 is None


def test_a_fix_s_files_are_its_source_files() -> None:
    from eval.replay.data import patch_files, same_file

    patch = "".join(f"diff --git a/{p} b/{p}\n--- a/{p}\n" for p in (
        "django/forms/forms.py", "docs/releases/1.8.txt", "AUTHORS", "tests/forms_tests/test_forms.py"))
    assert patch_files(patch) == {"django/forms/forms.py"}
    assert same_file(frozenset({"./swebench_9_15/testbed/django/forms/forms.py"}), frozenset({"django/forms/forms.py"}))
    assert not same_file(frozenset({"./x/testbed/django/forms/formsets.py"}), frozenset({"django/forms/forms.py"}))
