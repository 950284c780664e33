"""Whether a text states a project decision now in effect, read by a learned model, not by
phrasings.

A team says "we switched CI to X", "x is out, y is in", "pool size bumped to 40" or only shows
the new value in a config block; no list of phrasings holds them all, and a list that reads
"from X to Y" also reads a flight from one city to another (`eval/results/decisions.json`
measured the phrase readings this replaced). The reader is a logistic regression over the
text's embedding (the memory's own MiniLM vectors, so that a stored turn is read from its
stored vector without embedding it again) and its words and word pairs (TF-IDF: the embedding
alone told decisions from look-alikes less well in cross-validation), trained by `python -m train.decisions.train` on
sentences written for it (decisions of every kind, and look-alikes that decide nothing:
travel, mail, rota swaps, proposals, measurements), its threshold chosen by cross-validation on
them. Shipped as package data: `models/decisions.json` (weights, threshold, what it was trained
on and its cross-validated figures).
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections import Counter
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

MODEL = Path(str(resources.files("codemem.timeline") / "models" / "decisions.json"))


# scikit-learn's TfidfVectorizer's default tokens, lower-cased: the trainer's.
_TOKEN = re.compile(r"(?u)\b\w\w+\b")


def terms(text: str, ngrams: int = 2) -> Counter[str]:
    """The text's words and runs of up to `ngrams` words, counted (TfidfVectorizer's analyzer)."""
    words = _TOKEN.findall(text.lower())
    return Counter(" ".join(words[i:i + n]) for n in range(1, ngrams + 1) for i in range(len(words) - n + 1))


@dataclass(frozen=True)
class DecisionReader:
    """P(decision) of texts, from their words and their unit-normalised vectors."""

    embedding_weights: np.ndarray  # (dim,)
    terms: dict[str, tuple[float, float]]  # word or word pair -> (idf, weight)
    ngrams: int
    bias: float
    threshold: float  # P at or above which a text reads as a decision
    embedder: str  # the embedding model whose vectors the weights read

    @classmethod
    def load(cls, path: Path = MODEL) -> DecisionReader:
        card = json.loads(path.read_text())
        return cls(np.asarray(card["embedding_weights"], dtype=np.float32),
                   {t: (float(i), float(w)) for t, (i, w) in card["terms"].items()}, int(card["ngrams"]),
                   float(card["bias"]), float(card["threshold"]), str(card["embedder"]))

    def _words_score(self, text: str) -> float:
        """The words' share of the score: their sublinear, l2-normalised TF-IDF vector times
        the weights (the terms the trainer never saw weigh nothing, as in scikit-learn)."""
        tfidf = {t: (1.0 + math.log(n)) * self.terms[t][0] for t, n in terms(text, self.ngrams).items() if t in self.terms}
        norm = math.sqrt(sum(v * v for v in tfidf.values()))
        return sum(v * self.terms[t][1] for t, v in tfidf.items()) / norm if norm > 0 else 0.0

    def probabilities(self, texts: list[str], vectors: np.ndarray) -> np.ndarray:
        """P(decision) of each text, given its vector (a row of `vectors`, n x dim)."""
        if not texts:
            return np.zeros(0)
        z = np.asarray(vectors, dtype=np.float32) @ self.embedding_weights + self.bias
        z = z + np.asarray([self._words_score(t) for t in texts])
        return np.asarray(1.0 / (1.0 + np.exp(-np.clip(z, -50.0, 50.0))))

    def decides(self, texts: list[str], vectors: np.ndarray) -> np.ndarray:
        """Whether each text reads as a decision."""
        return self.probabilities(texts, vectors) >= self.threshold


@functools.cache
def packaged() -> DecisionReader:
    """The packaged reader, loaded once per process."""
    return DecisionReader.load()
