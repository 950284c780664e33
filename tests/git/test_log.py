"""iter_commits against real repositories built with GitPython."""

from __future__ import annotations

import io
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import git
import pytest
from git_helpers import BASE, HistoryRepo, commit, commit_raw, init_repo, write

from codemem.git import records as git_records
from codemem.git.log import iter_commits
from codemem.git.records import CommitRecord


def shas_of(records: list[CommitRecord]) -> list[str]:
    return [r.sha for r in records]


def test_newest_first_merges_skipped(history_repo: HistoryRepo) -> None:
    records = list(iter_commits(str(history_repo.path)))
    s = history_repo.shas
    assert shas_of(records) == [s["c7"], s["c6"], s["c5"], s["c4"], s["c3"], s["c2"], s["c1"]]
    first = records[-1]
    assert first.author == "Ada Lovelace"
    assert first.authored_at == BASE
    assert first.authored_at.tzinfo is not None
    assert sorted(first.files) == ["README.md", "app/service.py", "web/store.js", "web/util.js"]


def test_fix_commit_fields(history_repo: HistoryRepo) -> None:
    rec = next(r for r in iter_commits(str(history_repo.path)) if r.sha == history_repo.shas["c2"])
    assert rec.message.startswith("Fix KeyError in Service.save")
    assert rec.files == ["app/service.py"]
    assert (rec.added, rec.removed) == (2, 0)
    assert "+            self.cache = self._read()" in rec.diff
    assert rec.diff.startswith("diff --git a/app/service.py b/app/service.py")
    assert not rec.diff_truncated


def test_rename_binary_and_non_utf8(history_repo: HistoryRepo) -> None:
    by_sha = {r.sha: r for r in iter_commits(str(history_repo.path))}
    renamed = by_sha[history_repo.shas["c3"]]
    assert renamed.files == ["web/dates.js"]
    assert "rename from web/util.js" in renamed.diff
    assert "rename to web/dates.js" in renamed.diff

    binary = by_sha[history_repo.shas["c4"]]
    assert binary.files == ["assets/logo.png"]
    assert binary.diff == ""  # the binary file's section is dropped
    assert (binary.added, binary.removed) == (0, 0)

    latin = by_sha[history_repo.shas["c5"]]
    assert latin.message == "Caf\ufffd readme update in latin-1"
    assert latin.files == ["README.md"]
    assert "+Caf\ufffd edition." in latin.diff


def test_since_and_max_commits(history_repo: HistoryRepo) -> None:
    s = history_repo.shas
    path = str(history_repo.path)
    since = datetime(2024, 1, 5, 0, 0, tzinfo=UTC)
    assert shas_of(list(iter_commits(path, since=since))) == [s["c7"], s["c6"], s["c5"]]
    naive = datetime(2024, 1, 6, 0, 0)  # taken as UTC
    assert shas_of(list(iter_commits(path, since=naive))) == [s["c7"], s["c6"]]
    assert shas_of(list(iter_commits(path, max_commits=2))) == [s["c7"], s["c6"]]
    assert list(iter_commits(path, max_commits=0)) == []
    assert list(iter_commits(path, since=datetime(2030, 1, 1, tzinfo=UTC))) == []


def test_branch(history_repo: HistoryRepo) -> None:
    s = history_repo.shas
    got = shas_of(list(iter_commits(str(history_repo.path), branch="feature")))
    assert got == [s["c6"], s["c5"], s["c4"], s["c3"], s["c2"], s["c1"]]
    with pytest.raises(ValueError, match="not found"):
        list(iter_commits(str(history_repo.path), branch="no-such-branch"))
    with pytest.raises(ValueError, match="not found"):
        list(iter_commits(str(history_repo.path), branch="--output=/tmp/x"))


