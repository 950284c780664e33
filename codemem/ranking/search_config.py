"""The parts of a search configuration, each a small frozen record that checks its own values.

A `SearchConfig` nests them by concern: what the retrievers fetch (`Retrieval`), how their
rankings are fused (`Fusion`), how relevance is calibrated (`Calibration`), how much an answer
carries (`AnswerShape`) and how a memory of dialogue is answered (`TurnConfig`). The values
that ship are the named recipes in `codemem.ranking.recipes`; a caller varies one by
replacing a part's field by its dotted path (`config.replace({"fusion.dense_weight": 0.0})`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Self

from codemem.experience.building.render import CARD_CHARS
from codemem.ranking.shape import CHARS_PER_TOKEN
from codemem.timeline.turns import TurnConfig

RANKINGS = ("fused", "learned")


class ConfigTree:
    """A frozen dataclass of frozen dataclasses whose leaves are named by dotted paths."""

    def replace(self, changes: Mapping[str, object]) -> Self:
        """A copy with each leaf `changes` names by its path ("fusion.dense_weight") set; every
        part touched checks its values again."""
        return _replaced(self, changes, "")

    def value_at(self, path: str) -> Any:
        """The value at dotted `path` ("answer.budget_tokens")."""
        node: Any = self
        for name in path.split("."):
            if not dataclasses.is_dataclass(node) or name not in _field_names(node):
                raise ValueError(f"no setting {path!r}")
            node = getattr(node, name)
        return node


def _field_names(node: object) -> list[str]:
    return [f.name for f in dataclasses.fields(node)]  # type: ignore[arg-type]


def _replaced(node: Any, changes: Mapping[str, object], prefix: str) -> Any:
    names = _field_names(node)
    direct: dict[str, object] = {}
    nested: dict[str, dict[str, object]] = {}
    for path, value in changes.items():
        head, _, rest = path.partition(".")
        if head not in names:
            raise ValueError(f"no setting {prefix + path!r}; {prefix[:-1] or 'the top level'} holds {', '.join(names)}")
        if rest:
            nested.setdefault(head, {})[rest] = value
        else:
            direct[head] = value
    for head, sub in nested.items():
        part = direct.get(head, getattr(node, head))
        if not dataclasses.is_dataclass(part):
            raise ValueError(f"{prefix + head!r} is a value, not a part: {', '.join(prefix + head + '.' + k for k in sub)}")
        direct[head] = _replaced(part, sub, prefix + head + ".")
    return dataclasses.replace(node, **direct)


def _at_least(owner: object, name: str, low: float) -> None:
    value = getattr(owner, name)
    if value < low:
        raise ValueError(f"{type(owner).__name__}.{name} must be at least {low}, not {value}")


def _share(owner: object, name: str) -> None:
    value = getattr(owner, name)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be between 0 and 1, not {value}")


@dataclass(frozen=True)
class Retrieval:
    """What the retrievers fetch for fusion."""

    candidates: int  # how many candidates each retriever hands to fusion
    # Commit experiences only: the report's title and the first `title_prose_words` words of
    # its prose are matched with their text (BM25), and its title with their subjects.
    title_prose_words: int

    def __post_init__(self) -> None:
        _at_least(self, "candidates", 1)
        _at_least(self, "title_prose_words", 0)


@dataclass(frozen=True)
class Fusion:
    """How the retrievers' rankings become one: each ranking's weight in the reciprocal-rank
    fusion of sessions, the rank constants, and the floor below which experiences are left out."""

    lexical_weight: float  # BM25 over items
    dense_weight: float  # nearest cards and items by embedding
    refs_weight: float  # references (paths, symbols, errors)
    # Code-location evidence (`ranking/locations.py`): its weight, and what a code key an
    # experience only mentions counts against one it edited.
    location_weight: float
    location_mention_weight: float
    # Commit experiences only: the title (BM25) and subject (`ranking/subjects.py`) rankings.
    title_weight: float
    subject_weight: float
    # The candidate changes released since the version a report names (`ranking/releases.py`),
    # all tied first in a ranking with this weight.
    since_weight: float
    # Reciprocal-rank constants: item-level fusion (which orders each session's evidence) and
    # session-level fusion (which ranks experiences).
    item_rrf_k: int
    session_rrf_k: int
    # Experiences scoring below this share of the best one's score are left out (0: none).
    relevance_floor: float

    def __post_init__(self) -> None:
        for name in ("lexical_weight", "dense_weight", "refs_weight", "location_weight", "location_mention_weight",
                     "title_weight", "subject_weight", "since_weight", "item_rrf_k", "session_rrf_k"):
            _at_least(self, name, 0)
        _share(self, "relevance_floor")

    def weights(self) -> dict[str, float]:
        """Each session ranking's weight, by the ranking's name."""
        return {"lexical": self.lexical_weight, "dense": self.dense_weight, "refs": self.refs_weight,
                "location": self.location_weight, "title": self.title_weight, "subject": self.subject_weight,
                "since": self.since_weight}


@dataclass(frozen=True)
class Calibration:
    """Calibrated relevance (`ranking/relevance.py`), the threshold below which an answer is quiet,
    and whether an answer is empty when nothing is closely related (`ranking/evidence.py`)."""

    # Logistic coefficients: intercept; lead over the best other experience in the fusion and
    # in BM25 (shares of the larger score); nearest cosine; how many retrievers rank it first.
    coefficients: tuple[float, float, float, float, float]
    # When no experience reaches this the answer stays quiet (0: never quiet).
    quiet_below: float
    # An answer is empty when the memory holds nothing closely related to the query at all
    # (`ranking/evidence.py`); False where every stored item may matter however little it
    # shares with the question (MemoryArena's earlier subtasks).
    empty_when_unrelated: bool = True

    def __post_init__(self) -> None:
        if len(self.coefficients) != 5:
            raise ValueError(f"Calibration.coefficients must hold 5 numbers, not {len(self.coefficients)}")
        _share(self, "quiet_below")


@dataclass(frozen=True)
class AnswerShape:
    """How much of each experience an answer carries (`answer.build`)."""

    budget_tokens: int  # the answer stops at about this many tokens (0: top_k alone bounds it)
    max_item_chars: int  # a loose item longer than this is trimmed, head and tail kept (0: never)
    # Evidence inlined under the best experience's card, and under each of the others:
    # characters, and how many evidence items are read for it.
    first_evidence_chars: int
    evidence_chars: int
    first_evidence_items: int
    evidence_items: int
    # A quiet answer: at most `quiet_experiences` experiences, the first with
    # `quiet_first_evidence_chars` of evidence, each other as a short card of at most
    # `quiet_card_chars` (`experience/building/render.short_card`), loose evidence only where it
    # cannot be inlined (images), all within `quiet_budget_tokens`.
    quiet_experiences: int
    quiet_first_evidence_chars: int
    quiet_card_chars: int
    quiet_budget_tokens: int

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            _at_least(self, f.name, 0)

    def fitted(self, budget_tokens: int | None = None) -> AnswerShape:
        """This shape within `budget_tokens` where that is smaller (a request's compact
        answer), its evidence cut to what the budget leaves beside a card of the largest size:
        the first item of an answer is kept whatever its size (`within_budget`), and a small
        budget would otherwise be overrun by the first experience alone."""
        budget = self.budget_tokens
        if budget_tokens is not None:
            budget = min(budget, budget_tokens) if budget else budget_tokens
        room = max(0, budget * CHARS_PER_TOKEN - CARD_CHARS) if budget else None

        def fit(chars: int) -> int:
            return chars if room is None else min(chars, room)

        return dataclasses.replace(self, budget_tokens=budget, first_evidence_chars=fit(self.first_evidence_chars),
                                   evidence_chars=fit(self.evidence_chars),
                                   quiet_first_evidence_chars=fit(self.quiet_first_evidence_chars))

    def groups_to_read(self, top_k: int) -> int:
        """How many experiences can fit the budget (generously: cards are often shorter)."""
        if not self.budget_tokens:
            return top_k
        per_group = CARD_CHARS + self.evidence_chars
        first = CARD_CHARS + self.first_evidence_chars
        fit = 1 + max(0, self.budget_tokens * CHARS_PER_TOKEN - first) // per_group
        return min(top_k, int(fit * 1.5) + 1)


@dataclass(frozen=True)
class SearchConfig(ConfigTree):
    """Every knob of a Search, by concern. `ranking` orders the experiences
    (`ranking/strategy.py`): "fused", the weighted RRF of `fusion`; "learned", the LightGBM
    ranker (`ranking/learned.py`), whose calibrated P(related) is then each experience's
    relevance (so `calibration.quiet_below` and `fusion.relevance_floor` read probabilities)."""

    retrieval: Retrieval
    fusion: Fusion
    calibration: Calibration
    answer: AnswerShape
    turns: TurnConfig
    ranking: str

    def __post_init__(self) -> None:
        if self.ranking not in RANKINGS:
            raise ValueError(f"ranking must be one of {', '.join(RANKINGS)}, not {self.ranking!r}")
