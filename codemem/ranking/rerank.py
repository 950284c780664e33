"""The seam for a relevance model that reads the task with each candidate experience.

A reranker (a cross-encoder, say) scores the first `SearchConfig.rerank_depth` experiences
of the fused ranking from the task text and each experience's card; those experiences are
reordered by its scores, the rest keep their fused order. Any callable with the
`Reranker` signature plugs in (`Memory(..., reranker=...)`); without one, nothing changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar


@dataclass(frozen=True)
class RerankCandidate:
    """One experience as a reranker sees it."""

    session_key: str
    card: str  # the card's text: task, outcome, files and symbols edited, errors, tests
    fused: float  # its fused score (relevance.fuse), for a reranker that blends it in


class Reranker(Protocol):
    def __call__(self, query: str, candidates: Sequence[RerankCandidate]) -> list[float]:
        """One score per candidate, higher = more related to `query`."""
        ...


T = TypeVar("T")


def reorder(ranked: Sequence[T], scores: Sequence[float]) -> list[T]:
    """The first len(scores) of `ranked` by score (stable on ties), then the rest as they were."""
    head = sorted(range(len(scores)), key=lambda i: -scores[i])
    return [ranked[i] for i in head] + list(ranked[len(scores):])
