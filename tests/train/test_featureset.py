"""The relevance model `make train` would build reads the features the shipped one does: the
training list is stated once (`train.ranker.featureset`) and the shipped card must name it."""

from __future__ import annotations

from codemem.ranking.features import FEATURES
from codemem.ranking.learned import model_card, packaged
from codemem.ranking.time_features import TIME_FEATURES
from train.ranker.featureset import (
    COLUMNS,
    TRAINING_FEATURES,
    TRAINING_MONOTONE,
    uses_time_features,
)


def test_the_training_feature_list_is_the_shipped_card_s() -> None:
    card = model_card()
    assert card["features"] == list(TRAINING_FEATURES), (
        "train/ranker/featureset.py and codemem/ranking/models/ranker.json name different features: "
        "retrain (make train) or change the list back")
    assert card["params"]["monotone_constraints"] == list(TRAINING_MONOTONE)
    assert packaged().features == TRAINING_FEATURES


def test_the_time_features_stay_computable_and_untrained() -> None:
    """Left out of training (their only trial learned the replays' order of Adds as age), kept in
    the catalogue the code computes for a later model."""
    assert set(TIME_FEATURES) <= set(FEATURES) and not uses_time_features()
    assert [FEATURES[i] for i in COLUMNS] == list(TRAINING_FEATURES)
