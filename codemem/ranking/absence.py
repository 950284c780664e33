"""Whether anything in memory is related to a Search at all: a learned decision over what the
Search sees of its candidates before it builds an answer.

A memory asked about something it never held still has nearest experiences; showing them
costs a reader tokens and suggests a relation that is not there. The relevance model's P of
the first candidate alone separates the two cases poorly (a weak match in a large memory
and a strong one in a small memory read alike), so the decision reads the answer as a whole:
the first candidates' P(related), their gaps and how many reach one half, how many candidates
there are, and the best raw BM25 score and cosine (the first candidate's own field matches
and share of the query's references were tried beside them and emptied less at the same
cost). A logistic regression over those readings gives P(answerable); below the cut of the first candidate's
kind (a commit of a repository's history, or any other experience) the answer is empty.

Both are learned in `make train` (`train/ranker/absence.py`) on the training queries' own
out-of-fold readings, each answerable query read again without its related candidates (the
absent condition), with the cut set so that at most 1% of the answerable queries whose gold
ranks in the first 5 are emptied, per kind. They live in the relevance model's card
(`models/ranker.json`, "search" → "nothing_related"); a card without them never empties an
answer. It judges only Searches like those it learned from: at least as many candidates as
the 1st percentile of its examples (a memory of a handful of experiences is answered as
before), and a dense signal present (a store whose vectors are not written yet has none).
The Searcher also answers a lookup of exact identifiers the memory holds whole, whatever this
reads (`searcher.names_what_it_holds`). A pure function of the candidates' P, features and raw
scores: numpy only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from codemem.ranking.features import FEATURES

DEPTH = 5  # the first candidates whose P are read
COMMIT, EXPERIENCE = "commit", "experience"  # what the first candidate is: its cut
READINGS: tuple[str, ...] = ("p1", "p2", "p3", "gap12", "gap13", "mean5", "related5", "candidates", "best_bm25",
                             "best_cosine")
_COMMIT_COLUMN = FEATURES.index("commit")


def reading(p: np.ndarray, bm25: np.ndarray, cosine: np.ndarray) -> np.ndarray:
    """What a Search sees of its candidates, in `READINGS` order: `p` their P(related), `bm25`
    and `cosine` their raw retriever scores (-1 and -2 where a retriever did not find one)."""
    top = np.concatenate([np.sort(p)[::-1], np.zeros(max(0, DEPTH - len(p)))])
    return np.asarray([top[0], top[1], top[2], top[0] - top[1], top[0] - top[2], top[:DEPTH].mean(),
                       float((top[:DEPTH] >= 0.5).sum()), np.log1p(len(p)),
                       float(bm25.max()) if len(bm25) else -1.0, float(cosine.max()) if len(cosine) else -2.0],
                      dtype=np.float64)


def kind_of(p: np.ndarray, x: np.ndarray) -> str:
    """Whose cut applies: the kind of the most probable candidate."""
    return COMMIT if len(p) and x[int(np.argmax(p)), _COMMIT_COLUMN] > 0 else EXPERIENCE


@dataclass(frozen=True)
class Absence:
    """A logistic regression over standardised readings, and a cut per kind."""

    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float
    cuts: Mapping[str, float]  # kind -> P(answerable) below which nothing is related
    # The fewest candidates of a Search it judges: what it was trained on (the 1st percentile of
    # its examples). A smaller memory's Search is out of that range (it reads few candidates,
    # each at the top of every ranking): it is answered as before, never emptied.
    min_candidates: int = 0

    def __post_init__(self) -> None:
        if not len(self.mean) == len(self.scale) == len(self.coef) == len(READINGS):
            raise ValueError(f"a nothing-related decision reads {len(READINGS)} readings ({', '.join(READINGS)}), "
                             f"this one {len(self.coef)}: retrain it")
        if unknown := set(self.cuts) - {COMMIT, EXPERIENCE}:
            raise ValueError(f"unknown kinds {sorted(unknown)} in a nothing-related decision's cuts")

    def answerable(self, readings: np.ndarray) -> np.ndarray:
        """P(answerable) of each row of `readings` (or of one reading)."""
        z = (np.asarray(readings) - np.asarray(self.mean)) / np.asarray(self.scale)
        return 1.0 / (1.0 + np.exp(-np.clip(z @ np.asarray(self.coef) + self.intercept, -50.0, 50.0)))

    def nothing_related(self, p: np.ndarray, x: np.ndarray, bm25: np.ndarray, cosine: np.ndarray) -> bool:
        """Whether a Search with these candidates (`x`: their features, rows in `FEATURES`
        order; the others as `reading` takes them) answers empty."""
        if not len(p):
            return True
        if len(p) < self.min_candidates or not (cosine > -2.0).any():
            return False  # out of the range it was trained on, or the dense signal not there (no vectors yet)
        return bool(self.answerable(reading(p, bm25, cosine)) < self.cuts.get(kind_of(p, x), 0.0))

    def card(self) -> dict[str, Any]:
        return {"readings": list(READINGS), "mean": list(self.mean), "scale": list(self.scale), "coef": list(self.coef),
                "intercept": self.intercept, "cuts": dict(self.cuts), "min_candidates": self.min_candidates}

    @classmethod
    def from_card(cls, card: Mapping[str, Any]) -> Absence:
        if list(card.get("readings", ())) != list(READINGS):
            raise ValueError(f"a nothing-related decision over readings {card.get('readings')}, this code reads "
                             f"{list(READINGS)}: retrain it")
        return cls(_floats(card["mean"]), _floats(card["scale"]), _floats(card["coef"]), float(card["intercept"]),
                   {str(k): float(v) for k, v in card["cuts"].items()}, int(card.get("min_candidates", 0)))


def _floats(values: Sequence[Any]) -> tuple[float, ...]:
    return tuple(float(v) for v in values)
