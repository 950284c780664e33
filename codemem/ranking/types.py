"""What ranking works on: plain values, whichever store produced them."""

from __future__ import annotations

import msgspec


class Candidate(msgspec.Struct):
    """One item as a retriever returned it, with that retriever's raw score."""

    id: str
    score: float
    fields: dict[str, object]  # the store's candidate columns from a retriever, result columns from a read by id


class Ranking(msgspec.Struct, frozen=True):
    """A ranking of a Search's candidate sessions: each one's score (higher first; the relevance
    floor is a share of the best one's), its calibrated P(related) (which decides a quiet answer
    and how much of it is shown), and, for the first experiences, the features that carried
    their scores (name -> contribution). The relevance model's scores are its probabilities.
    `nothing_related`: the model's decision that no candidate is related at all (an empty
    answer, `ranking/absence.py`)."""

    scores: dict[str, float]
    relevance: dict[str, float]
    reasons: dict[str, dict[str, float]]
    nothing_related: bool = False
