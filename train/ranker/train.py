"""Train the learned ranker: LightGBM LambdaRank over `codemem.ranking.features`, chosen and
scored by leave-one-repository-out cross-validation on the training data, then fitted on all
of it and saved as package data with a Platt calibration of its scores into P(related).

    python -m train.ranker.train --signals /tmp/ranker/signals --out codemem/ranking/models

Reads the per-query signals `build_data.py` wrote (SWE-bench Verified tasks only). Every
ranking is scored on the same candidates (`features.candidates`): the learned one, the
hand-set fusion (`fuse` with `DEFAULT_SEARCH`), BM25 alone and dense alone. A query's gold is
its highest-graded related tasks (same_function where it has any, else same_file):
hit@1 and hit@5 ask whether gold is first (in the first 5), MRR is that of the first gold,
useful@1 whether the first result is related at all. A query whose related tasks are not
among the candidates counts as a miss for every ranking.

The grid (`GRID`) is chosen inside each fold by a leave-one-repository-out split of the
training repositories (nested: the held-out repository chooses nothing), then once on all
repositories for the shipped model. The calibration is fitted on the out-of-fold scores.
Writes `<out>/ranker.txt` (LightGBM text), `<out>/ranker.json` (features, parameters,
calibration, data, figures) and `<report>` (the CV figures, JSON).
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lightgbm as lgb
import numpy as np

from codemem.ranking.features import CANDIDATE_DEPTH, FEATURES, candidate_features, candidates
from codemem.ranking.fields import CardFields, field_matches
from codemem.ranking.recipes import DEFAULT_SEARCH
from train.ranker.build_data import signals_from

GRID = {"num_leaves": (7, 15), "n_estimators": (100, 300)}
FIXED: dict[str, Any] = {"objective": "lambdarank", "learning_rate": 0.05, "min_child_samples": 20, "subsample": 0.8,
         "subsample_freq": 1, "colsample_bytree": 0.8, "reg_lambda": 1.0, "random_state": 0, "n_jobs": 1,
         "verbose": -1, "lambdarank_truncation_level": 10,
         # Every feature says "more related" as it grows (features.py): the model is held to it.
         "monotone_constraints": [1] * len(FEATURES), "monotone_constraints_method": "advanced"}
# The answer's shape under the learned ranking (`LEARNED_SEARCH` reads them from the card): an
# experience below this share of the best one's P(related) is left out where at most this
# share of the related experiences among the first `FLOOR_DEPTH` would be.
FLOOR_MISSES = 0.05
FLOOR_DEPTH = 10
SELECT_BY = "mrr"
FIGURES = ("hit@1", "hit@5", "mrr", "useful@1")


@dataclass
class Query:
    query: str
    repo: str
    keys: list[str]  # candidates, fused order
    x: np.ndarray
    y: np.ndarray  # 2 same_function, 1 same_file, 0 otherwise
    bm25: np.ndarray
    cosine: np.ndarray
    related: int  # related tasks in memory (found or not)


def load_queries(path: Path) -> list[Query]:
    """Every query `build_data` recorded, with its candidates' features: the signals as the
    Search had them, and the card fields read from the cards the memory then held (each
    session's card is final once it is added, so `cards.jsonl` holds the same)."""
    cards = {}
    for line in (path / "cards.jsonl").read_text().splitlines():
        card = json.loads(line)
        cards[card["id"]] = CardFields.of(card["text"], card["metadata"])
    out = []
    for line in (path / "queries.jsonl").read_text().splitlines():
        rec = json.loads(line)
        signals = signals_from(rec["signals"])
        keys = candidates(signals, DEFAULT_SEARCH, CANDIDATE_DEPTH)
        if not keys:
            continue
        signals.fields = field_matches(rec["text"], {k: cards[k] for k in keys})
        vectors = candidate_features(signals, keys)
        labels = rec["labels"]
        out.append(Query(rec["query"], rec["repo"], keys, np.asarray([vectors[k] for k in keys], dtype=np.float64),
                         np.asarray([labels.get(k, 0) for k in keys], dtype=np.int32),
                         np.asarray([signals.bm25.get(k, -1.0) for k in keys]),
                         np.asarray([signals.cosine.get(k, -2.0) for k in keys]), len(labels)))
    return out


def figures(queries: Sequence[Query], scores: Sequence[np.ndarray]) -> dict[str, float]:
    """hit@1, hit@5, MRR and useful@1 of ranking each query's candidates by `scores` (ties
    keep the fused order)."""
    hit1, hit5, rr, useful = [], [], [], []
    for q, s in zip(queries, scores, strict=True):
        order = np.argsort(-s, kind="stable")
        y = q.y[order]
        top = y.max() if len(y) else 0
        gold = np.flatnonzero(y == top) if top > 0 else np.array([], dtype=int)
        first = int(gold[0]) + 1 if len(gold) else None
        hit1.append(first == 1)
        hit5.append(first is not None and first <= 5)
        rr.append(1.0 / first if first else 0.0)
        useful.append(bool(len(y) and y[0] > 0))
    return {"hit@1": float(np.mean(hit1)), "hit@5": float(np.mean(hit5)), "mrr": float(np.mean(rr)),
            "useful@1": float(np.mean(useful)), "queries": len(queries)}


def per_query(queries: Sequence[Query], scores: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
    """Each query's hit@1, reciprocal rank and useful@1."""
    rows = [figures([q], [s]) for q, s in zip(queries, scores, strict=True)]
    return {name: np.asarray([r[name] for r in rows]) for name in ("hit@1", "mrr", "useful@1")}


def paired_gain(queries: Sequence[Query], learned: Sequence[np.ndarray], other: Sequence[np.ndarray],
                draws: int = 2000) -> dict[str, list[float]]:
    """The learned ranking's gain over `other` per figure: mean and a 95% paired bootstrap
    interval over queries."""
    a, b = per_query(queries, learned), per_query(queries, other)
    rng = np.random.default_rng(0)
    idx = rng.integers(0, len(queries), size=(draws, len(queries)))
    out = {}
    for name in a:
        d = a[name] - b[name]
        boot = d[idx].mean(axis=1)
        out[name] = [round(float(d.mean()), 3), round(float(np.quantile(boot, 0.025)), 3),
                     round(float(np.quantile(boot, 0.975)), 3)]
    return out


def baselines(queries: Sequence[Query]) -> dict[str, list[np.ndarray]]:
    return {"fused": [-np.arange(len(q.keys), dtype=float) for q in queries],
            "bm25": [q.bm25 for q in queries], "dense": [q.cosine for q in queries]}


def fit(queries: Sequence[Query], params: dict[str, Any]) -> lgb.LGBMRanker:
    train = [q for q in queries if q.y.max() > 0]  # a query with nothing related teaches nothing
    model = lgb.LGBMRanker(**FIXED, **params)
    model.fit(np.vstack([q.x for q in train]), np.concatenate([q.y for q in train]),
              group=[len(q.keys) for q in train])
    return model


def predict(model: lgb.LGBMRanker, queries: Sequence[Query]) -> list[np.ndarray]:
    return [np.asarray(model.predict(q.x)) for q in queries]


def grid() -> list[dict[str, Any]]:
    return [dict(zip(GRID, combo, strict=True)) for combo in itertools.product(*GRID.values())]


def loro(queries: Sequence[Query], params: dict[str, Any]) -> list[np.ndarray]:
    """Out-of-fold scores: each repository's queries scored by a model fitted on the others'."""
    scores: list[np.ndarray | None] = [None] * len(queries)
    for repo in sorted({q.repo for q in queries}):
        model = fit([q for q in queries if q.repo != repo], params)
        for i, q in enumerate(queries):
            if q.repo == repo:
                scores[i] = np.asarray(model.predict(q.x))
    return [s for s in scores if s is not None]


def choose(queries: Sequence[Query]) -> tuple[dict[str, Any], dict[str, dict[str, float]]]:
    """The grid point with the best leave-one-repository-out `SELECT_BY` over `queries`."""
    table = {json.dumps(p): figures(queries, loro(queries, p)) for p in grid()}
    best = max(table, key=lambda p: (table[p][SELECT_BY], table[p]["hit@1"]))
    return json.loads(best), table


def nested(queries: Sequence[Query]) -> tuple[list[np.ndarray], dict[str, dict[str, Any]]]:
    """Held-out scores of each repository by a model whose grid point was chosen on the
    other repositories alone (their own leave-one-repository-out split)."""
    scores: list[np.ndarray | None] = [None] * len(queries)
    chosen = {}
    for repo in sorted({q.repo for q in queries}):
        rest = [q for q in queries if q.repo != repo]
        params, _ = choose(rest) if len({q.repo for q in rest}) > 1 else (grid()[0], {})
        chosen[repo] = params
        model = fit(rest, params)
        for i, q in enumerate(queries):
            if q.repo == repo:
                scores[i] = np.asarray(model.predict(q.x))
    return [s for s in scores if s is not None], chosen


def fit_platt(score: np.ndarray, related: np.ndarray, steps: int = 100) -> tuple[float, float]:
    """P(related) = 1 / (1 + exp(-(a * score + b))), by Newton's method (Platt 1999, with
    his smoothed targets)."""
    pos, neg = related.sum(), len(related) - related.sum()
    t = np.where(related > 0, (pos + 1) / (pos + 2), 1 / (neg + 2))
    a_mat = np.column_stack([score, np.ones_like(score)])
    w = np.zeros(2)
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(a_mat @ w)))
        grad = a_mat.T @ (p - t)
        hess = a_mat.T @ (a_mat * (p * (1 - p))[:, None]) + 1e-9 * np.eye(2)
        w -= np.linalg.solve(hess, grad)
    return float(w[0]), float(w[1])


