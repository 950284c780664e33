"""A retriever's best `limit` rows, the same in every process.

LanceDB's top-k keeps an arbitrary subset of the rows tied at its cut, in an arbitrary
order (its scans run on several threads). Duplicate texts tie often (the same command
output, the same short reply), so one query over one store gave different candidates from
one process to the next, and so different answers. Here ties are broken by row id, and rows
are fetched past the cut until the tie group at the cut ends inside what was fetched.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Rows = list[dict[str, Any]]
# Rows fetched past the cut before looking at the ties: most tie groups end within it.
MARGIN = 16
# The most rows one retriever reads, however long a tie group at its cut runs.
MAX_FETCH = 20_000


def stable_top(fetch: Callable[[int], Rows], limit: int, score: str, higher_is_better: bool = True) -> Rows:
    """The `limit` best rows by `score`, ties by `id`.

    `fetch(n)` returns the store's best `n` rows, best first, in any order among ties.
    """
    if limit < 1:
        return []
    n = limit + MARGIN
    rows = fetch(n)
    while len(rows) == n and n < MAX_FETCH and rows[limit - 1][score] == rows[-1][score]:
        n = min(4 * n, MAX_FETCH)
        rows = fetch(n)
    sign = -1.0 if higher_is_better else 1.0
    rows.sort(key=lambda r: (sign * float(r[score]), str(r["id"])))
    return rows[:limit]
