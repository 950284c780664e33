"""The learned ranker: a LightGBM LambdaRank model over `ranking/features.py`, shipped as
package data (`models/ranker.txt`, its card `models/ranker.json`, trained by
`train/ranker/train.py` on public SWE-bench Verified tasks; `train/ranker/README.md`).

It orders the candidate experiences (`features.candidates`) by the model's score, and maps
that score to P(related) with the Platt calibration fitted on out-of-fold scores. Sessions
outside the candidates follow in the fused order. The loader refuses a model whose card
names other features than this code computes.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from codemem.ranking.features import FEATURES, candidate_features, candidates
from codemem.ranking.recipes import SearchConfig
from codemem.ranking.relevance import SessionSignals, fuse

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

    def raw_scores(self, vectors: Mapping[str, tuple[float, ...]]) -> dict[str, float]:
        if not vectors:
            return {}
        keys = list(vectors)
        scores = self.booster.predict(np.asarray([vectors[k] for k in keys], dtype=np.float64))
        return {k: float(s) for k, s in zip(keys, scores, strict=True)}

    def probability(self, raw: float) -> float:
        """P(related) of one raw score (the Platt calibration)."""
        a, b = self.platt
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, a * raw + b))))

    def scores(self, signals: SessionSignals, config: SearchConfig) -> dict[str, float]:
        """Every fused session's score, best first when sorted: the candidates' P(related)
        in the model's order (raised above every non-candidate), then the rest in fused order."""
        keys = candidates(signals, config, self.depth)
        raw = self.raw_scores(candidate_features(signals, config, keys))
        fused = fuse(signals, config)
        # Non-candidates sit below every candidate: fused scores (at most 1) scaled under the
        # lowest candidate's probability.
        out = {k: self.probability(s) for k, s in raw.items()}
        least = min(out.values(), default=1.0)
        top = max(fused.values(), default=1.0) or 1.0
        for key, value in fused.items():
            if key not in out:
                out[key] = 0.5 * least * value / top
        return out


    def reasons(self, signals: SessionSignals, config: SearchConfig, keys: Sequence[str],
                top: int = 3) -> dict[str, dict[str, float]]:
        """For each of `keys` among the candidates: the features that moved its score most
        (LightGBM's per-feature contributions, largest magnitude first), for its metadata."""
        vectors = candidate_features(signals, config, [k for k in keys if k in set(candidates(signals, config, self.depth))])
        if not vectors:
            return {}
        names = list(vectors)
        contrib = self.booster.predict(np.asarray([vectors[k] for k in names], dtype=np.float64), pred_contrib=True)
        out = {}
        for key, row in zip(names, contrib, strict=True):
            order = np.argsort(-np.abs(row[:-1]))[:top]  # the last column is the bias
            out[key] = {FEATURES[i]: round(float(row[i]), 3) for i in order}
        return out


_LOADED: dict[str, LearnedRanker] = {}
_LOCK = threading.Lock()


def packaged() -> LearnedRanker:
    """The packaged model, loaded once per process."""
    with _LOCK:
        if "default" not in _LOADED:
            _LOADED["default"] = LearnedRanker.load()
        return _LOADED["default"]