def calibration_figures(p: np.ndarray, related: np.ndarray) -> dict[str, Any]:
    eps = 1e-6
    bins = []
    for lo in np.arange(0.0, 1.0, 0.2):
        m = (p >= lo) & (p < lo + 0.2 + (1e-9 if lo >= 0.8 else 0))
        if m.any():
            bins.append({"p": f"{lo:.1f}-{lo + 0.2:.1f}", "rows": int(m.sum()), "mean_p": round(float(p[m].mean()), 3),
                         "related": round(float(related[m].mean()), 3)})
    return {"log_loss": round(float(-np.mean(related * np.log(p + eps) + (1 - related) * np.log(1 - p + eps))), 4),
            "brier": round(float(np.mean((p - related) ** 2)), 4), "bins": bins}


def platt(score: np.ndarray, a: float, b: float) -> np.ndarray:
    return 1 / (1 + np.exp(-(a * score + b)))


def first_of_each(queries: Sequence[Query], probabilities: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Each query's best P(related), and whether that candidate is related."""
    best = [int(np.argmax(p)) for p in probabilities]
    return (np.asarray([p[i] for p, i in zip(probabilities, best, strict=True)]),
            np.asarray([q.y[i] > 0 for q, i in zip(queries, best, strict=True)]))


def choose_quiet_below(queries: Sequence[Query], probabilities: Sequence[np.ndarray]) -> float:
    """The P(related) that best tells an answer whose first experience is related from one
    whose first is not (nothing related in memory, or a look-alike first): Youden's J, the
    share of the first kind loud minus the share of the second kind loud, on out-of-fold
    scores of every query."""
    top, related = first_of_each(queries, probabilities)
    cuts = np.unique(np.round(top, 3))
    j = [float(np.mean(top[related] >= c) - np.mean(top[~related] >= c)) for c in cuts]
    return float(cuts[int(np.argmax(j))])


def choose_floor(queries: Sequence[Query], probabilities: Sequence[np.ndarray]) -> float:
    """The largest share of the best candidate's P(related) that at most `FLOOR_MISSES` of the
    related candidates among each query's first `FLOOR_DEPTH` fall below (out-of-fold)."""
    shares = []
    for q, p in zip(queries, probabilities, strict=True):
        order = np.argsort(-p, kind="stable")[:FLOOR_DEPTH]
        shares += [p[i] / p[order[0]] for i in order if q.y[i] > 0]
    return float(np.floor(np.quantile(shares, FLOOR_MISSES) * 100) / 100) if shares else 0.0


def quiet_figures(queries: Sequence[Query], probabilities: Sequence[np.ndarray], threshold: float) -> dict[str, float]:
    """How often an answer is quiet (no candidate's P(related) reaches `threshold`) when
    nothing related is in memory (it should be), and loud when the first experience is
    related (it should be), on out-of-fold scores."""
    top, related = first_of_each(queries, probabilities)
    absent = np.asarray([q.related == 0 for q in queries])
    return {"quiet_when_nothing_related": round(float(np.mean(top[absent] < threshold)), 3),
            "loud_when_first_related": round(float(np.mean(top[related] >= threshold)), 3),
            "loud_when_first_unrelated": round(float(np.mean(top[~related & ~absent] >= threshold)), 3)}


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def rounded(d: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 3) if isinstance(v, float) else v for k, v in d.items()}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--signals", type=Path, default=Path("/tmp/ranker/signals"))
    ap.add_argument("--out", type=Path, default=Path("codemem/ranking/models"))
    ap.add_argument("--report", type=Path, default=Path("/tmp/ranker/cv.json"))
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    signals_hash = hashlib.sha256(b"".join(p.read_bytes() for p in sorted(args.signals.glob("*.jsonl")))).hexdigest()
    queries = load_queries(args.signals)
    # Ranking is learned and scored on the queries with a related task in memory; the others
    # (nothing related in memory) count for the calibration and for how often an answer is quiet.
    every, queries = queries, [q for q in queries if q.related > 0]
    repos = sorted({q.repo for q in queries})
    data = {"queries": len(queries), "queries_nothing_related": len(every) - len(queries),
            "candidates": int(sum(len(q.keys) for q in every)),
            "related_candidates": int(sum((q.y > 0).sum() for q in queries)),
            "queries_with_related_candidate": int(sum(q.y.max() > 0 for q in queries)),
            "by_repo": {r: sum(q.repo == r for q in queries) for r in repos}}
    print(json.dumps(data), flush=True)

    base = {name: rounded(figures(queries, s)) for name, s in baselines(queries).items()}
    held, chosen = nested(queries)
    params, table = choose(queries)  # the shipped model's grid point, and the plain LORO table
    oof = loro(every, params)
    cv = {"learned (nested)": rounded(figures(queries, held)), **base}
    gain = {name: paired_gain(queries, held, s) for name, s in baselines(queries).items()}
    per_repo = {}
    for r in repos:
        idx = [i for i, q in enumerate(queries) if q.repo == r]
        sub = [queries[i] for i in idx]
        per_repo[r] = {"learned (nested)": rounded(figures(sub, [held[i] for i in idx])),
                       **{n: rounded(figures(sub, [s[i] for i in idx])) for n, s in baselines(queries).items()}}
    print(json.dumps(cv, indent=1), json.dumps(gain, indent=1), flush=True)

    score = np.concatenate(oof)
    related = np.concatenate([(q.y > 0).astype(float) for q in every])
    a, b = fit_platt(score, related)
    calib = calibration_figures(platt(score, a, b), related)
    probabilities = [platt(s, a, b) for s in oof]
    search = {"quiet_below": choose_quiet_below(every, probabilities), "relevance_floor": choose_floor(queries, [
        platt(s, a, b) for s, q in zip(oof, every, strict=True) if q.related > 0])}
    shape = search | quiet_figures(every, probabilities, search["quiet_below"])

    t1 = time.perf_counter()
    model = fit(queries, params)
    fit_s = time.perf_counter() - t1
    args.out.mkdir(parents=True, exist_ok=True)
    model.booster_.save_model(str(args.out / "ranker.txt"))
    card = {
        "model_id": f"codemem-ranker-{signals_hash[:8]}-{params['num_leaves']}x{params['n_estimators']}",
        "features": list(FEATURES), "candidate_depth": CANDIDATE_DEPTH,
        "params": {**FIXED, **params}, "calibration": {"kind": "platt", "a": a, "b": b, **calib},
        "search": search, "answer_shape": shape,
        "trained_on": {"data": "swe-verified-reuse (tasks.jsonl, links.json)", "signals_sha256": signals_hash,
                       "commit": commit(), **data},
        "cv": {"note": "leave-one-repository-out on the training data (not validation)", "figures": cv,
               "learned_minus_baseline": gain,
               "per_repo": per_repo, "grid_loro": {p: rounded(f) for p, f in table.items()},
               "nested_choice": chosen},
        "fit_s": round(fit_s, 2), "total_s": round(time.perf_counter() - t0, 1),
        "gain_importance": dict(sorted(zip(FEATURES, map(float, model.booster_.feature_importance("gain")), strict=True),
                                       key=lambda kv: -kv[1])),
    }
    (args.out / "ranker.json").write_text(json.dumps(card, indent=1) + "\n")
    args.report.parent.mkdir(parents=True, exist_ok=True)
    args.report.write_text(json.dumps(card, indent=1))
    print(json.dumps({k: card[k] for k in ("model_id", "params", "calibration", "answer_shape", "fit_s", "total_s")}, indent=1))


if __name__ == "__main__":
    main()
