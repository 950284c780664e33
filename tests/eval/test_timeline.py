"""The timeline fixtures and scorer (`eval/quality/timeline_fixtures.py`, `eval/quality/timeline.py`)."""

from __future__ import annotations

import json
import re

from eval.quality.timeline import DATA, Answer, load, score, summarize
from eval.quality.timeline_fixtures import CHANGE, FIRST


def test_the_fixtures_hold_enough_dev_questions_each_labelled_by_sessions_it_holds() -> None:
    dev, held = load("dev"), load("heldout")
    assert len(dev) >= 3 and len(held) >= 1
    assert sum(len(p["questions"]) for p in dev) >= 100
    for p in dev + held:
        ids = {s["id"] for s in p["sessions"]}
        for q in p["questions"]:
            assert set(q["sessions"]) <= ids and bool(q["sessions"]) == (q["kind"] != "absent")
    assert {json.loads(f.read_text())["split"] for f in DATA.glob("*.json")} == {"dev", "heldout"}


def test_held_out_projects_use_phrasings_of_their_own() -> None:
    def stem(template: str) -> str:
        return re.sub(r"\{\w+\}", "", template).strip(" .,;:")

    assert not {stem(t) for t in FIRST["dev"] + CHANGE["dev"]} & {stem(t) for t in FIRST["heldout"] + CHANGE["heldout"]}


def test_the_scorer_counts_newest_first_marks_and_quiet_answers() -> None:
    project = {
        "project": "p",
        "sessions": [{"id": "s1", "date": "2024-01-01T10:00:00Z"}, {"id": "s2", "date": "2024-02-01T10:00:00Z"}],
        "questions": [
            {"question": "now?", "kind": "update", "sessions": ["s2"], "related": ["s1", "s2"], "values": ["A", "B"]},
            {"question": "when?", "kind": "when", "sessions": ["s2"], "date": "2024-01-31"},
            {"question": "absent?", "kind": "absent", "sessions": []},
        ],
    }
    answers = {
        "now?": Answer(["s1", "s2"], ["we use A", "we switched from A to B"], [False, False]),
        "when?": Answer(["s2"], ['[2024-02-01] switched yesterday ("yesterday" = 2024-01-31)'], [False]),
        "absent?": Answer([], [], []),
    }
    rows = score(project, answers)
    assert rows[0]["newest_first"] is False and rows[0]["older_returned"] and rows[0]["older_marked"] is False
    assert rows[1]["date_shown"] is True and rows[1]["hit1"] is True
    summary = summarize(rows)
    assert summary["hit1"] == 0.5 and summary["newest_first"] == "0/1" and summary["older_marked"] == "0/1"
    assert summary["absent_quiet"] == 1.0 and summary["absent_tokens_ratio"] == 0.0
    answers["now?"] = Answer(["s2", "s1"], ["we switched from A to B", "we use A (superseded)"], [False, True])
    rows = score(project, answers)
    assert rows[0]["newest_first"] is True and rows[0]["older_marked"] is True
