"""The features the relevance model is trained on: stated once, here.

`codemem.ranking.features.FEATURES` is what the code can compute (the catalogue); a model reads
the columns its card names (`codemem.ranking.learned`). This is the list `train.ranker.train`
trains on and writes into the card, so the model `make train` builds is the one shipped, and
`tests/train/test_featureset.py` fails when this list and the shipped card's disagree.

The time features (`codemem.ranking.time_features`) stay computable but are not trained on:
the one trial with them (issue 41, `train/ranker/README.md`) learned the replays' order of Adds
as age, because the replayed sessions and the past-fix windows have no real dates. A model that
reads them needs data whose dates are real first; adding them here is that decision, and
`python -m train` then builds the dated projects' data too (`uses_time_features`).
"""

from __future__ import annotations

from codemem.ranking.features import FEATURES, MONOTONE
from codemem.ranking.time_features import TIME_FEATURES

TRAINING_FEATURES: tuple[str, ...] = tuple(f for f in FEATURES if f not in TIME_FEATURES)

# Where each trained feature lies in a full vector of `FEATURES`, and its monotone constraint.
COLUMNS: tuple[int, ...] = tuple(FEATURES.index(f) for f in TRAINING_FEATURES)
TRAINING_MONOTONE: tuple[int, ...] = tuple(MONOTONE[i] for i in COLUMNS)


def uses_time_features() -> bool:
    """Whether the trained model reads a time feature (then the dated projects are training data)."""
    return not set(TRAINING_FEATURES).isdisjoint(TIME_FEATURES)
