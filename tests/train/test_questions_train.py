"""The question reader's trainer (`train.questions.train`): it learns from the training
projects' questions by their kinds, writes a card the shipped reader loads and that reads as
scikit-learn fitted, and refuses evaluation projects."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codemem.timeline.questions import CLASSES, QuestionReader
from train.questions.train import LABELS
from train.questions.train import main as train_questions

SUBJECTS = ("queue", "linter", "database", "host", "bundler", "logger")


def _project(folder: Path, name: str, split: str = "train") -> None:
    questions = []
    for s in SUBJECTS:
        questions += [{"question": f"which {s} do we run these days?", "kind": "update"},
                      {"question": f"when did the {s} change?", "kind": "when"},
                      {"question": f"what did we have for the {s} before the switch?", "kind": "before"},
                      {"question": f"what was the {s} back in march?", "kind": "asof"},
                      {"question": f"list every {s} we have had", "kind": "multi"},
                      {"question": f"do we have a {s} policy?", "kind": "absent"}]
    (folder / f"{name}.json").write_text(json.dumps({"project": name, "split": split, "sessions": [], "questions": questions}))


def test_it_trains_a_reader_that_loads_and_tells_the_classes_apart(tmp_path: Path) -> None:
    folder = tmp_path / "projects"
    folder.mkdir()
    for i in range(5):
        _project(folder, f"p{i}")
    out = tmp_path / "questions.json"
    assert train_questions(["--projects", str(folder), "--out", str(out), "--allow-dirty"]) == 0
    card = json.loads(out.read_text())
    assert card["classes"] == list(CLASSES) and card["trained_on"]["projects_count"] == 5
    # absent questions say nothing of time: left out; the others counted by their class
    assert sum(card["trained_on"]["questions"].values()) == 5 * len(SUBJECTS) * len(LABELS)
    assert card["cv"]["accuracy"] > 0.9  # held-out projects: the phrasings are shared, the subjects too
    QuestionReader.load(out)  # and the trainer checked it reads as scikit-learn fitted


def test_an_evaluation_project_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "projects"
    folder.mkdir()
    for i in range(4):
        _project(folder, f"p{i}")
    _project(folder, "fresh", split="fresh2")
    with pytest.raises(SystemExit, match="not training data"):
        train_questions(["--projects", str(folder), "--out", str(tmp_path / "q.json"), "--allow-dirty"])
    with pytest.raises(SystemExit, match="evaluation set"):
        train_questions(["--projects", str(tmp_path / "timeline-fresh2"), "--out", str(tmp_path / "q.json"), "--allow-dirty"])
