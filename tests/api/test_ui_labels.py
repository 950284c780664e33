"""How the pages label what they show (api/ui/filters.py): counts with thousands separators,
an experience named by its kind (a commit's steps are its diff, not "message 0"), a
commit's subject as its headline with sha, author and size below it."""

from __future__ import annotations

from api.ui.filters import (
    byline,
    count,
    headline,
    kind_of,
    matched_commits,
    step_place,
    when,
    when_iso,
)

COMMIT = {"commit": "33850c0ebd1f" + "0" * 28, "commits": ["33850c0ebd1f" + "0" * 28], "author": "David Lord",
          "subject": "Fix registering a blueprint twice with differing names",
          "outcome": "Commit 33850c0ebd by David Lord on 2021-05-14: 2 files, +19 -1"}
MERGE = {**COMMIT, "commit": "a" * 40, "commits": ["a" * 40, "b" * 40], "subject": "Merge remote-tracking branch 'origin/2.0.x' into main",
         "outcome": "Merge aaaaaaaaaa by David Lord on 2021-05-21: 4 files, +40 -1; 3 branch commits"}
CARD = "## Task\nSquare.area returns twice the side\n\n## Outcome\nEdited pkg/shapes.py"


def test_counts_have_thousands_separators() -> None:
    assert [count(n) for n in (0, 999, 13813, 1_234_567)] == ["0", "999", "13,813", "1,234,567"]
    assert count("?") == "?" and count(True) == "True"


def test_an_experience_is_named_by_its_kind() -> None:
    assert [kind_of(m) for m in (COMMIT, MERGE, {"conversation": True}, {})] == [
        "commit", "merge", "conversation", "session"]
    assert step_place("commit", 0) == "the commit's diff" and step_place("merge", 3) == "the merge's diff"
    assert step_place("session", 4) == "message 4"


def test_a_commit_is_headed_by_its_subject_with_sha_author_and_size_below() -> None:
    assert headline("## Task\nFix registering ...\n\n## Outcome\nCommit 33850c0ebd by ...", COMMIT) == COMMIT["subject"]
    assert byline(COMMIT, "git:x") == ["commit 33850c0ebd", "by David Lord", "2 files, +19 -1"]
    assert byline(MERGE, "git:y")[0] == "merge aaaaaaaaaa"
    assert headline(CARD, {}) == "Square.area returns twice the side"
    assert byline({"outcome": "Edited pkg/shapes.py"}, "s-1") == ["session s-1", "Edited pkg/shapes.py"]


def test_times_and_matched_commits() -> None:
    assert when(1_304_067_200_000) == "2011-04-29 08:53:20 UTC" and when(None) == "" and when(2**62) == ""
    assert when_iso("2021-05-21T18:00:00.000Z") == "2021-05-21 18:00:00 UTC"
    assert matched_commits({"matched_commits": [{"sha": "5540408e8d", "subject": "Fix it"}]}) == [("5540408", "Fix it")]
    assert matched_commits({}) == []
