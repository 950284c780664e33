"""Reciprocal rank fusion of items (Cormack et al. 2009): robust to retrievers' incomparable
scores. It orders the evidence within each experience (`answer.build` inlines the first) and
scores the turns of a conversation (`timeline/turns.py`, whose weights were fitted on these
scores); the experiences themselves are ordered by the relevance model, not by a fusion.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from codemem.ranking.types import Candidate

# Cormack et al.'s constant, not searched: with it the first ranks of each list do not drown
# the agreement of several lists.
K = 60


def tied_ranks(ranked: Sequence[Candidate]) -> Iterator[tuple[int, Candidate]]:
    """(rank, candidate) for a best-first list, candidates of equal score sharing the rank
    of the first of them (1, 2, 2, 4): which of two tied rows a retriever lists first says
    nothing about them, so it must not move either up."""
    rank, previous = 0, None
    for position, cand in enumerate(ranked, start=1):
        if cand.score != previous:
            rank, previous = position, cand.score
        yield rank, cand


def rrf(ranked_lists: Sequence[Sequence[Candidate]], k: int = K) -> list[Candidate]:
    """Fuse ranked lists; each candidate scores sum(1 / (k + rank)), best first, ranks as
    `tied_ranks` gives them.

    The returned candidates carry the fused score; ties keep first-seen order.
    """
    fused: dict[str, float] = {}
    first: dict[str, Candidate] = {}
    for ranked in ranked_lists:
        for rank, cand in tied_ranks(ranked):
            fused[cand.id] = fused.get(cand.id, 0.0) + 1.0 / (k + rank)
            first.setdefault(cand.id, cand)
    order = sorted(fused, key=lambda cid: fused[cid], reverse=True)
    return [Candidate(id=cid, score=fused[cid], fields=first[cid].fields) for cid in order]
