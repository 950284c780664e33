"""eval.quality.past_fixes end to end on a tiny repository built here: the script imports it, searches
a bug report, finds the fixing commit by its SHA, scores BM25 beside it, and a second run on
the kept store imports nothing new, and the relevance model's commit training data is read from
that store. Its figures mean nothing; the scoring and the run do."""

from __future__ import annotations

import json
from pathlib import Path

import git

from eval._provenance import PROVENANCE_KEYS
from eval.quality import past_fixes, staleness
from train.ranker import commit_data


def _repo(path: Path) -> str:
    repo = git.Repo.init(path, initial_branch="main")
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "Dev")
        cw.set_value("user", "email", "dev@example.com")
    (path / "lexer.py").write_text("def heredoc(text):\n    return text.split('<<')\n")
    repo.index.add(["lexer.py"])
    repo.index.commit("Add the lexer")
    (path / "lexer.py").write_text(
        "def heredoc(text):\n    if '<<' not in text:\n        raise ValueError('unterminated heredoc')\n"
        "    return text.split('<<')\n"
    )
    repo.index.add(["lexer.py"])
    fix = repo.index.commit("Reject an unterminated heredoc in the lexer (#12)").hexsha
    (path / "README").write_text("docs\n")
    repo.index.add(["README"])
    repo.index.commit("Write the README")
    return fix


def test_past_fixes_scores_a_tiny_history(tmp_path: Path) -> None:
    fix = _repo(tmp_path / "repos" / "demo")
    tasks = [{"instance_id": "demo-1", "repo": "someone/demo", "pull_number": 12, "patch_files": ["lexer.py"],
              "gold_commits": [fix], "n_content": 1,
              "problem_statement": "The lexer hangs on an unterminated heredoc instead of raising an error"}]
    (tmp_path / "tasks.json").write_text(json.dumps(tasks))
    args = ["--repos", str(tmp_path / "repos"), "--tasks", str(tmp_path / "tasks.json"),
            "--store", str(tmp_path / "store")]
    assert past_fixes.main([*args, "--out", str(tmp_path / "first.json")]) == 0
    first = json.loads((tmp_path / "first.json").read_text())
    assert set(PROVENANCE_KEYS) <= set(first["provenance"])
    assert first["summary"]["codemem"]["hit@1"] == 1.0
    assert first["summary"]["bm25_message_diff"]["found"] == 1.0
    assert first["repos"]["demo"]["added"] == 3
    assert past_fixes.main([*args, "--no-bm25", "--out", str(tmp_path / "again.json")]) == 0
    again = json.loads((tmp_path / "again.json").read_text())
    assert (again["repos"]["demo"]["added"], again["repos"]["demo"]["unchanged"]) == (0, 3)
    # The kept store is also what the relevance model's commit training data is read from.
    assert commit_data.main(["--store", str(tmp_path / "store"), "--tasks", str(tmp_path / "tasks.json"),
                             "--out", str(tmp_path / "commits")]) == 0
    (query,) = [json.loads(line) for line in (tmp_path / "commits" / "queries.jsonl").read_text().splitlines()]
    assert query["query"] == "demo-1" and query["labels"] == {fix: 2}
    assert fix in query["signals"]["fields"] and query["signals"]["commit_ranks"]["title"][fix] == 1


def test_staleness_checks_the_flags_against_git(tmp_path: Path) -> None:
    fix = _repo(tmp_path / "demo")
    path = tmp_path / "demo" / "lexer.py"
    path.write_text(path.read_text().replace("unterminated heredoc", "heredoc without its end"))
    repo = git.Repo(tmp_path / "demo")
    repo.index.add(["lexer.py"])
    later = repo.index.commit("Say what is missing").hexsha
    assert staleness.main(["--repo", str(tmp_path / "demo"), "--out", str(tmp_path / "s.json")]) == 0
    result = json.loads((tmp_path / "s.json").read_text())
    rows = {r["sha"]: r for r in result["rows"]}
    assert rows[fix]["flagged"] and rows[fix]["changed"] and not rows[fix]["gone"]  # edited again by `later`
    assert not rows[later]["flagged"] and not rows[later]["changed"]
    assert result["summary"]["precision"] == 1.0 and result["summary"]["recall"] == 1.0


def test_gold_rank_counts_a_seven_char_prefix() -> None:
    gold = ["0123456789abcdef0123456789abcdef01234567"]
    assert past_fixes.gold_rank(["nothing", "commit 0123456 fixed it"], gold) == 2
    assert past_fixes.gold_rank(["commit 012345 is too short"], gold) is None
    assert past_fixes.metrics([1, 3, None, None]) == {"hit@1": 0.25, "hit@5": 0.5, "mrr": 0.333, "found": 0.5}
