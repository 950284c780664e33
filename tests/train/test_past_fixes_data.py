"""The past-fix training data: a task's gold is the mainline change naming its pull request,
the import window walks from the chosen tip, and the validation sets are refused as input."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from train.past_fixes.build_data import gold_changes, main, mainline, window_clone


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def test_a_task_s_gold_is_the_mainline_change_that_names_its_pull_request() -> None:
    line = [("c3", "Fix the parser (#12)"), ("c2", "Merge pull request #7 from someone/branch"),
            ("c1", "Fix #12: a ticket, not the pull request"), ("c0", "Initial import")]
    tasks = [{"instance_id": "a", "number": 12}, {"instance_id": "b", "number": 7}, {"instance_id": "c", "number": 99}]
    assert gold_changes(tasks, line) == {"a": 0, "b": 1}  # no subject names #99: left out


def test_the_window_clone_walks_from_the_chosen_tip(tmp_path: Path) -> None:
    origin = tmp_path / "origin"
    origin.mkdir()
    _git(origin, "init", "-q", "-b", "main")
    for i in range(3):
        (origin / "f.txt").write_text(f"{i}\n")
        _git(origin, "add", "f.txt")
        _git(origin, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", f"change {i} (#{i + 1})")
    line = mainline(origin)
    assert [subject for _, subject in line] == ["change 2 (#3)", "change 1 (#2)", "change 0 (#1)"]
    clone = window_clone(origin, line[1][0], tmp_path / "window")
    assert [subject for _, subject in mainline(clone)] == ["change 1 (#2)", "change 0 (#1)"]


def test_a_validation_set_is_refused_as_training_data(tmp_path: Path) -> None:
    data = tmp_path / "past-fixes-dev" / "tasks.jsonl"
    data.parent.mkdir()
    data.write_text("{}\n")
    with pytest.raises(SystemExit, match="never training data"):
        main(["--data", str(data), "--out", str(tmp_path / "out")])
