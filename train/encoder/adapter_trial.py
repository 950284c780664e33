"""Whether a query-side adapter, trained on public change pairs, lifts the dense signal: a
dense-only screen on the training data (issue 55, item 2, the first route).

The adapter is a linear map of the query's MiniLM vector, `normalise(q @ W)`, learned so
that a change's message lands near its own code window (`train.encoder.pairs`) and away
from the other changes' windows in its batch (in-batch softmax, W starting at the
identity and held near it). Stored vectors stay as they are: a store needs no re-embedding,
and the adapter costs one small matrix product per Search.

Out of fold only: each query is scored with an adapter trained on the pairs of every
history but its own repository's (leave one repository out), so neither the reports' nor
the sessions' repositories lend it their changes. The queries and their candidates are
those of `train.encoder.windows_trial` (the training cache of `make train`, never an
evaluation set), ranked by the dense signal alone, a candidate by the best of its vectors.

Variants, against today's product ("task+code": the raw query against the card's task
vector and its code window's):
- "adapted on code": the adapted query against the code window, the raw one against the task;
- "adapted on both": the adapted query against both (one vector search, as today).

The rule, written before the first score: the adapter is worth carrying into a `make train`
run when a variant lifts out-of-fold dense-only MRR over "task+code" by at least 0.01 on
the sessions and on the commits alike; of those, the higher mean of the two MRRs, "adapted
on both" preferred within 0.005 (it keeps one vector search).

    python -m train.encoder.adapter_trial --cache ~/.cache/codemem-train \\
        --pairs ~/.cache/codemem-train/encoder-pairs/pairs.jsonl --out eval/results/adapter-trial.json
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from codemem.encoders import make_embedder
from eval._paths import SHARED_DATA
from eval._provenance import finish, provenance
from train.content_check import validation_texts
from train.encoder.pairs import fresh
from train.encoder.windows_trial import (
    QUERY_TOKENS,
    WINDOW_TOKENS,
    _embed,
    _load_kept,
    candidate_vectors,
    commit_queries,
    figures,
    related_rank,
    session_queries,
)


@dataclass(frozen=True)
class AdapterTraining:
    """How an adapter is fitted (fixed before the first score, not tuned on it)."""

    epochs: int = 3
    batch: int = 256
    lr: float = 1e-3
    temperature: float = 0.05
    to_identity: float = 1.0  # weight of ||W - I||^2 (squared Frobenius, per dimension)
    seed: int = 0


def fit_adapter(queries: np.ndarray, targets: np.ndarray, cfg: AdapterTraining) -> np.ndarray:
    """W (d x d) so that normalise(query @ W) is nearest its own target among the batch's."""
    import torch

    torch.manual_seed(cfg.seed)
    d = queries.shape[1]
    q, t = torch.from_numpy(queries), torch.from_numpy(targets)
    w = torch.nn.Parameter(torch.eye(d))
    opt = torch.optim.Adam([w], lr=cfg.lr)
    eye = torch.eye(d)
    gen = torch.Generator().manual_seed(cfg.seed)
    for _ in range(cfg.epochs):
        order = torch.randperm(len(q), generator=gen)
        for start in range(0, len(q), cfg.batch):
            idx = order[start: start + cfg.batch]
            qa = torch.nn.functional.normalize(q[idx] @ w, dim=1)
            logits = qa @ t[idx].T / cfg.temperature
            loss = torch.nn.functional.cross_entropy(logits, torch.arange(len(idx)))
            loss = loss + cfg.to_identity * ((w - eye) ** 2).sum() / d
            opt.zero_grad()
            loss.backward()
            opt.step()
    return w.detach().numpy().astype(np.float32)


def _normalise(v: np.ndarray) -> np.ndarray:
    return v / (np.linalg.norm(v, axis=-1, keepdims=True) + 1e-12)


