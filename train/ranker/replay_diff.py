"""What the relevance model would train on from two replays of the same tasks, compared: the
rows `train.ranker.train` reads (each query's candidates, labels and feature vectors, computed
from the recorded signals and cards as training computes them), not the files' bytes, which
hold ids and float digits no feature reads.

    python -m train.ranker.replay_diff OLD/<replay> NEW/<replay>

A change to how a replay is built (`train.ranker.build_data`) keeps the training data when
this finds the same queries, the same candidates and labels, and feature vectors equal within
float noise (`tests/train/test_replay_sameness.py` checks it on a fixture).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from codemem.ranking.features import FEATURES
from train.ranker.train import load_sessions

# The query records' fields besides the signals; equal fields mean the same tasks searched
# over the same memory with the same labels.
RECORD_FIELDS = ("query", "instance_id", "repo", "replay", "agent", "text", "memory", "agents", "labels")


@dataclass
class Difference:
    """How two replays' training rows differ (all zero / empty: not at all)."""

    queries: int  # queries compared (both replays must have the same)
    records: list[str] = field(default_factory=list)  # queries whose record fields differ
    cards: list[str] = field(default_factory=list)  # sessions whose card (text, refs, metadata) differs
    candidates: list[str] = field(default_factory=list)  # queries whose candidates differ
    labels: list[str] = field(default_factory=list)  # queries whose candidates' labels differ
    max_feature_diff: float = 0.0  # the largest absolute difference of a feature, same candidates
    features: dict[str, float] = field(default_factory=dict)  # feature -> that difference, where nonzero

    def same(self, tolerance: float = 1e-9) -> bool:
        return not (self.records or self.cards or self.candidates or self.labels) \
            and self.max_feature_diff <= tolerance


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (path / "queries.jsonl").read_text().splitlines()]


def _cards(path: Path) -> dict[str, tuple[str, str, str]]:
    rows = [json.loads(line) for line in (path / "cards.jsonl").read_text().splitlines()]
    return {r["id"]: (r["text"], r["refs"], r["metadata"]) for r in rows}


def compare(old: Path, new: Path) -> Difference:
    """`old` and `new`, two replays' folders (`queries.jsonl`, `cards.jsonl`), compared as
    training data."""
    old_records, new_records = _records(old), _records(new)
    if [r["query"] for r in old_records] != [r["query"] for r in new_records]:
        raise ValueError(f"{old} and {new} did not search the same tasks in the same order")
    diff = Difference(queries=len(old_records))
    diff.records = [a["query"] for a, b in zip(old_records, new_records, strict=True)
                    if any(a.get(f) != b.get(f) for f in RECORD_FIELDS)]
    old_cards, new_cards = _cards(old), _cards(new)
    diff.cards = sorted(k for k in old_cards.keys() | new_cards.keys() if old_cards.get(k) != new_cards.get(k))
    worst = np.zeros(len(FEATURES))
    old_rows, new_rows = ({q.query: q for q in load_sessions(path)} for path in (old, new))
    for query in sorted(old_rows.keys() | new_rows.keys()):
        a, b = old_rows.get(query), new_rows.get(query)
        if a is None or b is None or a.keys != b.keys:  # (a query with no candidates has no row)
            diff.candidates.append(query)
            continue
        if not np.array_equal(a.y, b.y):
            diff.labels.append(a.query)
        if len(a.keys):
            # A feature "not known" (NaN) in both rows is the same; in one only, as far as can be.
            gap = np.where(np.isnan(a.x) & np.isnan(b.x), 0.0, np.nan_to_num(np.abs(a.x - b.x), nan=np.inf))
            worst = np.maximum(worst, gap.max(axis=0))
    diff.max_feature_diff = float(worst.max())
    diff.features = {f: float(d) for f, d in zip(FEATURES, worst, strict=True) if d > 0}
    return diff


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old", type=Path)
    ap.add_argument("new", type=Path)
    args = ap.parse_args(argv)
    diff = compare(args.old, args.new)
    print(json.dumps(asdict(diff), indent=1))
    return 0 if diff.same() else 1


if __name__ == "__main__":
    raise SystemExit(main())
