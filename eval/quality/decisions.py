"""Decisions read: a suite of sentences that state a project decision and of sentences that
decide nothing (many of them look-alikes: travel, mail, rota swaps, proposals), scored by the
learned reader the timeline's supersession runs on (`codemem/timeline/decisions.py`), each
sentence embedded as a stored turn is.

`decisions-phrases.json` is the same suite scored by the phrase readings the reader replaced
(`timeline/facts.py`, at 0617124, rebased as 2c1d254, the last commit that had them).

    python -m eval.quality.decisions [--suite FILE]     # eval/results/decisions.json

The suite (`eval/data/decisions/suite.jsonl`) was written by someone who had read neither the
code nor the reader's training sentences, and is never trained or tuned on. Targets (issue 41):
decisions read >= 0.90, non-decisions read <= 0.05.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from codemem.config import Embedding
from codemem.encoders import ShippedEmbedder
from codemem.timeline.decisions import packaged
from eval._paths import RESULTS
from eval._provenance import provenance, write_result

SUITE = Path(__file__).resolve().parents[1] / "data" / "decisions" / "suite.jsonl"


def rates(read: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    return {"decisions_read": round(float(read[labels == 1].mean()), 4),
            "non_decisions_read": round(float(read[labels == 0].mean()), 4)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", type=Path, default=SUITE)
    ap.add_argument("--out", type=Path, default=RESULTS / "decisions.json")
    args = ap.parse_args(argv)
    prov = provenance("eval.quality.decisions", argv)
    rows = [json.loads(line) for line in args.suite.read_text().splitlines() if line.strip()]
    texts = [str(r["text"]) for r in rows]
    labels = np.asarray([int(r["label"]) for r in rows])
    reader = packaged()
    p = reader.probabilities(texts, ShippedEmbedder().embed(texts, Embedding().max_tokens))
    read = p >= reader.threshold
    result: dict[str, Any] = {
        "suite": str(args.suite), "decisions": int(labels.sum()), "non_decisions": int(len(labels) - labels.sum()),
        "targets": {"decisions_read": ">= 0.90", "non_decisions_read": "<= 0.05"},
        "read": rates(read, labels) | {"threshold": reader.threshold},
        "misread": [{"text": t, "label": int(y), "p": round(float(q), 3)}
                    for t, y, q, r in zip(texts, labels, p, read, strict=True) if bool(r) != bool(y)],
    }
    out = write_result(args.out, result, prov, indent=1)
    print(json.dumps({k: result[k] for k in ("decisions", "non_decisions", "read")}, indent=1))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
