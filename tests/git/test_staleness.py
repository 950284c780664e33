"""Staleness on a real small history: a change whose function a later commit edited is
flagged with that commit; one whose code nothing later touched is not."""

from __future__ import annotations

from pathlib import Path

from git_helpers import commit, init_repo, write

from codemem.git.cards import commit_to_experience
from codemem.git.log import iter_changes
from codemem.git.staleness import Staleness


def _module(alpha: str, beta: str) -> str:
    return (
        "def alpha(x):\n    y = x + 1\n    z = y * 2\n" f"    return {alpha}\n\n\n"
        "def beta(x):\n    y = x - 1\n    z = y * 3\n" f"    return {beta}\n"
    )


def test_a_later_edit_of_the_same_function_flags_the_older_change(tmp_path: Path) -> None:
    repo = init_repo(tmp_path)
    write(tmp_path, "pkg/mod.py", _module("z", "z"))
    write(tmp_path, "README.md", "demo\n")
    repo.git.add("-A")
    commit(repo, "Initial", 0)
    write(tmp_path, "pkg/mod.py", _module("z + 1", "z"))
    repo.git.add("-A")
    fix_alpha = commit(repo, "Fix alpha off by one", 1)
    write(tmp_path, "pkg/mod.py", _module("z + 1", "z - 1"))
    repo.git.add("-A")
    fix_beta = commit(repo, "Fix beta off by one", 2)
    write(tmp_path, "pkg/mod.py", _module("max(z + 1, 0)", "z - 1"))
    repo.git.add("-A")
    rework = commit(repo, "Rework alpha for negatives", 3)
    repo.close()

    staleness = Staleness()
    cards = {}
    for rec in iter_changes(str(tmp_path)):  # newest first, as an import walks
        exp = staleness.mark(commit_to_experience(rec))
        cards[rec.sha] = exp
    flagged = cards[fix_alpha]
    assert flagged.card.edited_symbols == ["alpha"]
    assert flagged.card.changed_since == f"{rework[:10]} 2024-01-04 Rework alpha for negatives"
    assert f"changed since: {rework[:10]} 2024-01-04 Rework alpha for negatives" in flagged.card.text
    assert flagged.metadata["changed_since"] == flagged.card.changed_since
    for sha in (fix_beta, rework):  # nothing later edited beta; rework is the newest
        assert cards[sha].card.changed_since == ""
        assert "changed since" not in cards[sha].card.text
        assert "changed_since" not in cards[sha].metadata
