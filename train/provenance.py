"""What a model card says about where a model came from: the commit the training code was at,
whether the tree held uncommitted changes to tracked files, and the hashes of what it read.

One helper for every trainer (`train.ranker.train`, `train.decisions.train`) and for the
orchestrator (`python -m train`), so that a card names a commit the same way whichever wrote
it. It is read before a trainer writes anything: writing a model into the package makes the
tree dirty, and the card must describe the code that trained it, not the code after.
"""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import TypedDict

REPO_ROOT = Path(__file__).resolve().parent.parent


class TreeState(TypedDict):
    commit: str  # HEAD, abbreviated as `git rev-parse --short` does ("unknown" outside a git tree)
    clean_tree: bool  # no uncommitted change to a tracked file (untracked files do not count)


def git(*args: str, root: Path = REPO_ROOT) -> str | None:
    """`git -C root args` stripped, or None where git or the repository is not there."""
    try:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def tree_state(root: Path = REPO_ROOT) -> TreeState:
    """The commit of `root`'s HEAD and whether its tracked files match it. Outside a git tree
    the commit is "unknown" and the tree is not clean: a card never claims what it cannot show."""
    commit = git("rev-parse", "--short", "HEAD", root=root)
    status = git("status", "--porcelain", "--untracked-files=no", root=root)
    return {"commit": commit or "unknown", "clean_tree": commit is not None and status == ""}


def changed_paths(root: Path = REPO_ROOT) -> list[str]:
    """The tracked files that differ from HEAD (what makes the tree dirty)."""
    return sorted(p for p in (git("diff", "--name-only", "HEAD", root=root) or "").splitlines() if p)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def tree_sha256(paths: Iterable[Path], root: Path, skip: Iterable[Path] = ()) -> str:
    """One hash of every file under `paths` (files or folders), by path relative to `root` and
    content; files under `skip` and compiled caches left out. A file outside `root` (the shared
    data) is named by its folder and name alone. Two trees with the same files hash the same
    wherever they lie."""
    skipped = tuple(p.resolve() for p in skip)
    digest = hashlib.sha256()
    files: list[Path] = []
    for path in paths:
        files += sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for f in files:
        if "__pycache__" in f.parts or f.suffix == ".pyc" or any(f.resolve().is_relative_to(s) for s in skipped):
            continue
        rel = f.resolve().relative_to(root.resolve()) if f.resolve().is_relative_to(root.resolve()) else Path(*f.parts[-2:])
        digest.update(f"{rel}\0{file_sha256(f)}\n".encode())
    return digest.hexdigest()
