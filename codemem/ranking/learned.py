"""The relevance model: a pointwise LightGBM model over `ranking/features.py`, shipped as
package data (`models/ranker.txt`, its card `models/ranker.json`, trained by
`train/ranker/train.py` on public agent sessions and public histories; `train/ranker/README.md`).
A Search scores it with `ranking/trees.py` (numpy, equal to LightGBM's own predictions), not
with lightgbm, whose import brings scikit-learn and SciPy: most of a cold `codemem search`.

It scores the candidate experiences (`features.candidates`) and maps each score to P(related)
with the Platt calibration fitted on out-of-fold scores; that probability orders them, decides
whether an answer is quiet and how much of each experience it shows, and, read with the
candidates' raw scores, whether anything is related at all (`ranking/absence.py`, learned
with the model and kept in its card). Sessions outside the
candidates are not returned. `features.FEATURES` is what this code can compute; a model reads
the columns its card names, in its order (a model may leave some out: the time features were
added for a model trained on dated data), and the loader refuses a card that names a feature
this code does not compute.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from codemem.ranking.absence import Absence
from codemem.ranking.features import CANDIDATE_DEPTH, FEATURES, candidate_features, candidates
from codemem.ranking.relevance import SessionSignals
from codemem.ranking.trees import Trees, UnsupportedModel
from codemem.ranking.types import Ranking

MODEL_FILE = "ranker.txt"
CARD_FILE = "ranker.json"
MODELS = Path(str(resources.files("codemem.ranking") / "models"))


class ModelMismatch(ValueError):
    """A model file that does not fit this code (other features, a missing card)."""


def model_card(directory: Path = MODELS) -> dict[str, Any]:
    """A model's card (`models/ranker.json`: features, calibration, thresholds, data, figures)."""
    return dict(json.loads((directory / CARD_FILE).read_text()))


@dataclass(frozen=True)
class LearnedRanker:
    trees: Trees  # the LightGBM model file, evaluated with numpy
    model_id: str
    platt: tuple[float, float]
    features: tuple[str, ...]  # the columns it reads, named by its card
    columns: tuple[int, ...]  # their places in `FEATURES`
    absence: Absence | None = None  # whether anything is related; None: always something

    @classmethod
    def load(cls, directory: Path = MODELS) -> LearnedRanker:
        """The model in `directory` (default: the packaged one)."""
        card = model_card(directory)
        names = tuple(str(f) for f in card.get("features", ()))
        if not names or any(f not in FEATURES for f in names):
            raise ModelMismatch(f"{directory / MODEL_FILE} ({card.get('model_id')}) was trained on features "
                                f"{card.get('features')}, this code computes {list(FEATURES)}: retrain it "
                                "(python -m train.ranker.train)")
        if card.get("candidate_depth") != CANDIDATE_DEPTH:
            raise ModelMismatch(f"{directory / MODEL_FILE} was trained on the first {card.get('candidate_depth')} "
                                f"of each ranking, this code reads {CANDIDATE_DEPTH}: retrain it")
        try:
            trees = Trees.load(directory / MODEL_FILE)
        except UnsupportedModel as e:
            raise ModelMismatch(f"{directory / MODEL_FILE}: {e}") from e
        if trees.num_feature != len(names):
            raise ModelMismatch(f"{directory / MODEL_FILE} reads {trees.num_feature} features, its card names {len(names)}")
        calibration = card["calibration"]
        try:
            absence = Absence.from_card(card["search"]["nothing_related"]) if "nothing_related" in card.get("search", {}) else None
        except ValueError as e:
            raise ModelMismatch(f"{directory / CARD_FILE}: {e}") from e
        return cls(trees, str(card["model_id"]), (float(calibration["a"]), float(calibration["b"])),
                   names, tuple(FEATURES.index(f) for f in names), absence)

    def probabilities(self, raw: np.ndarray) -> np.ndarray:
        """P(related) of raw scores (the Platt calibration)."""
        a, b = self.platt
        return 1.0 / (1.0 + np.exp(-np.clip(a * raw + b, -50.0, 50.0)))

    def rank(self, signals: SessionSignals, explain: int = 0, top: int = 3) -> Ranking:
        """Each candidate's P(related), and for the `explain` most probable the `top` features
        whose contributions (SHAP values, as LightGBM's `pred_contrib`) moved their scores most."""
        keys = candidates(signals)
        vectors = candidate_features(signals, keys)
        every = np.asarray([vectors[k] for k in keys], dtype=np.float64).reshape(len(keys), len(FEATURES))
        x = every[:, self.columns]
        p = self.probabilities(self.trees.raw_score(x)) if keys else np.zeros(0)
        scores = {k: float(v) for k, v in zip(keys, p, strict=True)}
        reasons: dict[str, dict[str, float]] = {}
        if first := [int(i) for i in np.argsort(-p, kind="stable")[:explain]]:
            contrib = self.trees.contributions(x[first])
            for i, row in zip(first, contrib, strict=True):
                order = np.argsort(-np.abs(row[:-1]))[:top]  # the last column is the bias
                reasons[keys[i]] = {self.features[j]: round(float(row[j]), 3) for j in order}
        nothing = self.absence is not None and self.absence.nothing_related(
            p, every, np.asarray([signals.bm25.get(k, -1.0) for k in keys]), np.asarray([signals.cosine.get(k, -2.0) for k in keys]))
        return Ranking(scores, scores, reasons, nothing)


_LOADED: dict[str, LearnedRanker] = {}
_LOCK = threading.Lock()


def packaged() -> LearnedRanker:
    """The packaged model, loaded once per process."""
    with _LOCK:
        if "default" not in _LOADED:
            _LOADED["default"] = LearnedRanker.load()
        return _LOADED["default"]
