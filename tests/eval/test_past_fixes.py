"""eval.quality.past_fixes end to end on a tiny repository built here: the script imports it, searches
a bug report, finds the fixing commit by its SHA, scores BM25 beside it, and a second run on
the kept store imports nothing new, and the relevance model's commit training data is read from
that store. Its figures mean nothing; the scoring and the run do."""

from __future__ import annotations

import json
from pathlib import Path

import git

from eval._provenance import PROVENANCE_KEYS
from eval.quality import gates, past_fixes, staleness
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


def _tasks(tmp_path: Path) -> str:
    """The tiny history in `tmp_path/repos/demo` and one bug report of it in `tmp_path/tasks.json`;
    the fixing commit's SHA."""
    fix = _repo(tmp_path / "repos" / "demo")
    tasks = [{"instance_id": "demo-1", "repo": "someone/demo", "pull_number": 12, "patch_files": ["lexer.py"],
              "gold_commits": [fix], "n_content": 1,
              "problem_statement": "The lexer hangs on an unterminated heredoc instead of raising an error"}]
    (tmp_path / "tasks.json").write_text(json.dumps(tasks))
    return fix


def test_past_fixes_scores_a_tiny_history(tmp_path: Path) -> None:
    fix = _tasks(tmp_path)
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


def test_gates_cost_is_a_gold_the_gate_takes_out_of_the_first_five() -> None:
    queries = [gates.Query("s", key, "u", "q", answerable, lambda hits: None)
               for key, answerable in (("a", True), ("b", True), ("c", True), ("x", False))]
    # Alone, the floor pushes b's gold from 4th to 7th; quiet shortens answers and drops b's gold
    # only where the floor has already pushed it out, so beside the floor it costs nothing more.
    # The empty gate answers x (nothing related) with nothing and leaves the answerable ones.
    shaped = {"ungated": {"a": (1, 900), "b": (4, 900), "c": (None, 900), "x": (None, 800)},
              "gated": {"a": (1, 100), "b": (None, 100), "c": (None, 100), "x": (None, 0)},
              "no-floor": {"a": (1, 100), "b": (4, 100), "c": (None, 100), "x": (None, 0)},
              "no-quiet": {"a": (1, 800), "b": (7, 800), "c": (None, 800), "x": (None, 0)},
              "no-empty": {"a": (1, 100), "b": (None, 100), "c": (None, 100), "x": (None, 100)},
              "only-floor": {"a": (1, 800), "b": (7, 800), "c": (None, 800), "x": (None, 700)},
              "only-quiet": {"a": (1, 100), "b": (4, 100), "c": (None, 100), "x": (None, 100)},
              "only-empty": {"a": (1, 900), "b": (4, 900), "c": (None, 900), "x": (None, 0)}}
    answers = {name: {k: gates.Answer(rank, tokens, tokens == 0) for k, (rank, tokens) in got.items()}
               for name, got in shaped.items()}
    assert set(answers) == set(gates.variants())
    result = gates.figures(queries, answers)
    assert (result["answerable"], result["nothing_related"]) == (3, 1)
    floor, quiet = result["gates"]["floor"], result["gates"]["quiet"]
    assert floor["alone"]["removed"] == floor["marginal"]["removed"] == ["b"]
    assert floor["alone"]["cost"] == 0.333 and not floor["alone"]["within_cap"]
    assert quiet["marginal"]["removed"] == [] and quiet["marginal"]["within_cap"]
    assert quiet["alone"] == {"golds_removed_from_first_5": 0, "cost": 0.0, "within_cap": True, "removed": [],
                              "tokens_saved_answerable": 800.0, "tokens_saved_absent": 700.0}
    assert result["variants"]["ungated"]["hit@5"] == 0.667 and result["variants"]["gated"]["hit@5"] == 0.333
    assert result["variants"]["gated"]["answerable_gold_left_out"] == 2
    empty = result["gates"]["empty"]
    assert empty["marginal"]["removed"] == empty["alone"]["removed"] == [] and empty["alone"]["within_cap"]
    assert (empty["marginal"]["tokens_saved_absent"], empty["alone"]["tokens_saved_absent"]) == (100.0, 800.0)
    assert (result["variants"]["gated"]["absent_empty"], result["variants"]["no-empty"]["absent_empty"]) == (1, 0)


def test_gates_runs_on_a_kept_past_fixes_store(tmp_path: Path) -> None:
    _tasks(tmp_path)
    assert past_fixes.main(["--repos", str(tmp_path / "repos"), "--tasks", str(tmp_path / "tasks.json"),
                            "--store", str(tmp_path / "store"), "--no-bm25", "--out", str(tmp_path / "pf.json")]) == 0
    assert gates.main(["--pastfixes", str(tmp_path / "store"), "--tasks", str(tmp_path / "tasks.json"),
                       "--out", str(tmp_path / "gates.json")]) == 0
    result = json.loads((tmp_path / "gates.json").read_text())
    one = result["sets"]["past-fixes-dev"]
    assert one["answerable"] == 1 and set(one["variants"]) == set(gates.variants())
    assert one["variants"]["ungated"]["hit@1"] == 1.0 and one["thresholds"]["quiet_below"] > 0
    assert (tmp_path / "gates.md").read_text().startswith("# Gates: cost and saving per validation set")
