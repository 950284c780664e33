"""Ranking on the held-out repository: BM25, the plain MiniLM bi-encoder and the reranker.

Each held-out query's candidates are its first positive and its BM25-hard negatives (up
to 19, same repository, earlier changes): BM25's rank of the positive among them was
recorded by build_pairs.py; the bi-encoder ranks them by cosine of MiniLM vectors; the
reranker by its score (each ONNX graph given with ``--onnx``).

    python -m train.rerank.evaluate --pairs pairs.jsonl --holdout black \\
        --onnx model/onnx/model.onnx --out eval/results/tmp/rerank-holdout.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np


def metrics(ranks: list[int]) -> dict[str, float]:
    r = np.array(ranks)
    return {"queries": len(ranks), "hit@1": float((r == 0).mean()), "hit@5": float((r < 5).mean()),
            "mrr": float((1.0 / (r + 1)).mean())}


def rank_of_first(scores: np.ndarray) -> int:
    """Rank (0 = first) of candidate 0 (the positive); ties count against it."""
    return int((scores[1:] >= scores[0]).sum())


def cost(graph: Path, rows: list[dict]) -> dict[str, object]:
    """A graph's size, load time and ms per query (one thread) at depth 10 and 20."""
    from train.rerank.onnx_model import Reranker

    start = time.perf_counter()
    model = Reranker(graph.parent)
    out: dict[str, object] = {"graph": str(graph), "model_mb": round(graph.stat().st_size / 1e6, 1),
                              "load_s": round(time.perf_counter() - start, 2), "threads": 1}
    for depth in (10, 20):
        times = []
        for r in rows:
            cards = [*r["positives"], *r["hard"], *r["easy"]][:depth]
            start = time.perf_counter()
            model.score(r["query"], cards)
            times.append((time.perf_counter() - start) * 1000)
        out[f"ms_depth{depth}"] = {"p50": round(float(np.percentile(times, 50)), 1),
                                   "p95": round(float(np.percentile(times, 95)), 1)}
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pairs", type=Path, required=True)
    p.add_argument("--holdout", required=True)
    p.add_argument("--onnx", type=Path, action="append", default=[], help="a reranker graph (repeatable)")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args()

    rows = [r for r in map(json.loads, args.pairs.open()) if r["repo"] == args.holdout and r["hard"]]
    report: dict[str, object] = {"holdout": args.holdout, "bm25": metrics([r["bm25_rank"] for r in rows])}

    from sentence_transformers import SentenceTransformer

    from train.rerank.train import MAX_LENGTH, minilm_path
    bi = SentenceTransformer(minilm_path(), device="cpu")
    bi.max_seq_length = MAX_LENGTH
    ranks = []
    for r in rows:
        vectors = bi.encode([r["query"], r["positives"][0], *r["hard"]], normalize_embeddings=True)
        ranks.append(rank_of_first(vectors[1:] @ vectors[0]))
    report["minilm-bi-encoder"] = metrics(ranks)

    from train.rerank.onnx_model import Reranker
    for graph in args.onnx:
        staged = args.out.parent / f"_{graph.stem}"
        staged.mkdir(parents=True, exist_ok=True)
        for name, source in (("model.onnx", graph), ("tokenizer.json", graph.parent / "tokenizer.json")):
            target = staged / name
            target.unlink(missing_ok=True)
            target.symlink_to(source.resolve())
        model = Reranker(staged, threads=2)
        ranks = [rank_of_first(model.score(r["query"], [r["positives"][0], *r["hard"]])) for r in rows]
        report[f"reranker:{graph}"] = metrics(ranks)
    if args.onnx:
        report["cost"] = cost(args.onnx[0], rows)
    args.out.write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
