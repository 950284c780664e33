"""Reciprocal rank fusion and session ranks treat a retriever's ties as ties: which of two
equally scored rows it happened to list first moves neither up."""

from codemem.ranking.relevance import session_ranks
from codemem.ranking.rrf import rrf, tied_ranks
from codemem.ranking.types import Candidate


def _c(cid: str, score: float, session: str = "") -> Candidate:
    return Candidate(id=cid, score=score, fields={"session_key": session or cid})


def test_equal_scores_share_the_first_rank_of_their_group() -> None:
    ranked = [_c("a", 3.0), _c("b", 2.0), _c("c", 2.0), _c("d", 1.0)]
    assert [(rank, c.id) for rank, c in tied_ranks(ranked)] == [(1, "a"), (2, "b"), (2, "c"), (4, "d")]


def test_the_fused_order_does_not_depend_on_the_order_within_a_tie() -> None:
    # Lexically "x" and "y" tie (the same words); the dense retriever prefers "y". Listed
    # either way round by the lexical retriever, "y" comes first.
    dense = [_c("y", 0.9), _c("x", 0.5)]
    for lexical in ([_c("x", 1.0), _c("y", 1.0)], [_c("y", 1.0), _c("x", 1.0)]):
        fused = rrf([lexical, dense], k=10)
        assert [c.id for c in fused] == ["y", "x"]
        assert fused[0].score == 1 / 11 + 1 / 11


def test_sessions_whose_best_items_tie_share_a_rank() -> None:
    items = [_c("m1", 5.0, "s1"), _c("m2", 4.0, "s2"), _c("m3", 4.0, "s3"), _c("m4", 4.0, "s1"), _c("m5", 1.0, "s4")]
    assert session_ranks(items) == {"s1": 1, "s2": 2, "s3": 2, "s4": 4}
