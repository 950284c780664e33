"""Which experiences a task is about, and how sure we are: signals, fusion, calibration.

Each retriever ranks sessions by their best item (a long session must not win by having
many weak matches); code-location evidence (`locations`) ranks them by the idf mass of
the code they share with the task. Weighted reciprocal-rank fusion of those rankings
orders the experiences. In a memory of commit experiences the report's title and opening
prose rank them too, and the changes released since the version a report names are lifted
(`releases`): `SessionSignals.commit_ranks`.

The fused score says which experience comes first, not whether any is related: it is
relative to the other candidates, so a memory with nothing related still has a "best"
experience. What tells a related experience from the best of many look-alikes is how far
it stands out: its lead over the best other experience in the fusion and in BM25 (a share
of the larger score, so the same in a repository whose texts all score high as in one
whose texts score low) and how many retrievers put it first; the cosine of its nearest
item to the task anchors that in how close it is at all. Absolute fused scores and
code-location mass are left out: they do not carry over from one repository to another.
The relevance of an experience is a logistic function of those
signals: a probability-like number comparable across queries, which decides whether an
answer carries evidence or stays quiet (`Calibration.quiet_below`). Its few coefficients
are data (`ranking/recipes.py`), fitted by `python -m eval.replay.relevance_cv`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from codemem.ranking.locations import location_score
from codemem.ranking.rrf import tied_ranks
from codemem.ranking.search_config import SearchConfig
from codemem.ranking.types import Candidate

RETRIEVERS = ("lexical", "dense", "refs")


def session_ranks(items: Sequence[Candidate]) -> dict[str, int]:
    """Each session's rank (1 = best) by its best item in a best-first list; sessions whose
    best items tie share a rank (`tied_ranks`)."""
    best: dict[str, Candidate] = {}
    for item in items:
        best.setdefault(str(item.fields["session_key"]), item)
    return {str(c.fields["session_key"]): rank for rank, c in tied_ranks(list(best.values()))}


def session_scores(items: Sequence[Candidate]) -> dict[str, float]:
    """Each session's score by its best item in a best-first list, best session first."""
    scores: dict[str, float] = {}
    for item in items:
        scores.setdefault(str(item.fields["session_key"]), item.score)
    return scores


@dataclass
class SessionSignals:
    """What the retrievers and the location index say about each candidate session."""

    ranks: dict[str, dict[str, int]]  # retriever name -> session key -> rank
    cosine: dict[str, float]  # session key -> cosine of its nearest item to the query
    bm25: dict[str, float] = field(default_factory=dict)  # session key -> BM25 score of its best item
    location: dict[str, tuple[float, float]] = field(default_factory=dict)  # key -> (edited, mentioned) idf mass
    # Rankings by the report's title, made only in a memory that holds commit experiences
    # ("title": BM25 of the title and the prose's first words over every experience's text,
    # "subject": of the title over the commits' subjects; "since": the candidates released
    # since the version the report names, all first, `ranking/releases.py`):
    # name -> session key -> rank; only non-empty ones are held, so a memory of agent
    # sessions alone has none.
    commit_ranks: dict[str, dict[str, int]] = field(default_factory=dict)
    # For the learned ranker's features (`ranking/features.py`): the BM25 score of each
    # session's best item in the references index, and in the lexical one by the item's
    # kind ("card": the task and its summary, "step": an edit or error, "message": raw text).
    refs_bm25: dict[str, float] = field(default_factory=dict)
    kind_bm25: dict[str, dict[str, float]] = field(default_factory=dict)
    # For the learned ranker too: each candidate's field-wise matches with the task
    # (`ranking/fields.py`), read from the candidates' cards where the learned ranking orders
    # them (`Memory.signals`).
    fields: dict[str, tuple[float, ...]] = field(default_factory=dict)
    # Whether the candidates are conversations (no coding work: `Experience.metadata`), which
    # the learned ranker never saw; set where their cards are read.
    conversations: bool = False

    @classmethod
    def of(cls, found: Mapping[str, Sequence[Candidate]], location: dict[str, tuple[float, float]],
           commit_ranks: Mapping[str, dict[str, int]] | None = None) -> SessionSignals:
        """From each retriever's best-first items (`found["dense"]` scores are cosines)."""
        held = {name: ranks for name, ranks in (commit_ranks or {}).items() if ranks}
        lexical = found.get("lexical", ())
        kinds = {str(item.fields.get("kind", "")) for item in lexical}
        return cls({name: session_ranks(items) for name, items in found.items()},
                   session_scores(found.get("dense", ())), session_scores(lexical), location, held,
                   session_scores(found.get("refs", ())),
                   {kind: session_scores([i for i in lexical if i.fields.get("kind", "") == kind]) for kind in kinds})

    @cached_property
    def bm25_others(self) -> dict[str, float]:
        """For each session, the best BM25 score among the others'."""
        return runner_up(self.bm25)

    def location_ranks(self, config: SearchConfig) -> dict[str, int]:
        scored = {k: location_score(e, m, config.fusion.location_mention_weight) for k, (e, m) in self.location.items()}
        order = sorted((k for k, s in scored.items() if s > 0), key=lambda k: -scored[k])
        return {k: i for i, k in enumerate(order, 1)}

    def location_of(self, key: str, config: SearchConfig) -> float:
        edited, mentioned = self.location.get(key, (0.0, 0.0))
        return location_score(edited, mentioned, config.fusion.location_mention_weight)


