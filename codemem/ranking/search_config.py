"""The parts of a search configuration, each a small frozen record that checks its own values.

A `SearchConfig` nests them by concern: what the retrievers fetch (`Retrieval`), what the
relevance model's calibrated probability decides (`Calibration`), how much an answer carries
(`AnswerShape`) and how a memory of dialogue is answered (`TurnConfig`). The values that ship
are `codemem.ranking.recipes.DEFAULT_SEARCH`; a caller varies one by replacing a part's field
by its dotted path (`config.replace({"answer.budget_tokens": 4000})`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Self

from codemem.experience.building.render import CARD_CHARS
from codemem.ranking.shape import CHARS_PER_TOKEN
from codemem.timeline.turns import TurnConfig


class ConfigTree:
    """A frozen dataclass of frozen dataclasses whose leaves are named by dotted paths."""

    def replace(self, changes: Mapping[str, object]) -> Self:
        """A copy with each leaf `changes` names by its path ("answer.budget_tokens") set; every
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
    """What the retrievers fetch for the relevance model."""

    candidates: int  # how many items each retriever returns

    def __post_init__(self) -> None:
        _at_least(self, "candidates", 1)


NEWEST_FIRST = ("off", "related", "named")


@dataclass(frozen=True)
class Calibration:
    """What the relevance model's calibrated P(related) decides (`ranking/learned.py`): below
    `quiet_below` for every experience the answer is quiet, and an experience past the ones
    every answer names (`AnswerShape.named_experiences`) whose P is below `relevance_floor`
    times the best one's is left out. Both are the model's own, chosen on its training folds
    and kept in its card (`models/ranker.json`, "search"), as is its decision that nothing is
    related (`ranking/absence.py`), which empties the answer where `empty_when_unrelated`."""

    quiet_below: float  # 0: never quiet
    relevance_floor: float  # 0: none left out
    empty_when_unrelated: bool = True  # False: a quiet answer instead (what an evaluation of rank alone reads)
    # Asked about the current state (`timeline/questions.py`), which experiences come newest
    # first, ahead of the others: "related" (P at least `quiet_below`), "named" (the ones every
    # answer names, `AnswerShape.named_experiences`) or "off" (the model's order). A decision,
    # not a weight, chosen on the training projects (`python -m eval.quality.timeline --choose-newest-first`).
    newest_first_when_now: str = "off"

    def __post_init__(self) -> None:
        _share(self, "quiet_below")
        _share(self, "relevance_floor")
        if self.newest_first_when_now not in NEWEST_FIRST:
            raise ValueError(f"newest_first_when_now must be one of {', '.join(NEWEST_FIRST)}, not {self.newest_first_when_now!r}")


@dataclass(frozen=True)
class AnswerShape:
    """How much of each experience an answer carries (`answer.build`), by its P(related): the
    best experience's card with its evidence, each other related one's card (P at least the
    quiet threshold), short cards for the rest; a quiet answer (nothing related) is a few
    experiences, a little evidence under the first and short cards after it."""

    budget_tokens: int  # the answer stops at about this many tokens (0: top_k alone bounds it)
    max_item_chars: int  # a loose item longer than this is trimmed, head and tail kept (0: never)
    # Evidence inlined under the best experience's card: characters, and evidence items read.
    first_evidence_chars: int
    first_evidence_items: int
    # Evidence inlined under each other experience's card (0 by default: evidence for the best
    # only; a compact answer, `codemem/compact.py`, shows each experience's best match).
    evidence_chars: int
    evidence_items: int
    # At most `experiences` experiences; one below the quiet threshold (not the first) is a
    # short card of at most `short_card_chars` (`experience/building/render.short_card`).
    experiences: int
    short_card_chars: int
    # A quiet answer: the first experience with this much evidence, the others short cards,
    # all within `quiet_budget_tokens`.
    quiet_first_evidence_chars: int
    quiet_budget_tokens: int
    # Every answer names at least its first `named_experiences` experiences (as many as top_k
    # allows): a gate (quiet, the relevance floor) shortens what is shown of them, never drops
    # one, so none costs a gold the model ranked that high. A quiet answer is exactly these.
    named_experiences: int = 5

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


@dataclass(frozen=True)
class SearchConfig(ConfigTree):
    """Every knob of a Search, by concern. The experiences are ordered by the relevance model
    (`ranking/learned.py`), whose calibrated P(related) `calibration` reads."""

    retrieval: Retrieval
    calibration: Calibration
    answer: AnswerShape
    turns: TurnConfig
