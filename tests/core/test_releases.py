"""A change names the release it came after (read from the repository's version tags); a
report's version is read next to the project's name; the changes released since it tie first
in a ranking of their own, in a memory of commits only."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import git
import pytest

from codemem.contract.types import SearchRequest
from codemem.git.releases import Releases
from codemem.importers.git import ingest_git
from codemem.memory import Memory
from codemem.ranking.recipes import DEFAULT_SEARCH
from codemem.ranking.releases import ReleaseIndex
from codemem.store.schema import key_of


def _t(day: int) -> float:
    return datetime(2020, 1, day, tzinfo=UTC).timestamp()


def test_a_change_comes_after_the_highest_version_released_before_it() -> None:
    releases = Releases.of_tags([("v1.0.0", _t(1)), ("v1.1.0", _t(10)), ("v1.0.1", _t(20)),  # a patch of the old line
                                 ("lib-util-0.7.1", _t(5)), ("v2.0.0-beta.1", _t(25))], ["proj"])
    assert releases.after(datetime(2020, 1, 1, tzinfo=UTC)) is None  # the release itself is not after it
    assert releases.after(datetime(2020, 1, 6, tzinfo=UTC)) == "1.0.0"  # lib-util is another crate
    assert releases.after(datetime(2020, 1, 22, tzinfo=UTC)) == "1.1.0"  # not 1.0.1
    assert releases.after(datetime(2020, 1, 28, tzinfo=UTC)) == "1.1.0"  # a pre-release is no release


def test_tags_that_all_carry_the_project_s_name_name_it() -> None:
    releases = Releases.of_tags([("tokio-0.2.18", _t(1)), ("tokio-0.2.19", _t(9)), ("tokio-macros-0.2.5", _t(5))], ["repo"])
    assert releases.names == ("repo", "tokio")
    assert releases.after(datetime(2020, 1, 6, tzinfo=UTC)) == "0.2.18"


def _index() -> ReleaseIndex:
    cards = [{"session_key": key, "metadata": json.dumps({"commit": key, "after_release": after, "project": ["tokio"]})}
             for key, after in (("old", "0.2.12"), ("fix", "0.2.18"), ("later", "1.41.0"))]
    return ReleaseIndex.of_cards([*cards, {"session_key": "session", "metadata": json.dumps({"edited_files": ["a.rs"]})}])


def test_the_reported_version_is_the_one_next_to_the_project_s_name() -> None:
    index = _index()
    assert index.reported("## Version\nrustc 1.41.0 (5e1a79984 2020-01-27)\ntokio: 0.2.18\n") == (0, 2, 18)
    assert index.reported("Using tokio v0.2.12 on Linux") == (0, 2, 12)
    assert index.reported("broke with 1.41.0 here") == (1, 41)  # no name: one of the project's releases
    assert index.reported("javac 11.0.10 on 10.10.10.10 and 0.2.18.4") is None  # no release, an address, a longer number
    assert ReleaseIndex().reported("tokio 0.2.18") is None  # a memory without releases


def test_changes_released_since_the_reported_version() -> None:
    index = _index()
    assert index.since((0, 2, 18), ["old", "fix", "later", "session", "unknown"]) == ["fix", "later"]
    again = index.with_cards([{"session_key": "fix", "metadata": json.dumps({"edited_files": ["a.rs"]})}])
    assert again.since((0, 2, 18), ["fix", "later"]) == ["later"] and index.since((0, 2, 18), ["fix"]) == ["fix"]


def _commit(repo: git.Repo, path: Path, name: str, text: str, message: str, day: int) -> None:
    (path / name).write_text(text)
    repo.index.add([name])
    when = f"2020-01-{day:02d}T12:00:00"
    repo.index.commit(message, author_date=when, commit_date=when)


REPORT = "divide by a zero divisor\n\nSeen with calc 1.1.0: divide(1, 0) returns 0 instead of raising."


def _calc(memory: Memory, tmp_path: Path) -> dict[str, str | None]:
    """A three-change history with two releases, imported; each change's subject -> the release it follows."""
    path = tmp_path / "calc"
    repo = git.Repo.init(path)
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "Dev")
        cw.set_value("user", "email", "dev@example.com")
    _commit(repo, path, "calc.py", "def divide(a, b):\n    return a / b\n", "Add divide", 1)
    repo.create_tag("v1.0.0")
    _commit(repo, path, "calc.py", "def divide(a, b):\n    return a / b if b else 0\n", "divide: zero divisor", 5)
    repo.create_tag("v1.1.0")
    _commit(repo, path, "calc.py", "def divide(a, b):\n    if b == 0:\n        raise ValueError\n    return a / b\n",
            "divide: raise ValueError on a zero divisor", 9)
    ingest_git(memory, str(path), "dev", progress=False)
    cards = memory.store.user_rows(key_of("dev"), "card", ["session_key", "metadata"])
    return {json.loads(c["metadata"])["subject"]: json.loads(c["metadata"]).get("after_release") for c in cards}


def test_an_import_marks_each_change_with_its_release_and_a_report_naming_one_finds_those_since(
        memory: Memory, tmp_path: Path) -> None:
    after = _calc(memory, tmp_path)
    assert after == {"Add divide": None, "divide: zero divisor": "1.0.0", "divide: raise ValueError on a zero divisor": "1.1.0"}
    cards = memory.store.user_rows(key_of("dev"), "card", ["session_key", "metadata"])
    assert all(json.loads(c["metadata"])["project"] == ["calc"] for c in cards if "after_release" in c["metadata"])
    signals, _ = memory.signals("dev", REPORT, DEFAULT_SEARCH, DEFAULT_SEARCH.retrieval.candidates)
    newest = next(str(c["session_key"]) for c in cards if after[json.loads(c["metadata"])["subject"]] == "1.1.0")
    assert signals.commit_ranks["since"] == {newest: 1}
    plain, _ = memory.signals("dev", "divide by a zero divisor returns 0", DEFAULT_SEARCH, DEFAULT_SEARCH.retrieval.candidates)
    assert "since" not in plain.commit_ranks  # no version named


@pytest.mark.xfail(strict=True, reason="the relevance model retrained for issue 53 (card at 5c817e9) puts the change "
                   "before the release, 'divide: zero divisor' (P 0.993, the report's words), above the one since it "
                   "(P 0.972, since_rank 1); the model of 439635b put the one since first")
def test_search_puts_the_change_since_the_reported_release_first(memory: Memory, tmp_path: Path) -> None:
    _calc(memory, tmp_path)
    first = memory.search(SearchRequest(user_id="dev", query=REPORT, top_k=3))[0].metadata
    assert first["subject"] == "divide: raise ValueError on a zero divisor"
    assert first["signals"]["since_rank"] == 1