def fuse(signals: SessionSignals, config: SearchConfig) -> dict[str, float]:
    """Weighted RRF of the session rankings, scaled so that first place in every ranking
    scores 1 (the commit rankings count only where they are held: a memory of agent sessions
    scores as if they did not exist)."""
    k = config.fusion.session_rrf_k
    weights = config.fusion.weights()
    ranks = {**signals.ranks, "location": signals.location_ranks(config), **signals.commit_ranks}
    top = sum(w for name, w in weights.items() if name in ranks) / (k + 1) or 1.0
    scores: dict[str, float] = {}
    for name, by_session in ranks.items():
        w = weights.get(name, 0.0)
        if not w:
            continue
        for key, rank in by_session.items():
            scores[key] = scores.get(key, 0.0) + w / (k + rank) / top
    return scores


def runner_up(scores: Mapping[str, float]) -> dict[str, float]:
    """For each session, the best score among the others' (0 when there are none)."""
    top = sorted(scores.values(), reverse=True)[:2] + [0.0, 0.0]
    return {key: top[1] if s >= top[0] else top[0] for key, s in scores.items()}


def share_lead(value: float, other: float) -> float:
    """How far `value` stands out from the best `other`, as a share of the larger: in
    [-1, 1], 0 for a tie, 1 when nothing else scores (so the same on any score's scale)."""
    top = max(value, other)
    return (value - other) / top if top > 0 else 0.0


def features(signals: SessionSignals, key: str, fused: float, other: float) -> tuple[float, float, float, float]:
    """The calibration's inputs for one session: its lead over the best other session
    (`other`: its fused score) in the fusion and in BM25 (shares of the larger score), the
    cosine of its nearest item, and how many retrievers rank it first."""
    bm25_other = signals.bm25_others.get(key, max(signals.bm25.values(), default=0.0))
    return (share_lead(fused, other), share_lead(signals.bm25.get(key, 0.0), bm25_other),
            signals.cosine.get(key, 0.0),
            float(sum(signals.ranks.get(name, {}).get(key) == 1 for name in RETRIEVERS)))


def relevance(signals: SessionSignals, key: str, fused: float, other: float, config: SearchConfig) -> float:
    """Calibrated relevance in (0, 1): a logistic function of `features`."""
    b0, *b = config.calibration.coefficients
    z = b0 + sum(w * f for w, f in zip(b, features(signals, key, fused, other), strict=True))
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))


def learned_applies(signals: SessionSignals, config: SearchConfig) -> bool:
    """Whether the learned ranker orders these sessions: asked for, and not a memory of
    commits, whose title, subject and release rankings it has no features for, nor one of
    conversations (it was trained on agent sessions); there the fusion ranks."""
    return config.ranking == "learned" and not signals.commit_ranks and not signals.conversations


def explain(signals: SessionSignals, key: str, fused: float, other: float, config: SearchConfig) -> dict[str, object]:
    """Why an experience was returned: its relevance and each signal (ranks 1 = best)."""
    location_rank = signals.location_ranks(config).get(key)
    # A learned ranking's score is its calibrated P(related) already (`ranking/learned.py`).
    p = fused if learned_applies(signals, config) else relevance(signals, key, fused, other, config)
    return {
        "relevance": round(p, 4),
        "fused": round(fused, 4),
        "signals": {
            **{f"{name}_rank": signals.ranks.get(name, {}).get(key) for name in RETRIEVERS},
            **{f"{name}_rank": ranks.get(key) for name, ranks in signals.commit_ranks.items()},
            "cosine": round(signals.cosine[key], 4) if key in signals.cosine else None,
            "bm25": round(signals.bm25[key], 3) if key in signals.bm25 else None,
            "location": round(signals.location_of(key, config), 3),
            "location_rank": location_rank,
        },
    }
