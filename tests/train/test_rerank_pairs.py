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
