"""eval.read_check times one read three ways on a store with many versions."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from eval import read_check
from eval.read_check import measure, per_read


def test_read_check_counts_versions_and_times_each_way(tmp_path: Path) -> None:
    """Every commit is one row and one kept version, and each way's reads are timed: a read
    costs CPU and wall time, so neither figure can be zero."""
    result = measure(str(tmp_path / "data"), commits=5, reads=3)
    assert result["rows"] == 5
    assert cast(int, result["versions"]) >= 5  # one per commit at least, all kept
    per_way = cast(dict[str, dict[str, float]], result["per_read"])
    assert set(per_way) == {"store", "lancedb_interval_0", "lancedb_no_check"}
    for way, times in per_way.items():
        assert times["cpu_ms"] > 0 and times["wall_ms"] > 0, (way, times)


def test_per_read_figures_are_the_mean_of_the_timed_reads_after_a_warm_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """The figures are milliseconds per read, CPU and wall apart, over `reads` reads; the
    first read (caches, a cold handle) is made but not timed. Clocks that each read moves
    by a known amount stand in for the real ones."""
    clock = {"cpu": 0.0, "wall": 0.0}
    monkeypatch.setattr(read_check, "time", SimpleNamespace(process_time=lambda: clock["cpu"],
                                                            perf_counter=lambda: clock["wall"]))
    calls: list[int] = []

    def read() -> None:
        first = not calls
        calls.append(1)
        clock["cpu"] += 1.0 if first else 0.002  # the warm-up is far dearer
        clock["wall"] += 1.0 if first else 0.005

    assert per_read(read, reads=4) == {"cpu_ms": pytest.approx(2.0), "wall_ms": pytest.approx(5.0)}
    assert len(calls) == 5
