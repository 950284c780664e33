"""Whether a text states a project decision now in effect, read by a learned model, not by
phrasings.

A team says "we switched CI to X", "x is out, y is in", "pool size bumped to 40" or only shows
the new value in a config block; no list of phrasings holds them all, and a list that reads
"from X to Y" also reads a flight from one city to another (`eval/results/decisions.json`
measured the phrase readings this replaced). The reader is a logistic regression over the
text's embedding (the memory's own MiniLM vectors, so that a stored turn is read from its
stored vector without embedding it again) and its words and word pairs (TF-IDF: the embedding
alone told decisions from look-alikes less well in cross-validation; `linear_text.py`), trained by `python -m train.decisions.train` on
sentences written for it (decisions of every kind, and look-alikes that decide nothing:
travel, mail, rota swaps, proposals, measurements), its threshold chosen by cross-validation on
them. Shipped as package data: `models/decisions.json` (weights, threshold, what it was trained
on and its cross-validated figures).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from codemem.timeline.linear_text import LinearText

MODEL = Path(str(resources.files("codemem.timeline") / "models" / "decisions.json"))


@dataclass(frozen=True)
class DecisionReader:
    """P(decision) of texts, from their words and their unit-normalised vectors."""

    model: LinearText
    threshold: float  # P at or above which a text reads as a decision
    embedder: str  # the embedding model whose vectors the weights read

    @classmethod
    def load(cls, path: Path = MODEL) -> DecisionReader:
        card = json.loads(path.read_text())
        return cls(LinearText.of(card), float(card["threshold"]), str(card["embedder"]))

    def probabilities(self, texts: list[str], vectors: np.ndarray) -> np.ndarray:
        """P(decision) of each text, given its vector (a row of `vectors`, n x dim)."""
        if not texts:
            return np.zeros(0)
        z = self.model.scores(texts, vectors)[:, 0]
        return np.asarray(1.0 / (1.0 + np.exp(-np.clip(z, -50.0, 50.0))))

    def decides(self, texts: list[str], vectors: np.ndarray) -> np.ndarray:
        """Whether each text reads as a decision."""
        return self.probabilities(texts, vectors) >= self.threshold


@functools.cache
def packaged() -> DecisionReader:
    """The packaged reader, loaded once per process."""
    return DecisionReader.load()
