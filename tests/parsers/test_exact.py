"""Exact identifiers are kept whole, with the pieces a person would search for."""

import pytest

from parsers import exact_terms


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
