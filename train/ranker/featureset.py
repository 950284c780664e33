"""The features the relevance model is trained on: stated once, here.

`codemem.ranking.features.FEATURES` is what the code can compute (the catalogue); a model reads
the columns its card names (`codemem.ranking.learned`). This is the list `train.ranker.train`
trains on and writes into the card, so the model `make train` builds is the one shipped, and
`tests/train/test_featureset.py` fails when this list and the shipped card's disagree.

The time features (`codemem.ranking.time_features`) stay computable but are not trained on.
Their data is there now (issue 49): dated projects written for training and real version
changes of the training histories, with the replays' and past-fix windows' dates "not known"
(the first trial, issue 41, learned those artefacts as age). A model with them put the newest
value first on 0.584 of the projects' update questions held out by project, against 0.274
without them, and held the sessions and past fixes; but it failed the contested-pair check of
`tests/train/test_ranker_model.py` (29 of 40, one feature alone 29), a rule of its shipping
written before it was scored (`train/ranker/README.md`). Adding them here is the decision to
ship such a model; `python -m train` then builds the dated projects too (`uses_time_features`).
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
