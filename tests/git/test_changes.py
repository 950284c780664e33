"""iter_changes and git.facts: a merged branch is one change with its commits; what a change
says about itself (PR, issues it closes, tests, error strings) reaches its card and terms."""

from __future__ import annotations

from pathlib import Path

import pytest
from git_helpers import HistoryRepo, commit, init_repo, write

from codemem.git.cards import commit_to_experience
from codemem.git.facts import change_facts, is_test_path, pr_number
from codemem.git.log import iter_changes, mainline_shas
from parsers import parse_diff


def test_first_parent_line_with_the_merge_holding_its_branch(history_repo: HistoryRepo) -> None:
    s = history_repo.shas
    records = list(iter_changes(str(history_repo.path)))
    assert [r.sha for r in records] == [s[c] for c in ("c8", "c7", "c5", "c4", "c3", "c2", "c1")]
    assert mainline_shas(str(history_repo.path)) == [r.sha for r in records]
    merge = records[0]
    assert merge.parents[1] == s["c6"]
    assert [sha for sha, _ in merge.branch] == [s["c6"]]
    assert merge.files == ["app/service.py"]  # its diff against the first parent: the branch's change
    exp = commit_to_experience(merge)
    assert exp.metadata["commit"] == s["c8"]
    assert exp.metadata["commits"] == [s["c8"], s["c6"]]
    assert "load" in exp.card.edited_symbols
    assert f"{s['c6'][:7]} Return None from Service.load" in exp.card.text
    assert exp.card.outcome.startswith(f"Merge {s['c8'][:10]} by Ada Lovelace")
    assert all(r.branch == () for r in records[1:])


def test_known_changes_are_not_read_again(history_repo: HistoryRepo) -> None:
    s = history_repo.shas
    path = str(history_repo.path)
    older = {s[c] for c in ("c1", "c2", "c3", "c4", "c5")}
    assert [r.sha for r in iter_changes(path, known=older)] == [s["c8"], s["c7"]]
    assert [r.sha for r in iter_changes(path, known=older | {s["c8"]})] == [s["c7"]]  # not a prefix
    assert list(iter_changes(path, known=set(mainline_shas(path)))) == []


def test_squash_commit_card_names_its_pr_issues_tests_and_errors(tmp_path: Path) -> None:
    repo = init_repo(tmp_path)
    write(tmp_path, "src/lexer.rs", "fn lex(s: &str) -> usize {\n    s.len()\n}\n")
    repo.git.add("-A")
    commit(repo, "Initial", 0)
    write(tmp_path, "src/lexer.rs", 'fn lex(s: &str) -> usize {\n    if s.is_empty() {\n'
          '        panic!("unterminated heredoc marker");\n    }\n    s.len()\n}\n')
    write(tmp_path, "tests/lexer.rs", "#[test]\nfn heredoc_without_end() {\n    lex(\"\");\n}\n")
    repo.git.add("-A")
    sha = commit(repo, "lexer: reject an unterminated heredoc (#5930)\n\nFixes #5929, see #17.\n", 1)
    repo.close()
    (rec, _) = list(iter_changes(str(tmp_path)))
    exp = commit_to_experience(rec)
    card = exp.card
    assert card.outcome.startswith(f"PR #5930, commit {sha[:10]} by Ada Lovelace")
    assert "closes #5929" in card.outcome
    assert card.tests_changed == ["tests/lexer.rs", "heredoc_without_end"]
    assert "unterminated heredoc marker" in card.errors
    assert "## Tests\nadded or changed: tests/lexer.rs, heredoc_without_end" in card.text
    assert exp.metadata == {"commit": sha, "commits": [sha], "date": "2024-01-02", "author": "Ada Lovelace",
                            "subject": "lexer: reject an unterminated heredoc (#5930)", "pr": 5930, "closes": [5929]}
    assert {"#5930", "#5929", "#17", "src/lexer.rs", "heredoc_without_end"} <= set(exp.terms)


def test_pr_numbers_and_issue_references() -> None:
    assert pr_number("Merge pull request #12 from dev/fix-lexer") == 12
    assert pr_number("Fix the lexer (#5930)") == 5930
    assert pr_number("Fix the lexer for #5930") is None
    facts = change_facts(["Fixed #123 -- toString on records\n\nCloses #4. Refs #9, owner/repo#11 too"], [])
    assert facts.closes == [123, 4]
    assert facts.mentions == [9]  # owner/repo#11 is another repository's number
    assert facts.pr is None


def test_test_paths_and_names_across_languages() -> None:
    for path in ("tests/a.rs", "pkg/x_test.go", "src/foo.test.ts", "test/transform/resource/after/A.java",
                 "src/FooTest.java", "app/test_views.py", "crates/core/tests/regression.rs"):
        assert is_test_path(path), path
    for path in ("src/testing_utils_impl.rs", "src/lexer.rs", "docs/contest.md"):
        assert not is_test_path(path), path
    diff = (
        "diff --git a/pkg/x_test.go b/pkg/x_test.go\n--- a/pkg/x_test.go\n+++ b/pkg/x_test.go\n"
        "@@ -1,1 +1,4 @@\n package pkg\n+func TestLexHeredoc(t *testing.T) {\n"
        '+\tt.Fatalf("lexer failed on heredoc")\n+}\n'
    )
    facts = change_facts(["x"], parse_diff(diff))
    assert facts.tests == ["pkg/x_test.go", "TestLexHeredoc"]
    assert facts.error_strings == ["lexer failed on heredoc"]


def _history_missing_a_blob(root: Path) -> tuple[list[str], str]:
    """c1 adds a.py, c2 and c3 edit it, c4 adds b.py; the blob of a.py as c2 left it is
    deleted from the object store (a broken clone), so git cannot diff c2 or c3."""
    repo = init_repo(root)
    shas = []
    for day, (path, text) in enumerate([("a.py", "def f():\n    return 1\n"), ("a.py", "def f():\n    return 2\n"),
                                        ("a.py", "def f():\n    return 3\n"), ("b.py", "def g():\n    return 0\n")]):
        write(root, path, text)
        repo.git.add("-A")
        shas.append(commit(repo, f"Change {path} ({day})", day))
    blob = repo.git.rev_parse(f"{shas[1]}:a.py")
    (root / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    repo.close()
    return shas, blob


def test_a_missing_object_skips_the_changes_that_need_it_not_the_walk(tmp_path: Path,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    shas, blob = _history_missing_a_blob(tmp_path)
    skipped: list[str] = []
    read = [r.sha for r in iter_changes(str(tmp_path), skipped=skipped)]
    assert read == [shas[3], shas[0]]
    assert skipped == [shas[2], shas[1]]
    warned = [r.getMessage() for r in caplog.records if r.name == "codemem.git.log"]
    assert len(warned) == 2 and shas[2][:12] in warned[0] and blob in warned[0]
    assert "missing" in warned[0]


def test_a_rerun_reads_only_the_changes_it_lacks_each_alone(tmp_path: Path) -> None:
    shas, _ = _history_missing_a_blob(tmp_path)
    skipped: list[str] = []
    read = [r.sha for r in iter_changes(str(tmp_path), known={shas[3]}, skipped=skipped)]
    assert read == [shas[0]] and skipped == [shas[2], shas[1]]  # not on top of the known one: read alone
    skipped.clear()
    assert list(iter_changes(str(tmp_path), known={shas[3], shas[0]}, skipped=skipped)) == []
    assert skipped == [shas[2], shas[1]]  # still unreadable, still named
