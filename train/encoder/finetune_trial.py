"""Whether MiniLM fine-tuned on written reports and the changes that fixed them lifts the dense
signal: a dense-only screen on the training data (issue 55, item 2, the second route).

The encoder is the packaged all-MiniLM-L6-v2, fine-tuned with in-batch negatives (multiple
negatives ranking: each report against every change of its batch) on two kinds of pair:
a written report (`written_reports.py`, from `BRIEF-reports.md`) with its change's code window,
and the same report with its change's message (a commit candidate has both vectors). Every
pair comes from `ENCODER_HISTORIES`, whose repositories no screened query comes from: the
screen is out of sample by construction (checked below), with no folds.

The screen is `windows_trial`'s: each training query's candidates (the replays' sessions, the
past-fix reports' commits, from `make train`'s cache, never an evaluation set) ranked by the
dense signal alone, a candidate by the better of its task vector and its code window's. The
packaged encoder's vectors against the fine-tuned one's, the same texts at the same lengths.

The rule, written before the first score: the fine-tuned encoder is worth carrying into a
`make train` run (documents re-embedded, the relevance model retrained under its ship rule)
when its dense-only MRR is at least 0.01 above the packaged encoder's on the commits (the
reports it was trained for) and at most 0.005 below it on the sessions. The training settings
(`FineTuning`) are fixed before the first score and not tuned on it.

A second run trains on both rounds of reports (1,616) by the same settings and rule; before it,
the paired per-query differences, with bootstrap intervals, were added to what is written.
Neither run ships anything: `make train` decides, by the rule in `README.md`.

    python -m train.encoder.finetune_trial --cache ~/.cache/codemem-train \\
        --pairs ~/.cache/codemem-train/encoder-pairs/pairs.jsonl --reports train/encoder/reports.jsonl \\
        --vectors ~/.cache/codemem-train/encoder-trial/vectors.pkl --model-out DIR --out eval/results/finetune-trial.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from codemem.encoders import make_embedder
from eval._paths import SHARED_DATA
from eval._provenance import finish, provenance
from eval.replay.metrics import reciprocal_rank
from train.content_check import validation_texts
from train.encoder.finetune import FineTuning, fine_tune, training_pairs
from train.encoder.pairs import ENCODER_HISTORIES, fresh
from train.encoder.windows_trial import (
    _load_kept,
    candidate_vectors,
    commit_queries,
    figures,
    related_rank,
    session_queries,
)


class TunedEmbedder:
    """`_embed`'s embedder over a SentenceTransformer: unit vectors read to `max_tokens`."""

    def __init__(self, model: Any) -> None:
        self.model = model

    def embed(self, texts: list[str], max_tokens: int) -> np.ndarray:
        self.model.max_seq_length = max_tokens
        return np.asarray(self.model.encode([t[: max_tokens * 8] for t in texts], batch_size=32,
                                            normalize_embeddings=True, show_progress_bar=False), dtype=np.float32)


def dense_ranks(queries: list[dict], embedder: Any, kept: dict | None = None) -> dict[str, list[int | None]]:
    """Each query's rank of its first related candidate, per kind, by the dense signal alone: a
    candidate scored by the better of its task and code vectors."""
    vecs = candidate_vectors(queries, embedder, kept)
    ranks: dict[str, list[int | None]] = {}
    for q in queries:
        v = vecs.query[q["text"]]
        scored = []
        for cid in q["pool"]:
            s = float(vecs.task(cid) @ v)
            if (code := vecs.code(cid)) is not None:
                s = max(s, float(code @ v))
            scored.append((s, cid))
        ranks.setdefault(q["kind"], []).append(related_rank(scored, q["labels"]))
    return ranks


