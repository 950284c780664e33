"""train.encoder.pairs: what the encoder's pairs leave out. No evaluation repository is read,
and a change whose message copies an evaluation text (an 8-word run) is dropped, whatever
its repository."""

from __future__ import annotations

from train.content_check import Text
from train.data import NEVER_REPOS
from train.encoder.pairs import ENCODER_HISTORIES, fresh, histories


def test_no_evaluation_repository_is_among_the_histories() -> None:
    names = {r.lower() for r in histories()}
    assert not names & NEVER_REPOS
    assert {r.lower() for r in ENCODER_HISTORIES} <= names and len(names) >= 40


def test_a_message_that_copies_a_validation_text_is_left_out() -> None:
    report = ("Saving a model with a composite key raises an integrity error when the second column is null "
              "and the database is SQLite")
    validation = [Text("shared/data/some-dev/tasks.json", "t-1", "body", report)]
    pairs = [
        {"repo": "a/b", "sha": "1", "message": "Fix crash: " + report.lower() + ".", "code": "x"},
        {"repo": "a/b", "sha": "2", "message": "Composite keys: allow a null second column on SQLite", "code": "y"},
        {"repo": "c/d", "sha": "1", "message": "Docs: saving a model with a composite key",
         "code": "z"},  # seven words in a row: kept
    ]
    kept, dropped = fresh(pairs, validation)
    assert dropped == ["a/b@1"]
    assert [(p["repo"], p["sha"]) for p in kept] == [("a/b", "2"), ("c/d", "1")]
