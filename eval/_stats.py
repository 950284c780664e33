"""The one percentile and latency summary every benchmark reports with.

Linear interpolation between closest ranks (numpy's default), so a p95 in one result file
means the same as a p95 in another.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

import numpy as np


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0-100) of `values`; None when there are none."""
    return float(np.percentile(values, q)) if len(values) else None


def summary_ms(values_s: Sequence[float], digits: int | None = None) -> dict[str, float | int | None]:
    """n, p50, p95, p99, mean, min and max of latencies given in seconds, in milliseconds
    (rounded to `digits` when given)."""
    ms = [v * 1000 for v in values_s]
    stats: dict[str, float | None] = {
        "p50": percentile(ms, 50), "p95": percentile(ms, 95), "p99": percentile(ms, 99),
        "mean": statistics.fmean(ms) if ms else None, "min": min(ms) if ms else None, "max": max(ms) if ms else None,
    }
    if digits is not None:
        stats = {k: None if v is None else round(v, digits) for k, v in stats.items()}
    return {"n": len(ms), **stats}
