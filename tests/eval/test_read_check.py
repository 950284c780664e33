"""eval.read_check times one read three ways on a store with many versions."""

from pathlib import Path

from eval.read_check import measure


def test_read_check_counts_versions_and_times_each_way(tmp_path: Path) -> None:
    result = measure(str(tmp_path / "data"), commits=5, reads=3)
    assert result["rows"] == 5
    assert result["versions"] >= 5  # one per commit at least, all kept
    per_read = result["per_read"]
    assert set(per_read) == {"store", "lancedb_interval_0", "lancedb_no_check"}  # type: ignore[arg-type]
    assert all(t["cpu_ms"] >= 0 and t["wall_ms"] > 0 for t in per_read.values())  # type: ignore[union-attr]
