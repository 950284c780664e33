"""The relevance model `make train` builds reads one of the candidate feature lists the ship rule
compares (`train.ranker.featureset`), and the shipped card names the one its rule shipped."""

from __future__ import annotations

from codemem.ranking.features import FEATURES
from codemem.ranking.learned import model_card, packaged
from codemem.ranking.time_features import TIME_FEATURES
from train.ranker.featureset import BASE, CANDIDATES, PURPOSE, REFERENCE, columns, monotone


def test_the_shipped_card_names_the_candidate_its_ship_rule_shipped() -> None:
    card = model_card()
    shipped = card["ship_rule"]["shipped"]
    assert card["features"] == list(CANDIDATES[shipped]), (
        "train/ranker/featureset.py's candidate and codemem/ranking/models/ranker.json name different features: "
        "retrain (make train) or change the list back")
    assert card["params"]["monotone_constraints"] == list(monotone(CANDIDATES[shipped]))
    assert packaged().features == CANDIDATES[shipped]


def test_the_candidates_are_the_reference_and_the_reference_with_the_time_features() -> None:
    assert CANDIDATES[REFERENCE] == BASE and set(BASE).isdisjoint(TIME_FEATURES)
    assert set(CANDIDATES["time"]) == set(BASE) | set(TIME_FEATURES)
    for features in CANDIDATES.values():
        assert [FEATURES[i] for i in columns(features)] == list(features)  # in the catalogue's order
    assert set(PURPOSE) <= set(CANDIDATES) - {REFERENCE}  # every added list says what it is for
