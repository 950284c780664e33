"""A card's commit and clean state: tracked changes make a tree dirty and are named, untracked
files do not, and outside a git tree nothing is claimed."""

from __future__ import annotations

import subprocess
from pathlib import Path

from train.provenance import changed_paths, tree_sha256, tree_state


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


def test_a_tracked_change_makes_the_tree_dirty_and_an_untracked_file_does_not(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "model.json").write_text("{}\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "one")
    assert tree_state(repo) == {"commit": _git(repo, "rev-parse", "--short", "HEAD"), "clean_tree": True}
    (repo / "notes.txt").write_text("untracked\n")
    assert tree_state(repo)["clean_tree"] and changed_paths(repo) == []
    (repo / "pkg" / "model.json").write_text('{"retrained": true}\n')
    assert not tree_state(repo)["clean_tree"] and changed_paths(repo) == ["pkg/model.json"]


def test_outside_a_git_tree_the_commit_is_unknown_and_never_clean(tmp_path: Path) -> None:
    assert tree_state(tmp_path) == {"commit": "unknown", "clean_tree": False}


def test_a_tree_hash_follows_content_and_names_not_the_folder_it_lies_in(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / name / "models").mkdir(parents=True)
        (tmp_path / name / "x.py").write_text("x = 1\n")
        (tmp_path / name / "models" / "m.txt").write_text(f"model {name}\n")
    a, b = tmp_path / "a", tmp_path / "b"
    assert tree_sha256([a / "x.py"], a) == tree_sha256([b / "x.py"], b)
    assert tree_sha256([a], a, skip=[a / "models"]) == tree_sha256([b], b, skip=[b / "models"])  # models left out
    assert tree_sha256([a], a) != tree_sha256([b], b)


def test_a_file_outside_the_root_is_hashed_by_its_folder_and_name_not_where_the_data_lies(tmp_path: Path) -> None:
    """The shared data lies elsewhere on each machine: a card's hash of it must not say where."""
    repo = tmp_path / "repo"
    repo.mkdir()
    for place in ("one", "two"):
        (tmp_path / place / "data" / "reuse").mkdir(parents=True)
        (tmp_path / place / "data" / "reuse" / "tasks.jsonl").write_text("{}\n")
    one, two = (tmp_path / p / "data" / "reuse" / "tasks.jsonl" for p in ("one", "two"))
    assert tree_sha256([one], repo) == tree_sha256([two], repo)
    two.write_text("{ }\n")
    assert tree_sha256([one], repo) != tree_sha256([two], repo)
