"""The feature lists the relevance model is trained on: stated once, here.

`codemem.ranking.features.FEATURES` is what the code can compute (the catalogue); a model reads
the columns its card names (`codemem.ranking.learned`). `make train` trains every list of
`CANDIDATES` on the same data and folds and ships one by the ship rule (`train.ranker.ship_rule`,
written in `train/ranker/README.md` before the run that used it); the card names the list it
shipped and records every candidate's figures. `tests/train/test_featureset.py` fails when the
shipped card names a list that is not a candidate's.

- `reference`: today's list, without the time features (`codemem.ranking.time_features`).
- `time`: the same with the time features. Their data are the dated projects (written ones and
  real version changes of the training histories); the replays' and past-fix windows' dates read
  "not known" (a first trial, issue 41, learned those artefacts as age).

`PURPOSE` names what a candidate's added features are for, as the ship rule measures it: the
figure (on one group of the out-of-fold queries) whose gain over the reference must have a 95%
paired-bootstrap interval above 0.
"""

from __future__ import annotations

from codemem.ranking.features import FEATURES, MONOTONE
from codemem.ranking.time_features import TIME_FEATURES

REFERENCE = "reference"
BASE: tuple[str, ...] = tuple(f for f in FEATURES if f not in TIME_FEATURES)
CANDIDATES: dict[str, tuple[str, ...]] = {
    REFERENCE: BASE,
    "time": tuple(f for f in FEATURES if f in BASE or f in TIME_FEATURES),
}
# candidate -> (the group of queries, the figure): newest first is hit@1 on the update questions
PURPOSE: dict[str, tuple[str, str]] = {"time": ("project questions: update", "hit@1")}


def columns(features: tuple[str, ...]) -> tuple[int, ...]:
    """Where each of `features` lies in a full vector of `FEATURES`."""
    return tuple(FEATURES.index(f) for f in features)


def monotone(features: tuple[str, ...]) -> tuple[int, ...]:
    """Each of `features`' monotone constraint."""
    return tuple(MONOTONE[i] for i in columns(features))
