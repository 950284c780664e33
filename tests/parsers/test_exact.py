"""Exact identifiers are kept whole, with the pieces a person would search for."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from parsers import exact, exact_terms


@pytest.mark.parametrize(
    "text, expected",
    [
        ("saw AssertionError in module_377.", ["module_377"]),
        ("Fixes #1234", ["#1234"]),
        ("flake8 E501 and ORA-00942", ["flake8", "e501", "ora-00942"]),
        ("introduced in 3f9c2ab1d4", ["3f9c2ab1d4"]),
        (
            "pytest tests/test_mod42.py::test_case failed",
            ["tests/test_mod42.py::test_case", "test_mod42.py", "test_mod42", "test_case"],
        ),
        (
            "django.db.models.QuerySet.bulk_create(ignore_conflicts=True)",
            ["django.db.models.queryset.bulk_create", "bulk_create", "ignore_conflicts"],
        ),
    ],
)
def test_exact_terms(text: str, expected: list[str]) -> None:
    assert exact_terms(text) == expected


@pytest.mark.parametrize("text", ["the quick brown fox", "version 3.2.1 on 2024-01-05", "e.g. i.e.", "a 42 b"])
def test_plain_words_and_numbers_are_not_exact_terms(text: str) -> None:
    assert exact_terms(text) == []


def test_terms_are_bounded() -> None:
    text = " ".join(f"name_{i}" for i in range(10_000))
    assert len(exact_terms(text)) == 256


# Texts of tokens and what lies between them: long tokens, long runs without a line end, a
# minified line with no space, '#' and ':' joiners at the edges.
_PIECES_OF_TEXT = st.lists(st.sampled_from(["module_377", "a.b.c", "#12", "x", "tests/t.py::test_a", " ", "\n", ",",
                                            '"', "{", "-", ":", "é", "日本", "$v", "@dec", "E501", "ab" * 40]),
                           max_size=400)


@given(_PIECES_OF_TEXT, st.integers(min_value=1, max_value=64))
def test_slices_cut_where_no_token_runs_on(parts: list[str], size: int) -> None:
    text = "".join(parts)
    pieces = list(exact.slices(text, size))
    assert "".join(pieces) == text
    assert [t for p in pieces for t in exact._TOKEN.findall(p)] == exact._TOKEN.findall(text)


@given(_PIECES_OF_TEXT, st.integers(min_value=1, max_value=64))
def test_terms_read_in_slices_are_the_terms_of_the_whole(parts: list[str], size: int) -> None:
    text = "".join(parts)
    whole = exact.exact_terms(text)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(exact, "SLICE_CHARS", size)
        assert exact.exact_terms(text) == whole
