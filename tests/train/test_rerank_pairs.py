"""The reranker's training data keeps the evaluation out and cannot match on the reference."""

from pathlib import Path

import pytest

from train.rerank.build_pairs import build, scrub


@pytest.mark.parametrize("name", ["django", "github+sympy", "BurntSushi+ripgrep", "Flask"])
def test_an_evaluation_repository_is_never_read(tmp_path: Path, name: str) -> None:
    with pytest.raises(SystemExit, match="never trained on"):
        build(tmp_path / name, limit=10, hard=1, easy=1, cap=1, seed=0)


def test_a_query_loses_the_references_that_name_its_positive() -> None:
    text = scrub("Follow-up to #1234: keep the cache key stable (see gh-88, abcdef1234567)\n\n"
                 "https://github.com/o/r/pull/1234 Co-authored-by: A <a@b>")
    assert "1234" not in text and "88" not in text and "abcdef1" not in text and "Co-authored" not in text
    assert "keep the cache key stable" in text


def test_history_is_read_with_codemems_diff_reader(tmp_path: Path) -> None:
    import git

    from train.rerank.build_pairs import read_history

    repo = git.Repo.init(tmp_path)
    (tmp_path / "calc.py").write_text("def divide(a, b):\n    return a / b\n")
    repo.index.add(["calc.py"])
    repo.index.commit("Add divide")
    (tmp_path / "calc.py").write_text("def divide(a, b):\n    return a // b\n")
    repo.index.add(["calc.py"])
    repo.index.commit("Floor division in divide (#7)")
    first, second = read_history(tmp_path, limit=10)
    assert (first.subject, second.subject) == ("Add divide", "Floor division in divide (#7)")
    assert second.files == ["calc.py"] and "divide" in second.symbols
    assert any(line.startswith("+    return a // b") for line in second.diff)
