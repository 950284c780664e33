"""Every training source has its licence in one table (`train.licences`), and the trainers refuse
what it does not allow, whatever their command line says: a run with no licence is a check only
and never enters a training replay or fit; GPL text is never committed or learned as text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from train.decisions import DATA_FILES
from train.decisions.train import load as load_sentences
from train.decisions.train import text_source
from train.licences import LICENCES, Refused, licence_of, require_text, require_training
from train.past_fixes.build_data import HISTORIES
from train.ranker.agents import RUNS
from train.ranker.build_data import main as build_data
from train.ranker.train import load_sessions
from train.steps import CHECK_AGENTS, TRAINED_AGENTS

DECISIONS = Path(__file__).resolve().parents[2] / "train" / "decisions"


def test_every_source_the_training_reads_has_a_licence_in_the_table() -> None:
    for source in (*RUNS, *HISTORIES, "swe-verified-reuse", "multi-swe-bench", "codemem"):
        assert licence_of(source).spdx
    assert (TRAINED_AGENTS, CHECK_AGENTS) == (("mini", "vorflux"), ("openhands",))  # read from the table
    assert "NONE" in RUNS["openhands"].license
    with pytest.raises(Refused, match="not in the licence table"):
        licence_of("someone/unknown")
    notices = [e.notice for e in LICENCES.values() if e.notice]
    assert notices and all((DECISIONS.parent / "licences" / n).is_file() for n in notices)


def test_a_check_only_run_cannot_be_mixed_into_a_training_replay(tmp_path: Path) -> None:
    with pytest.raises(Refused, match="'openhands' \\(mixed into the 'mixed' replay\\)"):
        build_data(["--data", str(tmp_path), "--agent", f"mini={tmp_path}", "--agent", f"openhands={tmp_path}",
                    "--replays", "mixed", "--out", str(tmp_path / "out")])
    with pytest.raises(Refused):
        require_training("openhands")


def _sessions(folder: Path, agent: str) -> Path:
    folder.mkdir()
    card = {"id": "o__r-1", "instance_id": "o__r-1", "agent": agent, "replay": agent, "text": "## Task\nx",
            "refs": "", "metadata": "{}"}
    (folder / "cards.jsonl").write_text(json.dumps(card) + "\n")
    (folder / "queries.jsonl").write_text("")
    return folder


def test_the_ranker_trainer_refuses_sessions_of_a_run_whose_licence_forbids_training(tmp_path: Path) -> None:
    sessions = _sessions(tmp_path / "openhands", "openhands")
    with pytest.raises(Refused, match="openhands"):
        load_sessions(sessions)  # as --signals, whatever the folder is called
    assert load_sessions(sessions, trains=False) == []  # as --check-signals: scored, never fitted
    assert load_sessions(_sessions(tmp_path / "mini", "mini")) == []


def test_gpl_text_is_refused_as_a_training_sentence_and_none_is_committed(tmp_path: Path) -> None:
    assert text_source({"source": "commit-subject:pylint-dev/pylint"}) == "pylint-dev/pylint"
    assert text_source({"source": "agent-log:mini"}) == "mini"
    assert text_source({"source": "team-chat"}) == text_source({}) == "codemem"
    assert licence_of("pylint-dev/pylint").trains  # its history still trains the relevance model's numbers
    with pytest.raises(Refused):
        require_text("pylint-dev/pylint")
    gpl = tmp_path / "gpl.jsonl"
    gpl.write_text(json.dumps({"text": "Bump astroid to 3.3", "label": 1, "source": "commit-subject:pylint-dev/pylint"}) + "\n")
    with pytest.raises(Refused, match="pylint"):
        load_sentences([gpl])
    texts, labels = load_sentences([DECISIONS / name for name in DATA_FILES])  # the committed files pass
    assert len(texts) == len(labels) > 1500
