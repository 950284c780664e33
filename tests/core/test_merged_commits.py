"""A merge found for one of its commits says which: the Search item names the inner commits
the query matched (codemem/ranking/merged.py), and the CLI and MCP text show them, with the
merge's author, by subject and short SHA."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.results import format_hit
from codemem.compact import compact
from codemem.contract.types import Hit, SearchRequest
from codemem.importers.git import ingest_git
from codemem.memory import Memory
from codemem.ranking.merged import matching_commits, merged_of, name_matched_commits
from integrations import mcp_text
from tests.history import AUTHORS, MERGE_SUBJECT, SUBJECT_TWICE, History, build_history

BRANCH = [
    ("5" * 40, SUBJECT_TWICE),
    ("2" * 40, "send_file rejects text file objects"),
    ("8" * 40, "Fix type annotation for errorhandler"),
    ("9" * 40, "Blueprint names may not contain dots"),
]


def test_the_commits_whose_subjects_share_the_querys_words_are_picked() -> None:
    assert matching_commits("registering a blueprint twice", BRANCH) == [BRANCH[0]]
    # One telling word is enough when the query has only one; the rarer shared words weigh more.
    assert matching_commits("blueprint", BRANCH) == [BRANCH[0], BRANCH[3]]
    assert matching_commits("Type annotation of errorhandler is wrong", BRANCH) == [BRANCH[2]]
    # One shared word of a longer query matches nothing: the merge is shown as before.
    assert matching_commits("the blueprint loader leaks memory", BRANCH) == []
    assert matching_commits("", BRANCH) == [] and matching_commits("blueprint", []) == []


def test_cards_stored_before_the_branch_was_kept_are_read_from_their_commits_list() -> None:
    card = ("## Task\nMerge branch '2.0.x'\n\nCommits:\n- 5540408 Fix registering a blueprint twice\n"
            "- 29e5703 send_file rejects text file objects\n\n## Outcome\nMerge 62742cdd16 by D on 2021-05-21")
    assert merged_of({"commit": "62742cdd16"}, card) == [("5540408", "Fix registering a blueprint twice"),
                                                         ("29e5703", "send_file rejects text file objects")]
    assert merged_of({}, card) == []  # not a commit experience
    assert merged_of({"commit": "x", "merged": [["a" * 40, "Subject"]]}, card) == [("a" * 40, "Subject")]
    hit = Hit(id="c_1", content=card, score=1.0, created_at="2021-05-21T18:00:00.000Z", session_id="git:x",
              metadata={"kind": "card", "commit": "62742cdd16"})
    (named,) = name_matched_commits([hit], "registering a blueprint twice")
    assert named.metadata["matched_commits"] == [{"sha": "5540408", "subject": "Fix registering a blueprint twice"}]


@pytest.fixture
def imported(memory: Memory, tmp_path: Path) -> History:
    history = build_history(tmp_path / "flask")
    ingest_git(memory, str(history.path), "repo", progress=False)
    return history


def _merge_hit(memory: Memory, history: History, query: str) -> Hit:
    hits = memory.search(SearchRequest(user_id="repo", query=query, top_k=20))
    return next(h for h in hits if h.session_id == f"git:{history.shas['merge']}" and h.metadata["kind"] == "card")


def test_a_merge_found_for_an_inner_commit_names_it_everywhere(memory: Memory, imported: History) -> None:
    hit = _merge_hit(memory, imported, "registering a blueprint twice")
    twice = imported.shas["twice"]
    assert hit.metadata["matched_commits"] == [{"sha": twice, "subject": SUBJECT_TWICE}]
    assert "merged" not in hit.metadata  # the branch's whole list stays on the stored card

    lines = format_hit(1, hit).splitlines()
    assert lines[0] == f"#1  {MERGE_SUBJECT}"
    assert lines[1].startswith(f"    merge {imported.shas['merge'][:12]}  2021-05-21 18:00 UTC  by {AUTHORS['david']}")
    at = lines.index("    matched in this merge:")
    assert lines[at + 1] == f"      {twice[:7]} {SUBJECT_TWICE}"

    text = mcp_text.search_answer(compact([hit], 5, 1500, lambda _: ""), "repo", 1500)
    assert f"Commits of this merge that match the query:\n- {twice[:7]} {SUBJECT_TWICE}\n" in text
    assert 'at="2021-05-21T18:00:00Z"' in text


def test_a_merge_found_for_its_own_words_names_no_commit(memory: Memory, imported: History) -> None:
    hit = _merge_hit(memory, imported, "Merge remote-tracking branch origin into main")
    assert "matched_commits" not in hit.metadata
    assert "matched in this merge" not in format_hit(1, hit)
