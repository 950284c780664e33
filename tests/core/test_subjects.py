"""A report's title finds the commit whose subject names the same fix in other word forms;
its opening prose reaches the title ranking; a memory without commits reads 0 in the commit
features."""

from __future__ import annotations

import json

from codemem.ranking.features import as_mapping, candidate_features
from codemem.ranking.query import parse_query, prose_words
from codemem.ranking.relevance import SessionSignals
from codemem.ranking.subjects import SubjectIndex, stems
from codemem.ranking.types import Candidate


def _card(key: str, subject: str, commit: bool = True) -> dict:
    meta = {"commit": "abc" + key, "subject": subject} if commit else {"edited_files": ["a.py"]}
    return {"session_key": key, "metadata": json.dumps(meta)}


def _index() -> SubjectIndex:
    return SubjectIndex.of_cards([
        _card("fix", "printer: fix duplicative replacement in multiline mode"),
        _card("flag", "args: add --passthru flag"),
        _card("docs", "doc: explain multiline search"),
        _card("session", "replacement duplicates lines in multiline output", commit=False),
        *(_card(f"other{i}", f"deps: bump crate{i}") for i in range(6)),
    ])


def test_stems_cut_words_and_drop_the_ones_that_say_nothing() -> None:
    assert stems("Replacing a multiline expression duplicates the lines") == ["repla", "multi", "expre", "dupli", "lines"]


def test_the_fix_ranks_first_for_a_title_in_other_word_forms() -> None:
    ranks = _index().ranks("Replacing a multiline expression duplicates non-matched lines", limit=10)
    assert ranks["fix"] == 1
    assert ranks["docs"] == 2  # shares only "multiline"
    assert "flag" not in ranks and "other0" not in ranks


def test_only_commit_experiences_are_indexed() -> None:
    index = _index()
    assert "session" not in index.commits and "fix" in index.commits
    assert SubjectIndex.of_cards([_card("s", "fix the multiline mode", commit=False)]).ranks("multiline mode", 10) == {}


def test_a_card_put_in_replaces_its_session_s_subject() -> None:
    before = SubjectIndex.of_cards([_card("fix", "fix multiline mode"), _card("other", "speed up the walker")])
    after = before.with_cards([_card("fix", "printer: handle colour flags")])
    assert after.ranks("multiline mode", 10) == {} and before.ranks("multiline mode", 10) == {"fix": 1}
    rebuilt = SubjectIndex.of_cards([_card("fix", "printer: handle colour flags"), _card("other", "speed up the walker")])
    assert (after.docs, after.lengths, after.df) == (rebuilt.docs, rebuilt.lengths, rebuilt.df)


def test_commit_rankings_read_zero_where_they_are_absent() -> None:
    found = {"lexical": [Candidate(id="a", score=2.0, fields={"session_key": "a"}),
                         Candidate(id="b", score=1.0, fields={"session_key": "b"})],
             "dense": [Candidate(id="b", score=0.9, fields={"session_key": "b"})]}
    plain = candidate_features(SessionSignals.of(found, {}), ["a", "b"])
    empty = candidate_features(SessionSignals.of(found, {}, {"title": {}, "subject": {}}), ["a", "b"])
    assert plain == empty and all(as_mapping(v)["subject_rr"] == 0.0 for v in plain.values())
    boosted = SessionSignals.of(found, {}, {"subject": {"a": 1}, "since": {"b": 1}})
    by_key = {k: as_mapping(v) for k, v in candidate_features(boosted, ["a", "b"]).items()}
    assert by_key["a"]["subject_rr"] == 1.0 and by_key["b"]["subject_rr"] == 0.0
    assert by_key["b"]["since_rr"] == 1.0 and by_key["a"]["since_rr"] == 0.0


def test_the_query_title_is_the_first_line_that_says_anything() -> None:
    query = parse_query("\n\n  `--multiline` with `--replace` causes duplicate output\n#### What version?")
    assert query.title == "`--multiline` with `--replace` causes duplicate output"
    assert query.title_bm25 == "multiline with replace causes duplicate output"


REPORT = """bug in passthru option
#### What version of ripgrep are you using?
#### Describe your bug.
Non-matching lines duplicated in the output, when using multiline options
```
rg --multiline --passthru -r '$2$1' EXAMPLE
```
DEBUG|rg::args|crates/core/args.rs:543: final argv
**Expected behavior**
Not duplicate the non-matching lines
"""


def test_prose_words_skip_the_title_code_headings_and_logs() -> None:
    words = prose_words(REPORT, 64)
    assert words[:6] == ["Non", "matching", "lines", "duplicated", "multiline", "options"]
    assert not {"passthru", "ripgrep", "version", "EXAMPLE", "argv", "Expected"} & set(words)
    assert prose_words(REPORT, 3) == ["Non", "matching", "lines"]


def test_the_title_ranking_query_reads_the_opening_prose() -> None:
    query = parse_query(REPORT)
    assert query.summary(0) == query.title_bm25 == "bug in passthru option"
    assert query.summary(4) == "bug in passthru option Non matching lines duplicated"
