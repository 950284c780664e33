"""Per-candidate features for the learned ranker (`ranking/learned.py`): what each retriever,
the code-location index and the card's fields say about one candidate experience.

A pure function of the `SessionSignals` a Search computes (its `fields` are read from the
candidates' cards, `ranking/fields.py`): no model, no hand-set weight. Scores are given raw and
as a share of the query's best one (a BM25 score means little across repositories; its share of
the best candidate's says how close it comes), ranks as reciprocal ranks (0: the retriever did
not find it), so an absent signal is a zero, not a sentinel. The candidates are the sessions
that any ranking puts in its first `depth`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from codemem.ranking.fields import FIELDS
from codemem.ranking.relevance import RETRIEVERS, SessionSignals, fuse, share_lead
from codemem.ranking.search_config import SearchConfig

# How deep each ranking is read for candidates (the training data's too: train/ranker).
CANDIDATE_DEPTH = 30
KINDS = ("card", "step", "message")

# Every feature is scale-free (a rank, a share of the query's best, a lead over the best other
# candidate, a share of the query's words): raw BM25 scores, cosines and idf masses depend on
# the memory's size and texts, so they do not carry over from one repository to another.
# And every one says "more related" as it grows, which the model is held to (monotone
# constraints), so that it cannot learn a quirk of the training memories in reverse.
FEATURES: tuple[str, ...] = (
    "lexical_rr", "lexical_share", "bm25_lead",
    "dense_rr", "dense_gap",
    "refs_rr", "refs_share",
    "location_rr", "edited_share",
    "firsts", "found_by",
    *(f"{kind}_share" for kind in KINDS),
    *(f"{name}_match" for name in FIELDS),
)


def location_ranks(signals: SessionSignals) -> dict[str, int]:
    """The sessions that share code keys with the task, by the idf mass of the keys they
    edited, then of those they only mention (no weight between the two)."""
    order = sorted((k for k, (e, m) in signals.location.items() if e > 0 or m > 0),
                   key=lambda k: (-signals.location[k][0], -signals.location[k][1], k))
    return {k: i for i, k in enumerate(order, 1)}


def _rankings(signals: SessionSignals) -> dict[str, dict[str, int]]:
    return {**{name: signals.ranks.get(name, {}) for name in RETRIEVERS}, "location": location_ranks(signals)}


def candidates(signals: SessionSignals, config: SearchConfig, depth: int = CANDIDATE_DEPTH) -> list[str]:
    """The sessions any retriever or the location index ranks in its first `depth`, in the
    fused order (best first; the order only breaks the model's ties)."""
    keys = {key for ranks in _rankings(signals).values() for key, rank in ranks.items() if rank <= depth}
    fused = fuse(signals, config)
    return sorted(keys, key=lambda k: (-fused.get(k, 0.0), k))


def _share(value: float, best: float) -> float:
    return value / best if best > 0 else 0.0


def _rr(rank: int | None) -> float:
    return 1.0 / rank if rank else 0.0


def candidate_features(signals: SessionSignals, keys: Sequence[str]) -> dict[str, tuple[float, ...]]:
    """Each of `keys`' feature vector, in `FEATURES` order."""
    rankings = _rankings(signals)
    best_bm25 = max(signals.bm25.values(), default=0.0)
    best_cos = max(signals.cosine.values(), default=0.0)
    best_refs = max(signals.refs_bm25.values(), default=0.0)
    best_edited = max((e for e, _ in signals.location.values()), default=0.0)
    best_kind = {kind: max(signals.kind_bm25.get(kind, {}).values(), default=0.0) for kind in KINDS}
    no_fields = (0.0,) * len(FIELDS)
    out: dict[str, tuple[float, ...]] = {}
    for key in keys:
        bm25 = signals.bm25.get(key, 0.0)
        cos = signals.cosine.get(key)
        edited = signals.location.get(key, (0.0, 0.0))[0]
        out[key] = (
            _rr(rankings["lexical"].get(key)), _share(bm25, best_bm25),
            share_lead(bm25, signals.bm25_others.get(key, best_bm25)),
            _rr(rankings["dense"].get(key)), (cos - best_cos) if cos is not None else -1.0,
            _rr(rankings["refs"].get(key)), _share(signals.refs_bm25.get(key, 0.0), best_refs),
            _rr(rankings["location"].get(key)), _share(edited, best_edited),
            float(sum(ranks.get(key) == 1 for ranks in rankings.values())),
            float(sum(key in ranks for ranks in rankings.values())),
            *(_share(signals.kind_bm25.get(kind, {}).get(key, 0.0), best_kind[kind]) for kind in KINDS),
            *signals.fields.get(key, no_fields),
        )
    return out


def feature_rows(signals: SessionSignals, config: SearchConfig,
                 depth: int = CANDIDATE_DEPTH) -> tuple[list[str], list[tuple[float, ...]]]:
    """The candidates (fused order) and their feature vectors."""
    keys = candidates(signals, config, depth)
    by_key = candidate_features(signals, keys)
    return keys, [by_key[k] for k in keys]


def as_mapping(vector: Sequence[float]) -> Mapping[str, float]:
    """A feature vector by name (for explanations and tests)."""
    return dict(zip(FEATURES, vector, strict=True))
