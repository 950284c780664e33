"""What the retrievers say about each candidate experience: the signals a Search hands the
relevance model (`ranking/features.py`, `ranking/learned.py`).

Each retriever ranks sessions by their best item (a long session must not win by having many
weak matches); code-location evidence (`locations`) scores them by the idf mass of the code they
share with the task. In a memory of commit experiences the report's title ranks them too (BM25
of the title and opening prose over every experience's items, and of the title over the commit
subjects, `subjects`), and the changes released since the version a report names are marked
(`releases`): `SessionSignals.commit_ranks`, empty in a memory without commits, where those
features read 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Protocol

from codemem.ranking.rrf import tied_ranks
from codemem.ranking.types import Candidate, Ranking
from codemem.timeline.questions import Asked

RETRIEVERS = ("lexical", "dense", "refs")
COMMIT_RANKINGS = ("title", "subject", "since")


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
    """What the retrievers and the card indexes say about each candidate session."""

    ranks: dict[str, dict[str, int]]  # retriever name -> session key -> rank
    cosine: dict[str, float]  # session key -> cosine of its nearest item to the query
    bm25: dict[str, float] = field(default_factory=dict)  # session key -> BM25 score of its best item
    location: dict[str, tuple[float, float]] = field(default_factory=dict)  # key -> (edited, mentioned) idf mass
    # key -> the share of the query's code references (paths, symbols, tickets) its card holds:
    # absolute, unlike the idf masses (`LocationIndex.held`)
    refs_held: dict[str, float] = field(default_factory=dict)
    # In a memory that holds commit experiences: "title" (BM25 of the report's title and first
    # prose words over every experience's items), "subject" (of the title over the commits'
    # subjects) and "since" (the candidates released since the version the report names, all
    # first): name -> session key -> rank; only non-empty ones are held.
    commit_ranks: dict[str, dict[str, int]] = field(default_factory=dict)
    commits: frozenset[str] = frozenset()  # the candidates that are commit experiences (not sessions)
    # The BM25 score of each session's best item in the references index, and in the lexical
    # one by the item's kind ("card": the task and its summary, "step": an edit or error,
    # "message": raw text).
    refs_bm25: dict[str, float] = field(default_factory=dict)
    kind_bm25: dict[str, dict[str, float]] = field(default_factory=dict)
    # Each candidate's field-wise matches with the task (`ranking/fields.py`), read from the
    # candidates' cards by the Search (`Searcher.signals`).
    fields: dict[str, tuple[float, ...]] = field(default_factory=dict)
    # Each candidate's time features (`ranking/time_features.py`), read from the same cards.
    time: dict[str, tuple[float, ...]] = field(default_factory=dict)
    # What the question asks of time (`timeline/questions.py`); None where no candidate is dated.
    asked: Asked | None = None

    @classmethod
    def of(cls, found: Mapping[str, Sequence[Candidate]], location: dict[str, tuple[float, float]],
           commit_ranks: Mapping[str, dict[str, int]] | None = None,
           refs_held: dict[str, float] | None = None) -> SessionSignals:
        """From each retriever's best-first items (`found["dense"]` scores are cosines)."""
        held = {name: ranks for name, ranks in (commit_ranks or {}).items() if ranks}
        lexical = found.get("lexical", ())
        kinds = {str(item.fields.get("kind", "")) for item in lexical}
        return cls({name: session_ranks(items) for name, items in found.items()},
                   session_scores(found.get("dense", ())), session_scores(lexical), location,
                   refs_held=refs_held or {}, commit_ranks=held, refs_bm25=session_scores(found.get("refs", ())),
                   kind_bm25={kind: session_scores([i for i in lexical if i.fields.get("kind", "") == kind])
                              for kind in kinds})

    @cached_property
    def bm25_others(self) -> dict[str, float]:
        """For each session, the best BM25 score among the others'."""
        return runner_up(self.bm25)


def runner_up(scores: Mapping[str, float]) -> dict[str, float]:
    """For each session, the best score among the others' (0 when there are none)."""
    top = sorted(scores.values(), reverse=True)[:2] + [0.0, 0.0]
    return {key: top[1] if s >= top[0] else top[0] for key, s in scores.items()}


def share_lead(value: float, other: float) -> float:
    """How far `value` stands out from the best `other`, as a share of the larger: in
    [-1, 1], 0 for a tie, 1 when nothing else scores (so the same on any score's scale)."""
    top = max(value, other)
    return (value - other) / top if top > 0 else 0.0


class Ranker(Protocol):
    """What orders a Search's candidate experiences (`features.candidates`): the relevance
    model (`ranking/learned.py`); an evaluation may pass another to `Memory` to compare
    rankings on the same Search."""

    @property
    def features(self) -> tuple[str, ...]:
        """The model features (`features.FEATURES`) it reads: a Search computes the costlier
        ones (the time features) only for a ranker that reads them."""
        ...

    def rank(self, signals: SessionSignals, explain: int) -> Ranking:
        """Every candidate's score and P(related), and what carried the first `explain`."""
        ...
