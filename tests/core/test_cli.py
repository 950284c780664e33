"""The `codemem` command: search prints readable results, purge and delete-user erase."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.main import main, parse_age
from codemem.config import Settings
from codemem.embedding import MiniLMEmbedder
from codemem.memory import Memory
from codemem.models import AddRequest, Message


@pytest.fixture
def filled(tmp_path: Path, embedder: MiniLMEmbedder) -> str:
    data = str(tmp_path / "data")
    m = Memory(Settings(data_dir=data, compact_interval_s=0), embedder=embedder)
    m.add(AddRequest("r1", "dev", "sess-1", [
        Message("user", "Fix the crash in parsers/diff.py when a hunk header has no context"),
        Message("assistant", "The crash came from an IndexError in parse_hunk_header; I guarded the split."),
    ]))
    m.add(AddRequest("r2", "dev", "sess-2", [Message("user", "Bump the docs theme version")]))
    m.close()
    return data


def test_search_prints_ranked_readable_results(filled: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", "--data-dir", filled, "--user-id", "dev", "IndexError in parse_hunk_header"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("#1  score ")
    assert "session sess-1" in out.splitlines()[0]
    assert "card" in out.splitlines()[0]
    assert "guarded the split" in out.split("session sess-2")[0]
    assert "{" not in out.splitlines()[0]


def test_search_json_is_the_contract_shape(filled: str, capsys: pytest.CaptureFixture[str]) -> None:
    main(["search", "--data-dir", filled, "--user-id", "dev", "--top-k", "2", "--json", "docs theme"])
    body = json.loads(capsys.readouterr().out)
    assert 1 <= len(body["data"]) <= 2
    best = body["data"][0]
    # One experience per item: the card, with the matching message inlined as evidence.
    assert best["metadata"]["kind"] == "card" and len(best["metadata"]["evidence"]) >= 1
    assert "Bump the docs theme version" in best["content"].split("Evidence from this session:")[1]


def test_search_of_unknown_user_says_so(filled: str, capsys: pytest.CaptureFixture[str]) -> None:
    main(["search", "--data-dir", filled, "--user-id", "stranger", "anything"])
    assert capsys.readouterr().out.strip() == "No memories match."


def test_purge_removes_only_older_memories(filled: str, capsys: pytest.CaptureFixture[str]) -> None:
    main(["purge", "--data-dir", filled, "--older-than", "30d"])
    assert "Removed 0 memories" in capsys.readouterr().out
    main(["purge", "--data-dir", filled, "--older-than", "0s"])
    assert "Removed 5 memories" in capsys.readouterr().out  # 3 messages and 2 session cards
    main(["search", "--data-dir", filled, "--user-id", "dev", "crash"])
    assert "No memories match." in capsys.readouterr().out


def test_delete_user(filled: str, capsys: pytest.CaptureFixture[str]) -> None:
    main(["delete-user", "--data-dir", filled, "--user-id", "dev"])
    assert "Removed 5 memories of user 'dev'" in capsys.readouterr().out


@pytest.mark.parametrize("text, seconds", [("30d", 30 * 86400), ("12h", 43200), ("90m", 5400), ("2w", 1209600)])
def test_parse_age(text: str, seconds: int) -> None:
    assert parse_age(text).total_seconds() == seconds


def test_parse_age_rejects_nonsense() -> None:
    with pytest.raises(Exception, match="not an age"):
        parse_age("soon")
