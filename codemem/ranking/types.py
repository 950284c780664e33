"""What ranking works on: plain values, whichever store produced them."""

from __future__ import annotations

import msgspec


class Candidate(msgspec.Struct):
    """One item as a retriever returned it, with that retriever's raw score."""

    id: str
    score: float
    fields: dict[str, object]  # the store's candidate columns from a retriever, result columns from a read by id


class Ranking(msgspec.Struct, frozen=True):
    """A ranking of a Search's sessions: each one's score (higher first) and, for the first
    experiences a model ranked, the features that carried their scores (name -> contribution)."""

    scores: dict[str, float]
    reasons: dict[str, dict[str, float]]
