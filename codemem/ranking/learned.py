"""The learned ranker: a LightGBM LambdaRank model over `ranking/features.py`, shipped as
package data (`models/ranker.txt`, its card `models/ranker.json`, trained by
`train/ranker/train.py` on public SWE-bench Verified tasks; `train/ranker/README.md`).

It orders the candidate experiences (`features.candidates`) by the model's score, and maps
that score to P(related) with the Platt calibration fitted on out-of-fold scores. Sessions
outside the candidates follow in the fused order, below every candidate. The loader refuses a
model whose card names other features than this code computes.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from codemem.ranking.features import FEATURES, candidate_features, candidates
from codemem.ranking.relevance import SessionSignals, fuse
from codemem.ranking.search_config import SearchConfig
from codemem.ranking.types import Ranking

MODEL_FILE = "ranker.txt"
CARD_FILE = "ranker.json"


class ModelMismatch(ValueError):
    """A model file that does not fit this code (other features, a missing card)."""


@dataclass(frozen=True)
class LearnedRanker:
    booster: Any  # lightgbm.Booster
    model_id: str
    depth: int
    platt: tuple[float, float]

    @classmethod
    def load(cls, directory: Path | None = None) -> LearnedRanker:
        """The model in `directory` (default: the packaged one)."""
        import lightgbm  # only a Search that asks for the learned ranker pays for the import

        root = directory or Path(str(resources.files("codemem.ranking") / "models"))
        card = json.loads((root / CARD_FILE).read_text())
        if list(card.get("features", ())) != list(FEATURES):
            raise ModelMismatch(f"{root / MODEL_FILE} ({card.get('model_id')}) was trained on features "
                                f"{card.get('features')}, this code computes {list(FEATURES)}: retrain it "
                                "(python -m train.ranker.train)")
        booster = lightgbm.Booster(model_file=str(root / MODEL_FILE))
        if booster.num_feature() != len(FEATURES):
            raise ModelMismatch(f"{root / MODEL_FILE} reads {booster.num_feature()} features, not {len(FEATURES)}")
        calibration = card["calibration"]
        return cls(booster, str(card["model_id"]), int(card["candidate_depth"]),
                   (float(calibration["a"]), float(calibration["b"])))

    def candidates(self, signals: SessionSignals, config: SearchConfig) -> list[str]:
        """The sessions this model scores (their fields are read for it: `Memory.signals`)."""
        return candidates(signals, config, self.depth)

    def probabilities(self, raw: np.ndarray) -> np.ndarray:
        """P(related) of raw scores (the Platt calibration)."""
        a, b = self.platt
        return 1.0 / (1.0 + np.exp(-np.clip(a * raw + b, -50.0, 50.0)))

    def rank(self, signals: SessionSignals, config: SearchConfig, explain: int = 0, top: int = 3) -> Ranking:
        """Every fused session's score: the candidates' P(related) in the model's order, then
        the rest in fused order below them; and for the first `explain` candidates the `top`
        features whose LightGBM contributions moved their scores most."""
        keys = self.candidates(signals, config)
        vectors = candidate_features(signals, keys)
        x = np.asarray([vectors[k] for k in keys], dtype=np.float64).reshape(len(keys), len(FEATURES))
        p = self.probabilities(self.booster.predict(x)) if keys else np.zeros(0)
        scores = {k: float(v) for k, v in zip(keys, p, strict=True)}
        least = min(scores.values(), default=1.0)
        fused = fuse(signals, config)
        best = max(fused.values(), default=1.0) or 1.0
        for key, value in fused.items():
            scores.setdefault(key, 0.5 * least * value / best)
        first = [i for i in np.argsort(-p, kind="stable")[:explain]]
        reasons: dict[str, dict[str, float]] = {}
        if first:
            contrib = self.booster.predict(x[first], pred_contrib=True)
            for i, row in zip(first, contrib, strict=True):
                order = np.argsort(-np.abs(row[:-1]))[:top]  # the last column is the bias
                reasons[keys[i]] = {FEATURES[j]: round(float(row[j]), 3) for j in order}
        return Ranking(scores, reasons)

    def scores(self, signals: SessionSignals, config: SearchConfig) -> Mapping[str, float]:
        return self.rank(signals, config).scores


_LOADED: dict[str, LearnedRanker] = {}
_LOCK = threading.Lock()


def packaged() -> LearnedRanker:
    """The packaged model, loaded once per process."""
    with _LOCK:
        if "default" not in _LOADED:
            _LOADED["default"] = LearnedRanker.load()
        return _LOADED["default"]
