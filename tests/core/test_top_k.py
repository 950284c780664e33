"""stable_top: a retriever's best rows, ties broken by id, whatever order the store gave."""

from codemem.store.top_k import MARGIN, stable_top


def _store(rows: list[dict[str, object]], key: str, higher_is_better: bool):
    fetched: list[int] = []

    def fetch(n: int) -> list[dict[str, object]]:
        # best first by score, but among ties the highest ids first: the worst case
        fetched.append(n)
        ordered = sorted(rows, key=lambda r: str(r["id"]), reverse=True)
        ordered.sort(key=lambda r: float(r[key]), reverse=higher_is_better)  # type: ignore[arg-type]
        return [dict(r) for r in ordered[:n]]

    return fetch, fetched


def test_ties_at_the_cut_are_read_to_their_end_and_kept_by_id() -> None:
    rows = [{"id": "best", "_score": 9.0}] + [{"id": f"t{i:03d}", "_score": 1.0} for i in range(100)]
    fetch, fetched = _store(rows, "_score", True)
    top = stable_top(fetch, 3, "_score")
    assert [r["id"] for r in top] == ["best", "t000", "t001"]
    assert fetched[0] == 3 + MARGIN and fetched[-1] >= len(rows)  # fetched until the tie group ended


def test_distances_rank_lowest_first_and_a_clear_cut_costs_one_fetch() -> None:
    rows = [{"id": f"r{i}", "_distance": float(i // 2)} for i in range(40)]
    fetch, fetched = _store(rows, "_distance", False)
    assert [r["id"] for r in stable_top(fetch, 4, "_distance", higher_is_better=False)] == ["r0", "r1", "r2", "r3"]
    assert fetched == [4 + MARGIN]
    assert stable_top(fetch, 0, "_distance", higher_is_better=False) == []
