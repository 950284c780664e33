"""Reciprocal rank fusion (Cormack et al. 2009): robust to retrievers' incomparable scores."""

from __future__ import annotations

from collections.abc import Sequence

from codemem.ranking.types import Candidate


def rrf(ranked_lists: Sequence[Sequence[Candidate]], k: int) -> list[Candidate]:
    """Fuse ranked lists; each candidate scores sum(1 / (k + rank)), best first.

    The returned candidates carry the fused score; ties keep first-seen order.
    """
    fused: dict[str, float] = {}
    first: dict[str, Candidate] = {}
    for ranked in ranked_lists:
        for rank, cand in enumerate(ranked, start=1):
            fused[cand.id] = fused.get(cand.id, 0.0) + 1.0 / (k + rank)
            first.setdefault(cand.id, cand)
    order = sorted(fused, key=lambda cid: fused[cid], reverse=True)
    return [Candidate(id=cid, score=fused[cid], fields=first[cid].fields) for cid in order]
