"""Fresh by content (`train.content_check`): a training text that shares a run of 8 words with a
validation text, asks a near-duplicate question, or tells the same project (its name, its chain of
values) is flagged with the pair named, and `python -m train` refuses to run; the repository's own
training files copy no validation text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval._paths import SHARED_DATA
from train.__main__ import COPIES
from train.__main__ import main as make_train
from train.content_check import Text, check, prose, repository_matches, words


def _project(root: Path, name: str, project: str, message: str, question: str, values: list[str]) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"project": project, "split": "train", "sessions": [
        {"id": "s01", "messages": [{"role": "user", "content": message}]}],
        "questions": [{"question": question, "kind": "update", "values": values}]}))
    return path


def test_each_rule_flags_its_copy_and_names_the_pair() -> None:
    training = [Text("t.json", "s01 message 1", "body",
                     "Yesterday Priya moved the nightly export job over to the new batch cluster in Frankfurt."),
                Text("t.json", "question 1", "question", "Which message broker does the billing service publish to?"),
                Text("t.json", "project", "name", "Heron-Pay"),
                Text("t.json", "question 1 values", "chain", "rabbitmq -> kafka -> rabbitmq")]
    validation = [Text("v.json", "s03 message 2", "body",
                       "ok so the nightly export job over to the new batch cluster went fine"),
                  Text("v.json", "question 4", "question", "Which message broker does the billing service use?"),
                  Text("v.json", "project", "name", "heron pay"),
                  Text("v.json", "question 9 values", "chain", "rabbitmq -> kafka -> rabbitmq")]
    found = {m.rule: m for m in check(training, validation)}
    assert set(found) == {"8-word run", "near-duplicate", "same project name", "same chain of values"}
    assert "job over to the new batch cluster" in found["8-word run"].detail
    assert found["near-duplicate"].line().startswith("t.json (question 1) and v.json (question 4): near-duplicate")


def test_look_alikes_that_tell_another_story_pass() -> None:
    training = [Text("t.json", "question 1", "question", "Are we still on Airflow?"),
                Text("t.json", "question 2", "question", "What did we use for search before Meilisearch?"),
                Text("t.json", "s01 message 1", "body", "```yaml\nruns-on: ubuntu-latest\nsteps:\n  - uses: actions/checkout@v4\n"
                                                        "  - uses: actions/setup-node@v4\n```\nSwitched the runner."),
                Text("t.json", "question 1 values", "chain", "airflow -> dagster")]
    validation = [Text("v.json", "question 1", "question", "Are we still on Sidekiq?"),
                  Text("v.json", "question 2", "question", "What did we use for saves before Newtonsoft?"),
                  Text("v.json", "s01 message 1", "body", "```yaml\nruns-on: ubuntu-latest\nsteps:\n  - uses: actions/checkout@v4\n"
                                                          "  - uses: actions/setup-node@v4\n```\nMoved CI."),
                  Text("v.json", "question 1 values", "chain", "airflow -> prefect")]
    assert check(training, validation) == []
    assert "checkout" not in words(prose("see ```yaml\nuses: actions/checkout@v4\n```"))


def test_make_train_refuses_a_training_file_that_copies_validation_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "repo"
    _project(root, "train/ranker/projects/x1.json", "otterline", "We settled on pnpm for the monorepo.",
             "Which package manager does the otterline monorepo install with?", ["npm", "pnpm"])
    _project(root, "eval/data/timeline-fresh9/y1.json", "otterline", "Something else entirely was said here.",
             "Which package manager does the monorepo install with?", ["yarn", "bun"])
    shared = tmp_path / "shared"
    shared.mkdir()
    monkeypatch.setattr("train.__main__.REPO_ROOT", root)
    code = make_train(["--cache", str(tmp_path / "cache"), "--shared", str(shared), "--allow-dirty", "--no-install"])
    out = capsys.readouterr().out
    assert code == COPIES and "refusing to train: 2 training file(s) match validation text" in out
    assert ("train/ranker/projects/x1.json (project) and eval/data/timeline-fresh9/y1.json (project): same project name"
            in out)
    assert not (tmp_path / "cache").exists()


def test_the_repository_s_training_files_copy_no_validation_text() -> None:
    matches = repository_matches(shared=SHARED_DATA)
    assert not matches, "\n".join(m.line() for m in matches)
