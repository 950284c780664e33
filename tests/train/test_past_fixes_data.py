"""The past-fix training data: a task's gold is the first-parent change that fixed it (the one
naming its pull request, else the oldest holding its added lines after its base), its report is
the issue written before the fix, the import window walks from the chosen tip, and no
evaluation task or repository gets in."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from train.data import EXCLUDED, evaluation_task_keys
from train.past_fixes.build_data import main, window_clone
from train.past_fixes.gold import Change, by_pull_request, find_gold, mainline
from train.past_fixes.sources import (
    MSB_DIR,
    issue_report,
    keep,
    multi_swe_bench,
    multi_swe_bench_row,
)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def _commit(repo: Path, files: dict[str, str], subject: str, when: int) -> str:
    for name, text in files.items():
        (repo / name).write_text(text)
        _git(repo, "add", name)
    env = f"@{when} +0000"
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", subject,
                    "--date", env], check=True, env={"GIT_COMMITTER_DATE": env, "PATH": "/usr/bin:/bin"})
    return _git(repo, "rev-parse", "HEAD")


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "origin"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    return repo


FIX = "def parse(text):\n    if not text:\n        raise ValueError('empty input')\n    return text.split(',')\n"
PATCH = "+++ b/parser.py\n" + "".join(f"+{line}\n" for line in FIX.splitlines())


def test_a_task_s_gold_is_the_mainline_change_that_names_its_pull_request() -> None:
    line = [Change("c3", "Fix the parser (#12)", 3), Change("c2", "Merge pull request #7 from someone/branch", 2),
            Change("c1", "Fix #12: a ticket, not the pull request", 1), Change("c0", "Initial import", 0)]
    tasks: list[dict[str, Any]] = [{"instance_id": "a", "number": 12}, {"instance_id": "b", "number": "7"},
                                   {"instance_id": "c", "number": 99}]
    assert by_pull_request(tasks, line) == {"a": 0, "b": 1}  # no subject names #99: left out


def test_an_unnamed_fix_is_found_by_its_content_after_its_base_and_before_a_later_move(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    _commit(repo, {"parser.py": "def parse(text):\n    return text\n"}, "Start", 100)
    # the same lines before the base: an old version the pull request brought back, not its fix
    _commit(repo, {"old.py": FIX}, "An old copy", 200)
    _commit(repo, {"old.py": "gone\n"}, "Drop the old copy", 300)
    base = _commit(repo, {"README": "parser\n"}, "Docs", 400)
    _commit(repo, {"other.py": "print('unrelated change')\n"}, "Unrelated (#5)", 500)
    fix = _commit(repo, {"parser.py": FIX}, "Reject empty input", 600)  # rebased: names no pull request
    _commit(repo, {"moved.py": FIX}, "Move the parser", 700)  # holds the lines too, later
    named = _commit(repo, {"other.py": "print('named')\n"}, "Named fix (#9)", 800)
    line = mainline(repo)
    tasks = [{"instance_id": "content", "number": 8, "patch": PATCH, "base_sha": base},
             {"instance_id": "named", "number": 9, "patch": PATCH, "base_sha": base},
             {"instance_id": "too-small", "number": 10, "patch": "+++ b/x\n+raise ValueError('empty input')\n",
              "base_sha": base},
             {"instance_id": "unknown-base", "number": 11, "patch": PATCH, "base_sha": "0" * 40}]
    gold = find_gold(repo, tasks, line)
    assert {i: (line[g.position].sha, g.rule) for i, g in gold.items()} == {
        "content": (fix, "content"), "named": (named, "pr")}


def test_a_merge_that_names_no_pull_request_is_no_task_s_gold(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    base = _commit(repo, {"parser.py": "def parse(text):\n    return text\n"}, "Start", 100)
    _git(repo, "checkout", "-q", "-b", "release")
    _commit(repo, {"parser.py": FIX}, "Reject empty input", 200)  # the fix, on a release line
    _commit(repo, {"notes.txt": "release notes\n"}, "More release work", 300)
    _git(repo, "checkout", "-q", "main")
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "merge", "-q", "--no-ff",
                    "-m", "Merge branch 'release'", "release"], check=True,
                   env={"GIT_COMMITTER_DATE": "@400 +0000", "GIT_AUTHOR_DATE": "@400 +0000", "PATH": "/usr/bin:/bin"})
    line = mainline(repo)
    assert [(c.subject, c.merge) for c in line] == [("Merge branch 'release'", True), ("Start", False)]
    assert find_gold(repo, [{"instance_id": "t", "number": 3, "patch": PATCH, "base_sha": base}], line) == {}


def test_the_window_clone_walks_from_the_chosen_tip(tmp_path: Path) -> None:
    origin = _repo(tmp_path)
    for i in range(3):
        _commit(origin, {"f.txt": f"{i}\n"}, f"change {i} (#{i + 1})", 100 * (i + 1))
    line = mainline(origin)
    assert [c.subject for c in line] == ["change 2 (#3)", "change 1 (#2)", "change 0 (#1)"]
    clone = window_clone(origin, line[1].sha, tmp_path / "window")
    assert [c.subject for c in mainline(clone)] == ["change 1 (#2)", "change 0 (#1)"]


def test_the_report_is_the_issues_opened_before_the_pull_request_never_the_pull_request() -> None:
    row: dict[str, Any] = {"org": "acme", "repo": "calc", "number": 40, "instance_id": "acme__calc-40",
           "title": "Fix divide: use true division", "body": "The fix for #31.",
           "resolved_issues": [{"number": 31, "title": "divide truncates", "body": "divide(7, 2) gives 3\r\n"},
                               {"number": 41, "title": "follow-up", "body": "opened after the fix"}],
           "base": {"sha": "abc"}, "fix_patch": "diff a", "test_patch": "diff b"}
    task = multi_swe_bench_row(row, "Go")
    assert task is not None
    assert task["problem_statement"] == "divide truncates\n\ndivide(7, 2) gives 3"
    assert (task["repo"], task["number"], task["language"], task["base_sha"]) == ("acme/calc", 40, "Go", "abc")
    assert multi_swe_bench_row({**row, "resolved_issues": row["resolved_issues"][1:]}, "Go") is None
    assert issue_report(40, [{"number": 39, "title": "", "body": ""}]) == ""


def test_multi_swe_bench_rows_are_read_from_the_fetched_copy_and_lfs_pointers_skipped(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    (repo / MSB_DIR / "go").mkdir(parents=True)
    (repo / MSB_DIR / "rust").mkdir()
    row = {"org": "acme", "repo": "calc", "number": 40, "instance_id": "acme__calc-40", "base": {"sha": "abc"},
           "resolved_issues": [{"number": 31, "title": "divide truncates", "body": "7/2 is 3"}]}
    files = {f"{MSB_DIR}/go/acme__calc_dataset.jsonl": json.dumps(row) + "\n",
             f"{MSB_DIR}/rust/big__repo_dataset.jsonl": "version https://git-lfs.github.com/spec/v1\noid sha256:0\n"}
    for path, text in files.items():
        (repo / path).write_text(text)
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "data")
    tasks = list(multi_swe_bench(repo, _git(repo, "rev-parse", "HEAD")))
    assert [(t["instance_id"], t["language"]) for t in tasks] == [("acme__calc-40", "Go")]


def _task(instance_id: str, repo: str, number: int) -> dict[str, object]:
    return {"instance_id": instance_id, "repo": repo, "number": number}


def test_evaluation_tasks_and_repositories_never_enter_the_training_tasks(tmp_path: Path) -> None:
    shared = tmp_path / "data"
    lite, pastfixes = shared / EXCLUDED[0], shared / EXCLUDED[1]  # fakes of the evaluation sets
    lite.mkdir(parents=True)
    pastfixes.mkdir()
    (lite / "trajectories_index.json").write_text(
        json.dumps([{"instance_id": "acme__calc-40", "file": "x", "repo": "acme/calc", "lines": 1}]))
    (lite / "related_tasks.jsonl").write_text(
        json.dumps({"instance_id": "Acme__Parser-7"}) + "\n")
    (pastfixes / "tasks.json").write_text(json.dumps([{"instance_id": "acme__web-3"}]))
    keys = evaluation_task_keys(shared)
    tasks = [_task("acme__calc-40", "acme/calc", 40),  # a SWE-ContextBench Lite task
             _task("acme__parser-7", "acme/parser", 7),  # a related task, in another case
             _task("web-3", "acme/web", 3),  # a past-fixes dev task under another instance id
             _task("gin-gonic__gin-1", "gin-gonic/gin", 1),  # a held-out repository
             _task("tokio-rs__tokio-2", "Tokio-rs/tokio", 2),  # a dev repository
             _task("acme__calc-41", "acme/calc", 41), _task("acme__calc-41", "acme/calc", 41)]
    assert [t["instance_id"] for t in keep(tasks, keys)] == ["acme__calc-41"]


def test_a_missing_evaluation_set_is_an_error_not_an_empty_exclusion(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        evaluation_task_keys(tmp_path)


def test_a_validation_set_is_refused_as_training_data(tmp_path: Path) -> None:
    data = tmp_path / "past-fixes-dev" / "tasks.jsonl"
    data.parent.mkdir()
    data.write_text("{}\n")
    with pytest.raises(SystemExit, match="never training data"):
        main(["--data", str(data), "--out", str(tmp_path / "out")])
