"""Per-candidate features of the relevance model (`ranking/learned.py`): what each retriever,
the code-location index, the commit rankings and the card's fields say about one candidate
experience, whatever its kind (an agent session, a commit, a merged pull request).

A pure function of the `SessionSignals` a Search computes (its `fields` are read from the
candidates' cards, `ranking/fields.py`): no model, no hand-set weight. Ranks are given as
reciprocal ranks (0: the ranking did not find it), so an absent signal is a zero, not a
sentinel; a commit ranking absent from a memory of agent sessions reads 0 for every
candidate. The candidates are the sessions that any ranking puts in its first `depth`.

Two kinds of feature. Relative ones (a rank, a share of the query's best, a lead over the best
other candidate) tell the candidates of one query apart whatever the memory's scale, but say
nothing of whether the best is related at all: the best of a one-experience memory has every
share at 1. Absolute ones say that: the raw cosine of the candidate's nearest item to the task
(MiniLM's, the same model in every memory), the share of the query's words found in its card,
and the share of the query's code references it holds. The calibration of P(related) needs
both (`train/ranker/README.md`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from codemem.ranking.fields import FIELDS
from codemem.ranking.relevance import COMMIT_RANKINGS, RETRIEVERS, SessionSignals, share_lead
from codemem.ranking.time_features import NOT_KNOWN, TIME_FEATURES

# How deep each ranking is read for candidates (the training data's too: train/ranker).
CANDIDATE_DEPTH = 30
KINDS = ("card", "step", "message")

# Every one but the kind says "more related" as it grows, which the model is held to (monotone
# constraints, `MONOTONE`), so that it cannot learn a quirk of the training memories in reverse.
# The kind (1 for a commit or merged pull request, 0 for an agent session) lets the trees read
# the other features differently for each kind: a commit's retrievers match a short message and
# a diff, a session's a whole transcript.
FEATURES: tuple[str, ...] = (
    "commit",
    "lexical_rr", "lexical_share", "bm25_lead",
    "dense_rr", "dense_gap", "cosine",
    "refs_rr", "refs_share", "refs_held",
    "location_rr", "edited_share",
    "firsts", "found_by",
    *(f"{kind}_share" for kind in KINDS),
    *(f"{name}_rr" for name in COMMIT_RANKINGS),
    *(f"{name}_match" for name in FIELDS),
    *TIME_FEATURES,
)


# The time features are free: a newer candidate is the better answer to a question about now,
# not to every question, which the trees learn from the question's cues beside them.
MONOTONE: tuple[int, ...] = tuple(0 if name == "commit" or name in TIME_FEATURES else 1 for name in FEATURES)


def location_ranks(signals: SessionSignals) -> dict[str, int]:
    """The sessions that share code keys with the task, by the idf mass of the keys they
    edited, then of those they only mention (no weight between the two)."""
    order = sorted((k for k, (e, m) in signals.location.items() if e > 0 or m > 0),
                   key=lambda k: (-signals.location[k][0], -signals.location[k][1], k))
    return {k: i for i, k in enumerate(order, 1)}


def _rankings(signals: SessionSignals) -> dict[str, dict[str, int]]:
    """Every ranking that finds candidates: the retrievers', the code locations' and the
    commit title and subject rankings ("since" marks, it does not rank)."""
    return {**{name: signals.ranks.get(name, {}) for name in RETRIEVERS}, "location": location_ranks(signals),
            **{name: signals.commit_ranks.get(name, {}) for name in COMMIT_RANKINGS if name != "since"}}


def candidates(signals: SessionSignals, depth: int = CANDIDATE_DEPTH) -> list[str]:
    """The sessions any ranking puts in its first `depth`, by key (the model orders them)."""
    return sorted({key for ranks in _rankings(signals).values() for key, rank in ranks.items() if rank <= depth})


def _share(value: float, best: float) -> float:
    return value / best if best > 0 else 0.0


def _rr(rank: int | None) -> float:
    return 1.0 / rank if rank else 0.0


def candidate_features(signals: SessionSignals, keys: Sequence[str]) -> dict[str, tuple[float, ...]]:
    """Each of `keys`' feature vector, in `FEATURES` order."""
    rankings = _rankings(signals)
    firsts = [rankings[name] for name in (*RETRIEVERS, "location")]
    best_bm25 = max(signals.bm25.values(), default=0.0)
    best_cos = max(signals.cosine.values(), default=0.0)
    best_refs = max(signals.refs_bm25.values(), default=0.0)
    best_edited = max((e for e, _ in signals.location.values()), default=0.0)
    best_kind = {kind: max(signals.kind_bm25.get(kind, {}).values(), default=0.0) for kind in KINDS}
    no_fields = (0.0,) * len(FIELDS)
    no_time = (NOT_KNOWN,) * len(TIME_FEATURES)  # no candidate dated: not known
    out: dict[str, tuple[float, ...]] = {}
    for key in keys:
        bm25 = signals.bm25.get(key, 0.0)
        cos = signals.cosine.get(key)
        edited = signals.location.get(key, (0.0, 0.0))[0]
        out[key] = (
            float(key in signals.commits),
            _rr(rankings["lexical"].get(key)), _share(bm25, best_bm25),
            share_lead(bm25, signals.bm25_others.get(key, best_bm25)),
            _rr(rankings["dense"].get(key)), (cos - best_cos) if cos is not None else -1.0,
            max(cos, 0.0) if cos is not None else 0.0,
            _rr(rankings["refs"].get(key)), _share(signals.refs_bm25.get(key, 0.0), best_refs),
            signals.refs_held.get(key, 0.0),
            _rr(rankings["location"].get(key)), _share(edited, best_edited),
            float(sum(ranks.get(key) == 1 for ranks in firsts)),
            float(sum(key in ranks for ranks in firsts)),
            *(_share(signals.kind_bm25.get(kind, {}).get(key, 0.0), best_kind[kind]) for kind in KINDS),
            *(_rr(signals.commit_ranks.get(name, {}).get(key)) for name in COMMIT_RANKINGS),
            *signals.fields.get(key, no_fields),
            *signals.time.get(key, no_time),
        )
    return out


def as_mapping(vector: Sequence[float]) -> Mapping[str, float]:
    """A feature vector by name (for explanations and tests)."""
    return dict(zip(FEATURES, vector, strict=True))