def paired_difference(base: dict[str, list[int | None]], tuned: dict[str, list[int | None]]) -> dict:
    """Per kind, the mean of the per-query reciprocal-rank differences (tuned - packaged) and its
    95% bootstrap interval (the queries resampled, 2,000 times, fixed seed)."""
    from scipy.stats import bootstrap

    out = {}
    for kind in base:
        diff = np.array([reciprocal_rank(t) - reciprocal_rank(b) for b, t in zip(base[kind], tuned[kind], strict=True)])
        ci = bootstrap((diff,), np.mean, confidence_level=0.95, n_resamples=2000, method="percentile",
                       random_state=0).confidence_interval
        out[kind] = {"mrr_difference": round(float(diff.mean()), 4), "ci95": [round(float(ci.low), 4), round(float(ci.high), 4)],
                     "better": int((diff > 0).sum()), "worse": int((diff < 0).sum())}
    return out


def passes(base: dict, tuned: dict) -> bool:
    """The rule of the module's docstring."""
    return (tuned["commit"]["mrr"] - base["commit"]["mrr"] >= 0.01
            and tuned["session"]["mrr"] - base["session"]["mrr"] >= -0.005)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "codemem-train")
    ap.add_argument("--pairs", type=Path, required=True, help="train.encoder.pairs output")
    ap.add_argument("--reports", type=Path, required=True, help="train/encoder/reports.jsonl")
    ap.add_argument("--shared", type=Path, default=SHARED_DATA, help="the shared data folder (validation texts)")
    ap.add_argument("--vectors", type=Path, help="the packaged encoder's vectors kept between runs")
    ap.add_argument("--model-out", type=Path, required=True, help="where the fine-tuned model is saved")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    prov = provenance("train.encoder.finetune_trial", argv)
    cfg = FineTuning()
    log = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731

    queries = session_queries(args.cache) + commit_queries(args.cache)
    screened = {q["repo"].lower() for q in queries}
    trained = {r.split("/")[1].lower() for r in ENCODER_HISTORIES}
    if screened & trained:
        sys.exit(f"the screen would not be out of sample: {sorted(screened & trained)}")
    pairs = [json.loads(line) for line in args.pairs.open()]
    reports = [json.loads(line) for line in args.reports.open()]
    validation = validation_texts(shared=args.shared)
    reports_kept, reports_copied = fresh([{**r, "message": r["report"]} for r in reports], validation)
    train = training_pairs(reports_kept, pairs)
    log(f"{len(train)} pairs from {len(reports_kept)} reports ({len(reports_copied)} left out as copies of validation text)")

    started = time.monotonic()
    model = fine_tune(train, cfg, log)
    train_s = time.monotonic() - started
    model.save(str(args.model_out))

    kept = _load_kept(args.vectors)
    base_embedder = make_embedder("minilm", 2)
    started = time.monotonic()
    base_ranks = dense_ranks(queries, base_embedder, kept)
    tuned_ranks = dense_ranks(queries, TunedEmbedder(model))
    base, tuned = figures(base_ranks), figures(tuned_ranks)
    log(f"screen embedded in {time.monotonic() - started:.0f} s")
    verdict = passes(base, tuned)
    args.out.write_text(json.dumps({
        "provenance": finish(prov),
        "rule": "worth a make train run when dense-only MRR on commits is >= 0.01 above the packaged encoder's "
                "and on sessions at most 0.005 below it",
        "training": asdict(cfg) | {"seconds": round(train_s), "pairs": len(train), "reports": len(reports_kept),
                                   "reports_left_out_as_copies_of_validation_text": len(reports_copied),
                                   "histories": len({r["repo"] for r in reports_kept})},
        "screen": {"sessions": sum(q["kind"] == "session" for q in queries),
                   "commits": sum(q["kind"] == "commit" for q in queries)},
        "results": {"packaged": base, "fine-tuned": tuned},
        "paired": paired_difference(base_ranks, tuned_ranks), "passes": verdict,
    }, indent=1) + "\n")
    print(json.dumps({"packaged": base, "fine-tuned": tuned, "passes": verdict}, indent=1))


if __name__ == "__main__":
    main()
