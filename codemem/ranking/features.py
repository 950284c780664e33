"""Per-candidate features for the learned ranker (`ranking/learned.py`): what each retriever,
the code-location index and the hand-set fusion say about one candidate experience.

A pure function of the `SessionSignals` a Search computes anyway: no store read, no model.
Scores are given raw and as a share of the query's best one (a BM25 score means little
across repositories; its share of the best candidate's says how close it comes), ranks as
reciprocal ranks (0: the retriever did not find it), so an absent signal is a zero, not a
sentinel. The candidates are the sessions that any ranking puts in its first `depth`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from codemem.ranking.recipes import SearchConfig
from codemem.ranking.relevance import RETRIEVERS, SessionSignals, fuse, runner_up, share_lead

# How deep each ranking is read for candidates (the training data's too: train/ranker).
CANDIDATE_DEPTH = 30
KINDS = ("card", "step", "message")

FEATURES: tuple[str, ...] = (
    "lexical_rr", "lexical_bm25", "lexical_share", "bm25_lead",
    "dense_rr", "dense_cos", "dense_gap",
    "refs_rr", "refs_bm25", "refs_share",
    "location_rr", "location_edited", "location_mentioned", "location_share",
    "fused", "fused_rr", "fused_lead",
    "firsts", "found_by",
    *(f"{kind}_share" for kind in KINDS),
    "candidates",
)


def _rankings(signals: SessionSignals, config: SearchConfig) -> dict[str, dict[str, int]]:
    return {**{name: signals.ranks.get(name, {}) for name in RETRIEVERS},
            "location": signals.location_ranks(config)}


def candidates(signals: SessionSignals, config: SearchConfig, depth: int = CANDIDATE_DEPTH) -> list[str]:
    """The sessions any retriever or the location index ranks in its first `depth`, in the
    fused order (best first)."""
    keys = {key for ranks in _rankings(signals, config).values() for key, rank in ranks.items() if rank <= depth}
    fused = fuse(signals, config)
    return sorted(keys, key=lambda k: (-fused.get(k, 0.0), k))


def _share(value: float, best: float) -> float:
    return value / best if best > 0 else 0.0


def _rr(rank: int | None) -> float:
    return 1.0 / rank if rank else 0.0


def candidate_features(signals: SessionSignals, config: SearchConfig,
                       keys: Sequence[str]) -> dict[str, tuple[float, ...]]:
    """Each of `keys`' feature vector, in `FEATURES` order."""
    rankings = _rankings(signals, config)
    fused = fuse(signals, config)
    fused_order = {k: i for i, k in enumerate(sorted(fused, key=lambda k: (-fused[k], k)), 1)}
    fused_others = runner_up(fused)
    location = {k: signals.location_of(k, config) for k in signals.location}
    best_bm25 = max(signals.bm25.values(), default=0.0)
    best_cos = max(signals.cosine.values(), default=0.0)
    best_refs = max(signals.refs_bm25.values(), default=0.0)
    best_location = max(location.values(), default=0.0)
    best_kind = {kind: max(signals.kind_bm25.get(kind, {}).values(), default=0.0) for kind in KINDS}
    out: dict[str, tuple[float, ...]] = {}
    for key in keys:
        bm25 = signals.bm25.get(key, 0.0)
        cos = signals.cosine.get(key)
        edited, mentioned = signals.location.get(key, (0.0, 0.0))
        score = fused.get(key, 0.0)
        bm25_other = signals.bm25_others.get(key, best_bm25)
        out[key] = (
            _rr(rankings["lexical"].get(key)), bm25, _share(bm25, best_bm25), share_lead(bm25, bm25_other),
            _rr(rankings["dense"].get(key)), cos or 0.0, (cos - best_cos) if cos is not None else -1.0,
            _rr(rankings["refs"].get(key)), signals.refs_bm25.get(key, 0.0),
            _share(signals.refs_bm25.get(key, 0.0), best_refs),
            _rr(rankings["location"].get(key)), edited, mentioned, _share(location.get(key, 0.0), best_location),
            score, _rr(fused_order.get(key)), share_lead(score, fused_others.get(key, 0.0)),
            float(sum(ranks.get(key) == 1 for ranks in rankings.values())),
            float(sum(key in ranks for ranks in rankings.values())),
            *(_share(signals.kind_bm25.get(kind, {}).get(key, 0.0), best_kind[kind]) for kind in KINDS),
            float(len(keys)),
        )
    return out


def feature_rows(signals: SessionSignals, config: SearchConfig,
                 depth: int = CANDIDATE_DEPTH) -> tuple[list[str], list[tuple[float, ...]]]:
    """The candidates (fused order) and their feature vectors."""
    keys = candidates(signals, config, depth)
    by_key = candidate_features(signals, config, keys)
    return keys, [by_key[k] for k in keys]


def as_mapping(vector: Sequence[float]) -> Mapping[str, float]:
    """A feature vector by name (for explanations and tests)."""
    return dict(zip(FEATURES, vector, strict=True))