def score(queries: list[dict], qvec: dict[str, np.ndarray], task_vec: Callable[[str], np.ndarray],
          code_vec: Callable[[str], np.ndarray | None], adapters: dict[str, np.ndarray]) -> dict:
    """Dense-only hit@1, hit@5 and MRR of each variant per kind of query, every query with
    the adapter its repository was held out of."""
    variants = ("task+code", "adapted on code", "adapted on both")
    ranks: dict[str, dict[str, list[int | None]]] = {v: {} for v in variants}
    for q in queries:
        raw = qvec[q["text"]]
        adapted = _normalise(raw @ adapters[q["repo"]])
        for variant in variants:
            on_task = adapted if variant == "adapted on both" else raw
            on_code = raw if variant == "task+code" else adapted
            scored = []
            for cid in q["pool"]:
                s = float(task_vec(cid) @ on_task)
                code = code_vec(cid)
                if code is not None:
                    s = max(s, float(code @ on_code))
                scored.append((s, cid))
            ranks[variant].setdefault(q["kind"], []).append(related_rank(scored, q["labels"]))
    return {v: figures(per_kind) for v, per_kind in ranks.items()}


def choose(results: dict) -> str:
    """The rule of the module's docstring."""
    base = results["task+code"]
    worth = {v: (r["session"]["mrr"] + r["commit"]["mrr"]) / 2 for v, r in results.items()
             if v != "task+code" and all(r[k]["mrr"] - base[k]["mrr"] >= 0.01 for k in ("session", "commit"))}
    if not worth:
        return "task+code"
    best = max(worth.values())
    return "adapted on both" if worth.get("adapted on both", -1.0) >= best - 0.005 else max(worth, key=worth.__getitem__)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "codemem-train")
    parser.add_argument("--pairs", type=Path, required=True, help="train.encoder.pairs output")
    parser.add_argument("--shared", type=Path, default=SHARED_DATA, help="the shared data folder (validation texts)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--vectors", type=Path, help="a file keeping the vectors between runs")
    args = parser.parse_args(argv)
    prov = provenance("train.encoder.adapter_trial", argv)
    cfg = AdapterTraining()
    embedder = make_embedder("minilm", 2)
    embedder.warm()
    kept = _load_kept(args.vectors)

    pairs, copied = fresh([json.loads(line) for line in args.pairs.open()], validation_texts(shared=args.shared))
    print(f"{len(copied)} pairs left out: their message shares an 8-word run with a validation text", file=sys.stderr)
    started = time.monotonic()
    msg = _embed(embedder, (p["message"] for p in pairs), QUERY_TOKENS, kept)
    win = _embed(embedder, (p["code"] for p in pairs), WINDOW_TOKENS, kept)
    print(f"pairs embedded in {time.monotonic() - started:.0f} s", file=sys.stderr)
    pair_repo = np.array([p["repo"].split("/")[1].lower() for p in pairs])
    pq = np.stack([msg[p["message"]] for p in pairs]).astype(np.float32)
    pt = np.stack([win[p["code"]] for p in pairs]).astype(np.float32)

    queries = session_queries(args.cache) + commit_queries(args.cache)
    for q in queries:  # the repository a query's adapter must not have seen
        q["repo"] = q["repo"].lower()
    vecs = candidate_vectors(queries, embedder, kept)
    if args.vectors is not None:
        with args.vectors.open("wb") as f:
            pickle.dump(kept, f)

    adapters: dict[str, np.ndarray] = {}
    started = time.monotonic()
    for repo in sorted({q["repo"] for q in queries}):
        keep = pair_repo != repo
        adapters[repo] = fit_adapter(pq[keep], pt[keep], cfg)
        print(f"adapter without {repo}: {int(keep.sum())} pairs, {time.monotonic() - started:.0f} s", file=sys.stderr)
    results = score(queries, vecs.query, vecs.task, vecs.code, adapters)
    chosen = choose(results)
    args.out.write_text(json.dumps({
        "provenance": finish(prov),
        "rule": "lift out-of-fold dense-only MRR over task+code by >= 0.01 on sessions and commits alike; "
                "then the higher mean MRR, 'adapted on both' preferred within 0.005",
        "training": asdict(cfg),
        "data": {"pairs": len(pairs), "left_out_as_copies_of_validation_text": copied, "histories": len(set(pair_repo)),
                 "sessions": sum(q["kind"] == "session" for q in queries),
                 "commits": sum(q["kind"] == "commit" for q in queries),
                 "folds": len(adapters)},
        "results": results, "chosen": chosen,
    }, indent=1) + "\n")
    print(json.dumps(results, indent=1), "\nchosen:", chosen)


if __name__ == "__main__":
    main()
