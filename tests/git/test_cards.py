"""commit_to_experience: the card, steps and terms a commit becomes."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from git_helpers import HistoryRepo, commit, init_repo, write

from codemem.git.cards import commit_to_experience
from codemem.git.log import iter_commits
from codemem.git.records import CommitRecord


def record(history_repo: HistoryRepo, name: str) -> CommitRecord:
    sha = history_repo.shas[name]
    return next(r for r in iter_commits(str(history_repo.path)) if r.sha == sha)


def test_fix_commit_card(history_repo: HistoryRepo) -> None:
    rec = record(history_repo, "c2")
    exp = commit_to_experience(rec)
    card = exp.card
    assert card.task.startswith("Fix KeyError in Service.save when the cache is empty\n\n")
    assert "Signed-off-by" not in card.task
    assert card.outcome == f"Commit {rec.sha[:10]} by Ada Lovelace on 2024-01-02: 1 file, +2 -0"
    assert card.edited_files == ["app/service.py"]
    # git's python driver names the method in the hunk header (the class is not known)
    assert card.edited_symbols == ["save"]
    assert "KeyError" in card.errors
    assert card.tests_passed is None
    assert card.final_diff == rec.diff
    # the same renderer as a session's card: one index reads one shape
    assert card.text.startswith("## Task\nFix KeyError in Service.save")
    for part in (card.outcome, "files: app/service.py", "symbols: save", "## Final diff", "self._read()"):
        assert part in card.text
    assert len(card.text) <= 4000

    (step,) = exp.steps
    assert (step.kind, step.position, step.files) == ("edit", 0, ["app/service.py"])
    assert step.symbols == ["save"]
    assert step.text.startswith("app/service.py (modified, +2 -0)")
    assert "+            self.cache = self._read()" in step.text

    terms = set(exp.terms)
    assert "app/service.py" in terms
    assert "keyerror" in terms
    assert {"save", "service.save"} <= terms  # the message names Service.save


def test_rename_binary_and_other_language(history_repo: HistoryRepo) -> None:
    renamed = commit_to_experience(record(history_repo, "c3"))
    (step,) = renamed.steps
    assert "renamed from web/util.js" in step.text
    assert step.files == ["web/dates.js", "web/util.js"]
    assert "formatDate" in renamed.card.edited_symbols

    binary = commit_to_experience(record(history_repo, "c4"))
    assert binary.card.edited_files == ["assets/logo.png"]
    assert binary.card.edited_symbols == []
    (bstep,) = binary.steps
    assert "no text diff" in bstep.text
    assert "+0 -0" in binary.card.outcome

    feature = commit_to_experience(record(history_repo, "c6"))
    assert feature.card.edited_symbols == ["load"]  # `def save` is only in trailing context

    js = commit_to_experience(record(history_repo, "c7"))
    by_file = {s.files[0]: s.symbols for s in js.steps}
    assert by_file["web/dates.js"] == ["parseDate"]
    assert by_file["web/store.js"] == ["save"]  # the method, not just `class Store`


def test_card_is_bounded(tmp_path: Path) -> None:
    repo = init_repo(tmp_path)
    for i in range(80):
        body = "".join(f"    x{j} = {j}\n" for j in range(200))
        write(tmp_path, f"pkg/mod_{i}.py", f"def handler_{i}():\n{body}    return x0\n")
    repo.git.add("-A")
    commit(repo, "Add 80 handlers\n\n" + "Long rationale. " * 400, 0)
    repo.close()

    (rec,) = list(iter_commits(str(tmp_path)))
    exp = commit_to_experience(rec, max_card_chars=1500)
    assert len(exp.card.text) <= 1500
    assert len(exp.card.task) <= 1500
    assert len(exp.card.final_diff) <= 1500
    assert exp.card.final_diff.endswith("(diff trimmed)")
    assert len(exp.steps) == 64  # steps are capped; the file list is not
    assert len(exp.card.edited_files) == 80
    assert [s.position for s in exp.steps] == list(range(64))
    assert all(len(s.text) <= 1_500 for s in exp.steps)


def test_handmade_record_without_counts() -> None:
    diff = (
        "diff --git a/lib/calc.py b/lib/calc.py\n"
        "--- a/lib/calc.py\n+++ b/lib/calc.py\n"
        "@@ -1,3 +1,3 @@ def divide(a, b):\n"
        "     if b == 0:\n-        return 0\n+        raise ZeroDivisionError('b is zero')\n"
        "     return a / b\n"
    )
    rec = CommitRecord(
        sha="0123456789abcdef",
        author="Bob",
        authored_at=datetime(2023, 5, 6, 23, 30, tzinfo=UTC),
        message="Raise ZeroDivisionError instead of returning 0",
        diff=diff,
        files=["lib/calc.py"],
    )
    exp = commit_to_experience(rec)
    assert exp.card.outcome == "Commit 0123456789 by Bob on 2023-05-06: 1 file, +1 -1"
    assert "ZeroDivisionError" in exp.card.errors
    assert "divide" in exp.card.edited_symbols


def test_empty_commit(tmp_path: Path) -> None:
    repo = init_repo(tmp_path)
    repo.git.commit("-q", "--allow-empty", "-m", "Empty")
    repo.close()
    (rec,) = list(iter_commits(str(tmp_path)))
    assert (rec.files, rec.diff) == ([], "")
    exp = commit_to_experience(rec)
    assert exp.steps == []
    assert exp.card.outcome.endswith(": 0 files, +0 -0")
