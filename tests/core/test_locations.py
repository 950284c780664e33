"""Code-location evidence: experiences that edited the code a task names rank first."""

from __future__ import annotations

import json

import pytest

from codemem.ranking.locations import LocationIndex, LocationIndexes, location_score, ticket_refs
from codemem.ranking.query import parse_query


def _card(key: str, refs: list[str], edited_files: list[str] = (), edited_symbols: list[str] = ()) -> dict:  # type: ignore[assignment]
    meta = {"edited_files": list(edited_files), "edited_symbols": list(edited_symbols)}
    return {"session_key": key, "refs": " ".join(refs), "metadata": json.dumps(meta)}


def _index() -> LocationIndex:
    common = "django/db/models/query.py"
    cards = [
        # Edited the file and the rare helper the task names.
        _card("fixer", [common, "_batched_insert"], [common], ["QuerySet._batched_insert"]),
        # Mentions the same keys in its task, edited something else.
        _card("mentions", [common, "_batched_insert", "django/forms/fields.py"], ["django/forms/fields.py"]),
        # Only mention the common file.
        *(_card(f"other{i}", [common, f"helper_{i}"], [f"pkg/m{i}.py"]) for i in range(8)),
    ]
    return LocationIndex.of_cards(cards)


def test_an_experience_that_edited_the_named_code_outranks_one_that_mentions_it() -> None:
    index = _index()
    query = parse_query("bulk_create fails: _batched_insert in django/db/models/query.py passes on_conflict")
    scores = {k: location_score(e, m, 0.5) for k, (e, m) in index.scores(query.refs).items()}
    assert max(scores, key=scores.__getitem__) == "fixer"
    assert scores["fixer"] > scores["mentions"] > scores["other0"] > 0
    assert "unrelated" not in scores


def test_a_rare_key_counts_more_than_one_every_experience_shares() -> None:
    index = _index()
    assert index.idf("_batched_insert") > index.idf("django/db/models/query.py") > 0
    assert index.idf("never_seen") == 0.0
    edited, mentioned = index.scores(["django/db/models/query.py"])["fixer"]
    assert edited > 0 and mentioned == 0
    assert index.scores(["django/db/models/query.py"])["other0"] == (0.0, edited)


def test_edited_keys_use_the_same_normalisation_as_query_references() -> None:
    """A card's edited paths and symbols become lookup keys as a task's references do."""
    index = LocationIndex.of_cards([_card("s", [], ["src/pkg/module.py"], ["Klass.method"])])
    keys = set(parse_query("error in src/pkg/module.py, Klass.method()").refs)
    assert keys & index.experiences["s"].edited


def test_ticket_pr_and_commit_references_are_found() -> None:
    text = ("Regression of #30123, see https://code.djangoproject.com/ticket/29876 and "
            "https://github.com/sympy/sympy/pull/24567; introduced by 3f2a9c1d. Colour &#123; and v1.2.3 are not.")
    refs = ticket_refs(text)
    assert refs[:3] == ["#30123", "#29876", "#24567"]
    assert "3f2a9c1d" in refs
    assert "#123" not in refs


def test_indexes_are_rebuilt_when_the_store_version_changes() -> None:
    reads = []

    def read() -> list[dict]:
        reads.append(1)
        return [_card("a", ["x_y"])]

    cache = LocationIndexes()
    assert cache.get("u", 1, read) is cache.get("u", 1, read)
    assert len(reads) == 1
    cache.get("u", 2, read)
    assert len(reads) == 2


@pytest.mark.parametrize("weight", [0.0, 0.5, 1.0])
def test_location_score_weighs_mentions(weight: float) -> None:
    assert location_score(2.0, 1.0, weight) == 2.0 + weight
