"""eval._compaction.settled: a benchmark times Searches once the compactor has nothing left to do,
as the compactor itself judges it (a big store stays in many fragments it leaves alone)."""

from __future__ import annotations

from codemem.config import Maintenance
from eval._compaction import settled


def test_a_big_store_in_many_full_fragments_is_settled() -> None:
    # 137,823 rows of an ingest of all 300 trajectories: 14 fragments, 3 under the target size.
    assert settled({"fragments": 14, "fragments_to_compact": 3, "unindexed_rows": 0})


def test_unindexed_rows_or_too_many_small_fragments_are_not() -> None:
    assert not settled({"fragments": 2, "fragments_to_compact": 1, "unindexed_rows": 40})
    small = Maintenance().max_small_fragments + 1
    assert not settled({"fragments": small, "fragments_to_compact": small, "unindexed_rows": 0})