def test_not_a_repository(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a git repository"):
        iter_commits(str(tmp_path))  # raised at call time, before iteration
    with pytest.raises(ValueError, match="not a git repository"):
        list(iter_commits(str(tmp_path / "missing")))
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(ValueError, match="not a git repository"):
        list(iter_commits(str(tmp_path / "file.txt")))


def test_bare_clone_and_subdirectory(history_repo: HistoryRepo, tmp_path: Path) -> None:
    bare = tmp_path / "bare.git"
    git.Repo(history_repo.path).clone(str(bare), bare=True).close()
    got = shas_of(list(iter_commits(str(bare), max_commits=3)))
    assert got == [history_repo.shas[c] for c in ("c7", "c6", "c5")]
    with pytest.raises(ValueError, match="top-level"):
        list(iter_commits(str(history_repo.path / "app")))


def test_empty_repository(tmp_path: Path) -> None:
    init_repo(tmp_path).close()
    assert list(iter_commits(str(tmp_path))) == []


def test_bounded_diff_and_odd_paths(tmp_path: Path) -> None:
    repo = init_repo(tmp_path)
    write(tmp_path, "vendor/big.txt", "".join(f"line {i} {'x' * 60}\n" for i in range(5_000)))
    write(tmp_path, "src/na\u00efve file.py", "def tiny():\n    return 0\n")
    write(tmp_path, "tab\there.txt", "t\n")
    repo.git.add("-A")
    sha = commit(repo, "Vendor a big file", 0)
    repo.close()

    (rec,) = list(iter_commits(str(tmp_path), max_diff_bytes=100_000))
    assert rec.sha == sha
    assert sorted(rec.files) == ["src/na\u00efve file.py", "tab\there.txt", "vendor/big.txt"]
    assert rec.added == 5_003  # git's exact count, though the diff was cut
    assert rec.diff_truncated
    assert len(rec.diff.encode()) <= 100_000
    assert "+def tiny():" in rec.diff  # the small file survives the big one (per-file cap)
    assert rec.diff.endswith("\n")


def test_declared_message_encoding_is_honoured(tmp_path: Path) -> None:
    repo = init_repo(tmp_path)
    write(tmp_path, "a.txt", "a\n")
    repo.git.add("-A")
    commit_raw(repo, "Corrige l'\u00e9chec de cr\u00e9ation\n".encode("latin-1"), 0, "ISO-8859-1")
    repo.close()
    (rec,) = list(iter_commits(str(tmp_path)))
    assert rec.message == "Corrige l'\u00e9chec de cr\u00e9ation"


def test_early_close_stops_git_and_cleans_up(
    history_repo: HistoryRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    it = iter_commits(str(history_repo.path))
    assert next(it).sha == history_repo.shas["c7"]
    assert len(list(tmp_path.glob("codemem-*.gitattributes"))) == 1
    it.close()  # must not hang or raise
    assert list(tmp_path.glob("codemem-*")) == []
    assert len(list(iter_commits(str(history_repo.path)))) == 7
    assert list(tmp_path.glob("codemem-*")) == []


def test_split_records_across_chunk_boundaries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(git_records, "_CHUNK", 3)
    stream = git_records._START + b"one" + git_records._START + b"two\nlines" + git_records._START
    got = list(git_records._split_records(io.BytesIO(b"noise" + stream)))
    assert got == [(b"one", False), (b"two\nlines", False), (b"", False)]


def test_split_records_caps_a_record(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(git_records, "_MAX_RECORD_BYTES", 10)
    stream = git_records._START + b"x" * 50 + git_records._START + b"short"
    got = list(git_records._split_records(io.BytesIO(stream)))
    assert got == [(b"x" * 10, True), (b"short", False)]


def test_decode_quoted_path() -> None:
    assert git_records._decode_path(b'"a\\tb\\303\\251.py"') == "a\tb\u00e9.py"
    assert git_records._decode_path(b"plain/path.py") == "plain/path.py"
    assert git_records._decode_path(b'"q\\"uote\\\\.py"') == 'q"uote\\.py'
