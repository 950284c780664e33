"""The hand-set fusion that ranked experiences until issue 40: a baseline, never the product.

Weighted reciprocal-rank fusion of the session rankings (the retrievers', the code locations',
and in a memory of commits the title, subject and release rankings), a relevance floor on the
fused score, and a logistic calibration of how far an experience leads the others. Its ~20
numbers were fitted on the 62 SWE-ContextBench dev tasks (the session knobs, by the retired
`eval.replay.relevance_cv`) and on 118 public past-fix tasks (the commit knobs, by the retired
`eval.quality.past_fixes_cv`); they are kept here as they shipped (`be53fe2`), so that the
relevance model is compared with them on the same candidates (`train/ranker/train.py`) and on
the same Searches (`eval.replay`, system `fused`: `Memory(ranker=FusedRanker())`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from codemem.ranking.features import candidates
from codemem.ranking.recipes import DEFAULT_SEARCH
from codemem.ranking.relevance import RETRIEVERS, SessionSignals, runner_up, share_lead
from codemem.ranking.search_config import SearchConfig
from codemem.ranking.types import Ranking


@dataclass(frozen=True)
class Fusion:
    """The fusion's knobs: each ranking's weight, the session rank constant, what a mentioned
    code key counts against an edited one, and the calibration's logistic coefficients
    (intercept; lead in the fusion and in BM25; nearest cosine; how many retrievers rank it first)."""

    weights: tuple[tuple[str, float], ...] = (
        ("lexical", 1.0), ("dense", 1.5), ("refs", 1.0), ("location", 1.0),
        ("title", 3.0), ("subject", 3.0), ("since", 6.0))
    session_rrf_k: int = 3
    location_mention_weight: float = 0.25
    coefficients: tuple[float, ...] = (-3.3111, 2.7242, 0.8415, 1.1823, 0.593)
    # What the shipped fusion's answers read: the floor as a share of the best fused score,
    # the threshold on the calibrated relevance.
    relevance_floor: float = 0.15
    quiet_below: float = 0.42


FUSED = Fusion()


def location_ranks(signals: SessionSignals, fusion: Fusion = FUSED) -> dict[str, int]:
    """The sessions by code-location score: edited keys' idf mass plus a share of mentioned ones'."""
    scored = {k: e + fusion.location_mention_weight * m for k, (e, m) in signals.location.items()}
    order = sorted((k for k, s in scored.items() if s > 0), key=lambda k: (-scored[k], k))
    return {k: i for i, k in enumerate(order, 1)}


def fuse(signals: SessionSignals, fusion: Fusion = FUSED) -> dict[str, float]:
    """Weighted RRF of the session rankings, scaled so that first place in every ranking
    scores 1 (the commit rankings count only where they are held)."""
    k = fusion.session_rrf_k
    weights = dict(fusion.weights)
    ranks = {**signals.ranks, "location": location_ranks(signals, fusion), **signals.commit_ranks}
    top = sum(w for name, w in weights.items() if name in ranks) / (k + 1) or 1.0
    scores: dict[str, float] = {}
    for name, by_session in ranks.items():
        if w := weights.get(name, 0.0):
            for key, rank in by_session.items():
                scores[key] = scores.get(key, 0.0) + w / (k + rank) / top
    return scores


def relevance(signals: SessionSignals, key: str, fused: float, other: float, fusion: Fusion = FUSED) -> float:
    """The calibrated relevance in (0, 1): a logistic function of the lead over the best other
    session in the fusion and in BM25, the cosine, and how many retrievers rank it first."""
    bm25_other = signals.bm25_others.get(key, max(signals.bm25.values(), default=0.0))
    x = (share_lead(fused, other), share_lead(signals.bm25.get(key, 0.0), bm25_other), signals.cosine.get(key, 0.0),
         float(sum(signals.ranks.get(name, {}).get(key) == 1 for name in RETRIEVERS)))
    b0, *b = fusion.coefficients
    z = b0 + sum(w * f for w, f in zip(b, x, strict=True))
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))


@dataclass(frozen=True)
class FusedRanker:
    """The fusion as a `codemem.ranking.types.Ranker`: the relevance model's candidates ordered
    by their fused score (the floor reads it), each with the calibrated relevance."""

    fusion: Fusion = FUSED
    features: tuple[str, ...] = ()  # it reads the signals, not the model's features

    def rank(self, signals: SessionSignals, explain: int = 0) -> Ranking:
        keys = set(candidates(signals))
        fused = {k: v for k, v in fuse(signals, self.fusion).items() if k in keys}
        others = runner_up(fused)
        return Ranking(fused, {k: relevance(signals, k, v, others[k], self.fusion) for k, v in fused.items()}, {})


def fused_search(base: SearchConfig = DEFAULT_SEARCH, fusion: Fusion = FUSED) -> SearchConfig:
    """`base` with the fusion's floor and quiet threshold (the answer's shape is `base`'s)."""
    return base.replace({"calibration.relevance_floor": fusion.relevance_floor,
                         "calibration.quiet_below": fusion.quiet_below})
