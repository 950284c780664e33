"""The fusion-ceiling study's own arithmetic: fast, no model, no data."""

from __future__ import annotations

from eval.replay.ceiling import Figures, figures, fuse, same_issue, search_weights, sessions_of
from eval.replay.data import Message, Task, Trajectory


def _task(gold: str, repo: str = "r") -> Task:
    return Task(instance_id="q-" + gold, repo=repo, query="q", gold=frozenset({gold}))


def test_figures_count_the_first_gold_trajectory() -> None:
    tasks = [_task("a"), _task("b"), _task("c")]
    rankings = [["a", "x"], ["x", "y", "b"], ["x"]]
    assert figures(rankings, tasks) == Figures(hit1=0.333, hit5=0.667, mrr=round((1 + 1 / 3) / 3, 3))


def test_fuse_weights_rankings_and_drops_zero_weight_lists() -> None:
    lists = {"one": ["a", "b", "c"], "two": ["c", "b", "a"]}
    assert fuse(lists, {"one": 1.0}, 1) == ["a", "b", "c"]
    assert fuse(lists, {"one": 1.0, "two": 2.0}, 1)[0] == "c"
    assert fuse(lists, {"one": 1.0, "two": 1.0}, 1)[2] == "b"  # 1/3 + 1/3 < 1/2 + 1/4


def test_weight_search_finds_the_list_that_ranks_gold_first() -> None:
    tasks = [_task("a"), _task("b")]
    per_task = [{"good": ["a", "x"], "bad": ["x", "a"]}, {"good": ["b", "y"], "bad": ["y", "b"]}]
    weights, _, best = search_weights(per_task, tasks, ["good", "bad"])
    assert best.hit1 == 1.0 and weights["good"] > weights["bad"]


def test_sessions_keep_first_appearance_order() -> None:
    assert sessions_of(["b", "a", "b", "c", "a"]) == ["b", "a", "c"]


def test_same_issue_needs_the_whole_title() -> None:
    traj = Trajectory("t1", "r", [Message("user", "Fix this issue. problem_statement: Cannot override get_FOO_display() "
                                                  "in Django 2.2+. Description: I cannot override ..." + " x" * 60)])
    assert same_issue("Cannot override get_FOO_display() in Django 2.2+.\nDescription ...", traj)
    assert not same_issue("Cannot override get_FOO_display() in Django 3.0\nDescription ...", traj)
    assert not same_issue("short\n", traj)  # a title under 20 characters proves nothing
