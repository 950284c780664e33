"""Reciprocal rank fusion (Cormack et al. 2009): robust to retrievers' incomparable scores."""

from __future__ import annotations

from collections.abc import Sequence

from codemem.store.lance import Candidate


def rrf(ranked_lists: Sequence[Sequence[Candidate]], k: int = 60, weights: Sequence[float] | None = None) -> list[Candidate]:
    """Fuse ranked lists; each candidate scores sum(w / (k + rank)), best first.

    The returned candidates carry the fused score; ties keep first-seen order.
    """
    weights = weights or [1.0] * len(ranked_lists)
    fused: dict[str, float] = {}
    first: dict[str, Candidate] = {}
    for w, ranked in zip(weights, ranked_lists, strict=True):
        for rank, cand in enumerate(ranked, start=1):
            fused[cand.id] = fused.get(cand.id, 0.0) + w / (k + rank)
            first.setdefault(cand.id, cand)
    order = sorted(fused, key=lambda cid: fused[cid], reverse=True)
    return [Candidate(id=cid, score=fused[cid], fields=first[cid].fields) for cid in order]
