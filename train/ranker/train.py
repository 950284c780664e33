"""Train the relevance model: one LightGBM model over `codemem.ranking.features` for every kind
of experience, chosen and scored by leave-one-repository-out cross-validation on the training
data, fitted on all of it and saved as package data with a Platt calibration of its scores into
P(related), the answer's quiet threshold and relevance floor, and a card of what it was
trained on and how it scored.

    python -m train.ranker.train --signals DIR [--signals DIR ...] [--check-signals DIR ...] \
        [--commits DIR --stores DIR] [--projects DIR --questions FILE] [--candidates a,b] \
        --out DIR [--readme train/ranker/README.md] [--allow-dirty]

(`make train` runs it as its `ranker` step on the cached data and installs the model:
`train/README.md`.) It trains every candidate feature list of `train.ranker.featureset` on the
same data and folds and ships the one the ship rule (`train.ranker.ship_rule`, written in
`train/ranker/README.md` before the run it decided) picks, or nothing (exit 3); the card names
its features and holds every candidate's figures. A tree with uncommitted changes is refused
unless `--allow-dirty` (the card says so). Training data comes only from sources whose licence
lets a model be trained on them (`train.licences`).

`--signals`: replayed agent sessions (`train.ranker.build_data`, one directory per agent:
`queries.jsonl`, `cards.jsonl`); `--commits`: past-fix tasks searched over their repositories'
histories (`train.ranker.commit_data`: `queries.jsonl`). A query's candidates are the
Search's (`features.candidates`); its labels 2 (same function, or the gold change), 1 (same
file) or 0; queries with nothing related in memory (sessions before any related one; past-fix
reports asked of another repository's history) teach the calibration what an answer with
nothing related looks like.

The model is pointwise (LightGBM's cross-entropy on label / 2, every candidate of every query,
those with nothing related included): its score has to say how related a candidate is, not
only which of one query's candidates comes first, or a one-experience memory asked about
something else would come out as sure as a twin (a ranking objective leaves each query's score
level free). Every feature but the kind is held monotone increasing.

`--projects`: dated projects (`train.ranker.project_data`), the time features' data, kind
"project" or "chat".

Folds: leave one repository (or one dated project) out; a repository's sessions (of every agent)
and its past-fix tasks are in the same fold, so no task is both trained on and scored. The grid (8 points) is
chosen by holding the repositories out in three groups, then every repository is scored by a
model fitted on the others at that point (those out-of-fold scores give the figures, the
calibration, the quiet threshold and the floor). Every ranking is
scored on the same candidates: the model; the hand-set fusion (`eval.replay.fusion`, fused);
the best lexical item's BM25 (bm25); the best cosine (dense). A query's gold is its
highest-graded related experiences: hit@1 and hit@5 ask whether gold is first (in the first
5), MRR is that of the first gold, useful@1 whether the first is related at all.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lightgbm as lgb
import numpy as np

from codemem.config import Embedding
from codemem.memory import Memory
from codemem.ranking.features import CANDIDATE_DEPTH, candidate_features, candidates
from codemem.ranking.fields import CardFields, field_matches
from codemem.ranking.locations import LocationIndex, ticket_refs
from codemem.ranking.query import parse_query
from codemem.ranking.relevance import SessionSignals
from codemem.ranking.time_features import time_matches
from codemem.store.schema import key_of
from codemem.timeline.questions import MODEL as QUESTIONS_MODEL
from codemem.timeline.questions import Asked, QuestionReader
from eval.replay.fusion import fuse
from train.encoder import chosen_embedder, step_settings
from train.licences import require_training
from train.past_fixes.build_data import HISTORIES
from train.provenance import file_sha256, tree_state
from train.ranker import absence, ship_rule
from train.ranker.build_data import added_at, signals_from
from train.ranker.featureset import CANDIDATES, PURPOSE, REFERENCE, columns, monotone

# "weighting": every candidate counts once, or every query once (its candidates share a weight
# of 1: a past-fix query's hundred candidates then weigh what a session query's forty do).
GRID: dict[str, tuple[Any, ...]] = {"num_leaves": (7, 15), "n_estimators": (100, 300), "weighting": ("candidate", "query")}
FIXED: dict[str, Any] = {"objective": "cross_entropy", "learning_rate": 0.05, "min_child_samples": 20,
                         "subsample": 0.8, "subsample_freq": 1, "colsample_bytree": 0.8, "reg_lambda": 1.0,
                         "random_state": 0, "n_jobs": 1, "verbose": -1,
                         # LightGBM picks row- or column-wise histograms by timing both on the data, so
                         # the choice (and the last bits of the sums) followed the machine's load: two
                         # runs on the same data wrote different trees. Fixed, and deterministic.
                         "force_col_wise": True, "deterministic": True,
                         # Every feature but the kind says "more related" as it grows (features.py): the
                         # model is held to it (each candidate's constraints: `featureset.monotone`).
                         "monotone_constraints_method": "advanced"}
# An experience below this share of the best one's P(related) is left out where at most this
# share of the related experiences among the first `FLOOR_DEPTH` would be.
FLOOR_MISSES = 0.05
FLOOR_DEPTH = 10
SELECT_BY = "mrr"
NOTHING_SHIPPED = 3  # the exit status when no candidate passes the ship rule
GRID_FOLDS = 3  # the grid is chosen by holding out the repositories in this many groups
FIGURES = ship_rule.FIGURES
# Dated projects are "project", or "chat" where written as a developer's chat with an assistant.
KINDS = ("session", "commit", "project", "chat")
PROJECT_KINDS = ("project", "chat")
HISTORY_OF = {repo.split("/")[1]: repo for repo in HISTORIES}  # a past-fix memory's name -> its history


@dataclass
class Query:
    query: str
    repo: str
    kind: str  # one of KINDS
    source: str  # the agent whose sessions, or "past-fixes"
    keys: list[str]  # candidates, by key
    x: np.ndarray  # every feature of `FEATURES` (a candidate reads its columns)
    y: np.ndarray  # 2 same_function / gold change, 1 same_file, 0 otherwise
    fused: np.ndarray
    bm25: np.ndarray
    cosine: np.ndarray
    related: int  # related experiences in memory (found or not)
    asked: str = ""  # a project question's kind: "update" (the current value), "when", "before", ...
    trains: bool = True  # False: a check only (`--check-signals`), scored by models that never saw it
    # An answerable query asked again of its memory without its related experiences (`without`):
    # nothing related, for the nothing-related decision (`train/ranker/absence.py`); never trained on.
    absent: Query | None = None


def _query(rec: dict[str, Any], kind: str, source: str, cards: dict[str, CardFields] | None = None,
           locations: LocationIndex | None = None, asked: Asked | None = None) -> Query | None:
    """One recorded Search as a query: its candidates' features, labels and baseline scores,
    and, where a related experience is among them, the same Search without any related one
    (`Query.absent`)."""
    q = _recorded(rec, kind, source, cards, locations, asked)
    if q is not None and q.y.max() > 0:
        q.absent = _recorded(rec, kind, source, cards, locations, asked,
                             gone=frozenset(k for k, grade in rec["labels"].items() if grade > 0))
        if q.absent is not None:
            q.absent.trains = False
    return q


def _recorded(rec: dict[str, Any], kind: str, source: str, cards: dict[str, CardFields] | None = None,
              locations: LocationIndex | None = None, asked: Asked | None = None,
              gone: frozenset[str] = frozenset()) -> Query | None:
    """One recorded Search, less the experiences in `gone` (`without`). Fields and held
    references missing from an older record, or read beside an experience now gone, are computed
    from the cards the memory held (a session's card is final once it is added, so
    `cards.jsonl` holds the same)."""
    signals = signals_from(rec["signals"])
    if gone:
        signals = without(signals, gone)
    keys = candidates(signals, CANDIDATE_DEPTH)
    if not keys:
        return None
    text = rec["text"]
    if (gone or not signals.fields) and cards is not None:
        signals.fields = field_matches(text, {k: cards[k] for k in keys if k in cards})
    if cards is not None and asked is not None:  # dates were never recorded: the cards hold them
        signals.time = time_matches(text, {k: cards[k] for k in keys if k in cards}, asked)
    if (gone or not signals.refs_held) and locations is not None:
        signals.refs_held = locations.held(dict.fromkeys([*parse_query(text).refs, *ticket_refs(text)]), keys)
    vectors = candidate_features(signals, keys)
    fused = fuse(signals)
    labels = {} if gone else rec["labels"]
    return Query(rec["query"], rec["repo"], kind, source, keys,
                 np.asarray([vectors[k] for k in keys], dtype=np.float64),
                 np.asarray([labels.get(k, 0) for k in keys], dtype=np.int32),
                 np.asarray([fused.get(k, 0.0) for k in keys]),
                 np.asarray([signals.bm25.get(k, -1.0) for k in keys]),
                 np.asarray([signals.cosine.get(k, -2.0) for k in keys]), len(labels))


def without(signals: SessionSignals, gone: frozenset[str]) -> SessionSignals:
    """What the same Search would have found in a memory without the experiences in `gone`:
    each ranking with them taken out and the rest moved up (so one past the depth may become a
    candidate), every score of theirs dropped. What it cannot redo: the other experiences'
    BM25 scores are the ones read with `gone`'s words in the index (their idf), and a ranking
    recorded only to its depth cannot bring in what lay below it."""
    def kept(scores: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in scores.items() if k not in gone}

    def moved_up(ranks: dict[str, int]) -> dict[str, int]:
        return {k: n for n, k in enumerate(sorted(kept(ranks), key=lambda k: (ranks[k], k)), 1)}

    return SessionSignals({name: moved_up(r) for name, r in signals.ranks.items()}, kept(signals.cosine),
                          kept(signals.bm25), kept(signals.location), refs_held=kept(signals.refs_held),
                          commit_ranks={name: moved_up(r) for name, r in signals.commit_ranks.items()},
                          commits=signals.commits - gone, refs_bm25=kept(signals.refs_bm25),
                          kind_bm25={kind: kept(s) for kind, s in signals.kind_bm25.items()},
                          fields=kept(signals.fields), asked=signals.asked)


def load_sessions(path: Path, trains: bool = True, kind: str = "session", questions: Path = QUESTIONS_MODEL) -> list[Query]:
    """Every query `build_data` recorded in `path` (one agent's sessions, or a mixed replay),
    or `project_data` (dated projects: `kind` "project", each project's style its source; a
    chat's kind is "chat"). Training sessions (`trains`) must come from agents whose licence
    lets a model be trained on them (`train.licences`), whatever the command line says."""
    cards: dict[str, CardFields] = {}
    locations = LocationIndex()
    rows = [json.loads(line) for line in (path / "cards.jsonl").read_text().splitlines()]
    records = [json.loads(line) for line in (path / "queries.jsonl").read_text().splitlines()]
    # The replays Added sessions without dates; the service dates every Add and reads time
    # features among dated sessions, so a replay's sessions are dated in the order it Added
    # them (`build_data.added_at`: each repository's tasks in their number order).
    dates = added_at(records) if kind == "session" else {}
    for card in rows:
        cards[card["id"]] = CardFields.of(card["text"], card["metadata"],
                                          card.get("timestamp") or dates.get(card["id"], 0))
        if trains and kind == "session" and card.get("agent"):
            require_training(str(card["agent"]), f"sessions in {path}")
    locations.put({"session_key": c["id"], "refs": c.get("refs", ""), "metadata": c["metadata"]} for c in rows)
    readings = asked_of([str(r["text"]) for r in records], questions) if any(c.ms > 0 for c in cards.values()) else {}
    out = []
    for rec in records:
        source = path.name if rec.get("replay") == "mixed" else str(rec.get("agent") or path.name)
        own = kind
        if kind == "project":
            own = "chat" if source == "chat" else "project"
            source = f"project {source}"
        if (q := _query(rec, own, source, cards, locations, readings.get(str(rec["text"])))) is not None:
            q.trains = trains
            q.asked = str(rec.get("kind") or "")
            out.append(q)
    return out


def asked_of(texts: list[str], questions: Path = QUESTIONS_MODEL) -> dict[str, Asked]:
    """What each question asks of time, read by the question reader in `questions` (`--questions`:
    the one the same `make train` run trained) from its vector by the encoder the run builds with, as a Search reads it."""
    unique = sorted(set(texts))
    vectors = chosen_embedder().embed(unique, Embedding().query_max_tokens)
    reader = QuestionReader.load(questions)
    return {t: reader.read(t, v) for t, v in zip(unique, vectors, strict=True)}


def load_commits(path: Path, stores: Path | None = None) -> list[Query]:
    """Every past-fix query `commit_data` recorded in `path` (fields and references held
    included); the candidates' cards are read from the histories' memories in `stores`
    (default: `store` beside `path`, as `train.past_fixes.build_data` writes them). Their
    dates are not read: each window of a history was built around its fix, so a candidate's
    place in time says how the window was cut, not how related it is."""
    stores = stores or path.parent / "store"
    cards: dict[str, dict[str, CardFields]] = {}
    out = []
    for line in (path / "queries.jsonl").read_text().splitlines():
        rec = json.loads(line)
        user = str(rec["memory"])
        require_training(HISTORY_OF[user.removeprefix("pastfixes-")], f"past fixes in {path}")
        if user not in cards:
            cards[user] = commit_cards(stores, user.removeprefix("pastfixes-"))
        if (q := _query(rec, "commit", "past-fixes", cards[user])) is not None:
            out.append(q)
    return out


def commit_cards(stores: Path, name: str) -> dict[str, CardFields]:
    """One history's experiences' card fields (undated), by their change's SHA."""
    memory = Memory(step_settings(stores / name))
    try:
        rows = memory.store.user_rows(key_of(f"pastfixes-{name}"), "card", ["session_key", "text", "metadata"])
    finally:
        memory.close()
    out = {}
    for row in rows:
        meta = json.loads(str(row["metadata"]) or "{}")
        # named as `commit_data.open_memory` names them
        out[str(meta.get("commit") or row["session_key"])] = CardFields.of(str(row["text"]), meta)
    return out


def figures(queries: Sequence[Query], scores: Sequence[np.ndarray]) -> dict[str, float]:
    """hit@1, hit@5, MRR and useful@1 of ranking each query's candidates by `scores` (ties
    keep the key order)."""
    each = ship_rule.per_query([q.y for q in queries], scores)
    return {name: float(v.mean()) if len(v) else 0.0 for name, v in each.items()} | {"queries": len(queries)}


def paired_gain(queries: Sequence[Query], learned: Sequence[np.ndarray], other: Sequence[np.ndarray]) -> dict[str, list[float]]:
    """The model's gain over `other` per figure: mean and a 95% paired bootstrap interval over queries."""
    labels = [q.y for q in queries]
    a, b = ship_rule.per_query(labels, learned), ship_rule.per_query(labels, other)
    return {name: [round(v, 3) for v in ship_rule.interval(a[name] - b[name])] for name in ("hit@1", "mrr", "useful@1")}


def baselines(queries: Sequence[Query]) -> dict[str, list[np.ndarray]]:
    return {"fused": [q.fused for q in queries], "bm25": [q.bm25 for q in queries],
            "dense": [q.cosine for q in queries]}


def fit(queries: Sequence[Query], params: dict[str, Any], features: tuple[str, ...]) -> lgb.LGBMRegressor:
    """The model over `features` fitted on the training queries among `queries` (checks are
    never fitted)."""
    train = [q for q in queries if q.trains]
    cols = list(columns(features))
    model = lgb.LGBMRegressor(**FIXED, monotone_constraints=list(monotone(features)),
                              **{k: v for k, v in params.items() if k != "weighting"})
    weight = None
    if params.get("weighting") == "query":
        weight = np.concatenate([np.full(len(q.keys), 1.0 / len(q.keys)) for q in train])
        weight *= len(weight) / weight.sum()  # the same total as one per candidate
    model.fit(np.vstack([q.x[:, cols] for q in train]), np.concatenate([q.y for q in train]) / 2.0, sample_weight=weight)
    return model


def raw(model: lgb.LGBMRegressor, x: np.ndarray) -> np.ndarray:
    """The model's raw score (log-odds) of each row of `x`."""
    return np.asarray(model.booster_.predict(x, raw_score=True))


def grid() -> list[dict[str, Any]]:
    return [dict(zip(GRID, combo, strict=True)) for combo in itertools.product(*GRID.values())]


def repository_folds(queries: Sequence[Query], k: int | None = None) -> list[set[str]]:
    """The repositories, one per fold (leave one out), or dealt into `k` folds largest first
    (the choice of the grid: fewer fits, every repository still held out once)."""
    sizes = Counter(q.repo for q in queries)
    repos = sorted(sizes, key=lambda r: (-sizes[r], r))
    if k is None or k >= len(repos):
        return [{r} for r in repos]
    return [set(repos[i::k]) for i in range(k)]


def loro(queries: Sequence[Query], params: dict[str, Any], features: tuple[str, ...],
         folds: list[set[str]] | None = None) -> list[np.ndarray]:
    """Out-of-fold scores: each fold's queries scored by a model over `features` fitted on the
    other folds' (default: leave one repository, or one dated project, out)."""
    scores: list[np.ndarray | None] = [None] * len(queries)
    cols = list(columns(features))
    for fold in folds or repository_folds(queries):
        model = fit([q for q in queries if q.repo not in fold], params, features)
        for i, q in enumerate(queries):
            if q.repo in fold:
                scores[i] = raw(model, q.x[:, cols])
    return [s for s in scores if s is not None]


def ranked(queries: Sequence[Query]) -> list[int]:
    """The queries with a related experience in memory: those a ranking is scored on."""
    return [i for i, q in enumerate(queries) if q.related > 0]


def choose(queries: Sequence[Query], features: tuple[str, ...], folds: int | None = None
           ) -> tuple[dict[str, Any], dict[str, dict[str, float]]]:
    """The grid point with the best cross-validated `SELECT_BY` over the ranked queries (every
    query trains) for a model over `features`, the repositories held out one at a time or in
    `folds` groups."""
    idx = [i for i in ranked(queries) if queries[i].trains]  # a check chooses nothing
    table = {}
    for p in grid():
        oof = loro(queries, p, features, repository_folds(queries, folds))
        table[json.dumps(p)] = figures([queries[i] for i in idx], [oof[i] for i in idx])
    best = max(table, key=lambda p: (table[p][SELECT_BY], table[p]["hit@1"]))
    return json.loads(best), table


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


def quiet_figures(queries: Sequence[Query], probabilities: Sequence[np.ndarray], threshold: float) -> dict[str, Any]:
    """How often an answer is quiet (no candidate's P(related) reaches `threshold`) when
    nothing related is in memory (it should be), and loud when the first experience is
    related (it should be), on out-of-fold scores."""
    if not queries:
        return {}
    top, related = first_of_each(queries, probabilities)
    absent = np.asarray([q.related == 0 for q in queries])

    def share(mask: np.ndarray, loud: bool) -> float | None:
        return round(float(np.mean((top[mask] >= threshold) == loud)), 3) if mask.any() else None

    return {"quiet_when_nothing_related": share(absent, False), "loud_when_first_related": share(related, True),
            "loud_when_first_unrelated": share(~related & ~absent, True),
            "queries_nothing_related": int(absent.sum())}


def data_name(path: Path, root: Path | None) -> str:
    """A data file's name in the card: its path under `root` (the training cache, the same on
    every machine) where it lies there, else as given."""
    if root is not None and path.resolve().is_relative_to(root.resolve()):
        return str(path.resolve().relative_to(root.resolve()))
    return str(path)


def rounded(d: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 3) if isinstance(v, float) else v for k, v in d.items()}


def data_summary(every: Sequence[Query]) -> dict[str, Any]:
    def count(pred: Any) -> dict[str, int]:
        return dict(sorted(Counter(pred(q) for q in every).items()))

    return {"queries": len(every), "ranked_queries": sum(q.related > 0 for q in every),
            "queries_nothing_related": sum(q.related == 0 for q in every),
            "candidates": int(sum(len(q.keys) for q in every)),
            "related_candidates": int(sum((q.y > 0).sum() for q in every)),
            "queries_with_related_candidate": int(sum(q.y.max() > 0 for q in every)),
            "by_kind": count(lambda q: q.kind), "by_source": count(lambda q: q.source),
            "ranked_by_repo": dict(sorted(Counter(f"{q.repo} ({q.kind})" for q in every if q.related > 0).items())),
            "repositories": len({q.repo for q in every})}


def scored_table(queries: Sequence[Query], learned: Sequence[np.ndarray]) -> dict[str, dict[str, float]]:
    return {"learned": rounded(figures(queries, learned)),
            **{name: rounded(figures(queries, s)) for name, s in baselines(queries).items()}}


def markdown(card: dict[str, Any]) -> str:
    """The card's figures as the README's generated section."""
    cv, data = card["cv"], card["trained_on"]
    lines = [f"Generated by `python -m train.ranker.train` at `{data['commit']}` (tree "
             f"{'clean' if data['clean_tree'] else 'with uncommitted changes'}), model `{card['model_id']}`, "
             f"{card['total_s']:.0f} s on {card['machine']}.", "",
             f"**Data:** {data['queries']} queries ({data['ranked_queries']} with a related experience in memory, "
             f"{data['queries_nothing_related']} with none) over {data['repositories']} repositories, "
             f"{data['candidates']:,} candidates, {data['related_candidates']:,} related. By kind: "
             + ", ".join(f"{k} {v}" for k, v in data["by_kind"].items()) + "; by source: "
             + ", ".join(f"{k} {v}" for k, v in data["by_source"].items()) + ".", "",
             "**The ship rule** (written before the run: README, \"The ship rule\"), every candidate out of fold on "
             f"the same {card['ship_rule']['queries']} ranked queries (" + ", ".join(f"{k} {n}" for k, n in
                                                                              card['ship_rule']['kinds'].items())
             + f"); shipped: **{card['ship_rule']['shipped']}**. Differences are to the reference, mean [95% paired "
             "bootstrap]:", "",
             "| candidate | features | MRR | minus reference (MRR) | hit@1 by kind (minus reference) | best single "
             "feature MRR | purpose gain | passes |", "|---|---:|---:|---|---|---:|---|---|"]
    for name, c in card["ship_rule"]["candidates"].items():
        kinds = "; ".join(f"{k} {c['by_kind'][k]['hit@1']:.3f} ({c['minus_reference'][k]['hit@1'][0]:+.3f} "
                          f"[{c['minus_reference'][k]['hit@1'][1]:+.3f}, {c['minus_reference'][k]['hit@1'][2]:+.3f}])"
                          for k in c["by_kind"])
        m = c["minus_reference"]["all"]["mrr"]
        purpose = "-"
        if "purpose" in c:
            p = c["purpose"]
            purpose = f"{p['figure']} on {p['group']} ({p['queries']})" + (
                f": {p['reference']:.3f} -> {p['candidate']:.3f}, {p['gain'][0]:+.3f} [{p['gain'][1]:+.3f}, {p['gain'][2]:+.3f}]"
                if p["queries"] else ": none in the data")
        failed = [k for k, v in c["checks"].items() if not ship_rule.passed(v)]
        lines.append(f"| {name} | {len(c['features'])} | {c['all']['mrr']:.3f} | {m[0]:+.4f} [{m[1]:+.4f}, {m[2]:+.4f}] | "
                     f"{kinds} | {c['best_single_feature']['mrr']:.3f} | {purpose} | "
                     f"{'yes' if c['passes'] else 'no: ' + ', '.join(failed)} |")
    lines += ["", "**Leave-one-repository-out, on the training data, not validation** (the grid point was chosen "
              f"holding the same repositories out in {GRID_FOLDS} groups: {len(grid())} points, a small optimism):", "",
              "| kind | ranking | queries | hit@1 | hit@5 | MRR | useful@1 |", "|---|---|---:|---:|---:|---:|---:|"]
    for kind, table in cv["by_kind"].items():
        for name, f in table.items():
            lines.append(f"| {kind} | {name} | {f['queries']} | {f['hit@1']:.3f} | {f['hit@5']:.3f} | {f['mrr']:.3f} "
                         f"| {f['useful@1']:.3f} |")
    lines += ["", "By the agent whose sessions filled the memory (sessions only; a mixed replay holds several):", "",
              "| sessions of | ranking | queries | hit@1 | hit@5 | MRR | useful@1 |", "|---|---|---:|---:|---:|---:|---:|"]
    for source, table in cv["by_source"].items():
        for name, f in table.items():
            lines.append(f"| {source} | {name} | {f['queries']} | {f['hit@1']:.3f} | {f['hit@5']:.3f} | "
                         f"{f['mrr']:.3f} | {f['useful@1']:.3f} |")
    lines += ["", "Model minus fusion, 95% paired bootstrap over queries (hit@1, MRR): "
              + "; ".join(f"{kind} {g['hit@1']} / {g['mrr']}" for kind, g in cv["minus_fused"].items()) + ".", "",
              f"**Chosen on the training folds:** grid point {card['params']['num_leaves']} leaves x "
              f"{card['params']['n_estimators']} trees, each {card['params']['weighting']} weighing one ({SELECT_BY}); Platt a {card['calibration']['a']:.3f}, "
              f"b {card['calibration']['b']:.3f} (log-loss {card['calibration']['log_loss']}, Brier "
              f"{card['calibration']['brier']}); quiet threshold {card['search']['quiet_below']} (Youden's J over "
              f"every query's first experience); relevance floor {card['search']['relevance_floor']} (at most "
              f"{FLOOR_MISSES:.0%} of the related experiences among each query's first {FLOOR_DEPTH} below it).", "",
              "| kind | quiet when nothing related | loud when the first is related | loud when the first is unrelated |",
              "|---|---:|---:|---:|"]
    for kind, q in card["answer_shape"]["by_kind"].items():
        lines.append(f"| {kind} | {q.get('quiet_when_nothing_related')} | {q.get('loud_when_first_related')} | "
                     f"{q.get('loud_when_first_unrelated')} |")
    nothing = card["nothing_related"]
    lines += ["", f"**Nothing related** (`codemem/ranking/absence.py`, out of fold, cuts chosen on the same probabilities: "
              f"at most {nothing['cost_cap']:.0%} of each query kind's answerable queries with the gold in the first 5 emptied; "
              f"cuts {nothing['learned']['cuts']}). Share answered empty, the learned decision (the first candidate's P "
              "alone, same cap):", "",
              "| kind | cost: gold in first 5 emptied | answerable emptied | nothing related, recorded | "
              "nothing related, gold removed |", "|---|---:|---:|---:|---:|"]
    for kind, f in nothing["learned"].items():
        if kind == "cuts":
            continue
        alone = nothing["first candidate's P alone"][kind]
        lines.append(f"| {kind} | " + " | ".join(f"{f[k]['share']} ({alone[k]['share']}) of {f[k]['of']}" for k in f) + " |")
    lines += ["", "Largest gains: " + ", ".join(f"`{k}` {v:.0f}" for k, v in list(card["gain_importance"].items())[:8])
              + "; features with no gain: " + (", ".join(f"`{k}`" for k, v in card["gain_importance"].items() if not v)
                                              or "none") + "."]
    return "\n".join(lines) + "\n"


def write_readme(path: Path, section: str) -> None:
    """Replace the README's generated section (between its two markers) with `section`."""
    start, end = "<!-- generated by train.ranker.train -->\n", "<!-- end of the generated section -->\n"
    text = path.read_text()
    if start not in text or end not in text:
        raise SystemExit(f"{path} has no generated section ({start.strip()} ... {end.strip()})")
    head, rest = text.split(start, 1)
    path.write_text(head + start + section + end + rest.split(end, 1)[1])


def write_per_query(path: Path, queries: Sequence[Query], scores: Sequence[np.ndarray]) -> None:
    """Each ranked query's reciprocal rank of its gold by the shipped model, out of fold, and by
    each single signal (the dense one, BM25, their fusion), one JSON line a query: where the
    model misses, and whether a signal would not have. A route to a better signal is judged by
    the model's figures (`train/encoder/README.md`), and these say where it could add."""
    labels = [q.y for q in queries]
    rr = {name: ship_rule.per_query(labels, s)["mrr"] for name, s in {"model": scores, **baselines(queries)}.items()}
    with path.open("w") as out:
        for n, q in enumerate(queries):
            out.write(json.dumps({"repo": q.repo, "kind": q.kind, "source": q.source, "trains": q.trains,
                                  "asked": q.asked, "query": q.query[:300]}
                                 | {f"{name}_rr": round(float(v[n]), 4) for name, v in rr.items()}) + "\n")


def held_out(every: Sequence[Query], checks: Sequence[Query], features: tuple[str, ...]) -> dict[str, Any]:
    """One candidate feature list: its grid point (the repositories in `GRID_FOLDS` groups),
    then every query and check scored out of fold at that point (and each answerable query
    without its related experiences, `Query.absent`), and its best single feature out of fold
    on the same folds."""
    params, table = choose(every, features, GRID_FOLDS)
    print(f"{len(features)} features, grid: {params}", flush=True)
    absent = [q.absent for q in every if q.absent is not None]
    # each repository scored by a model that never saw it
    held_all = loro([*every, *checks, *absent], params, features)
    idx = ranked(every)
    position = {i: n for n, i in enumerate(idx)}
    folds = [[position[i] for i in idx if every[i].repo in fold] for fold in repository_folds(every)]
    cols = list(columns(features))
    single, chosen = ship_rule.single_feature_scores([every[i].x[:, cols] for i in idx], [every[i].y for i in idx],
                                                     [f for f in folds if f])
    n = len(every) + len(checks)
    return {"features": features, "params": params, "table": table, "oof": held_all[:len(every)],
            "checks": held_all[len(every):n], "absent": held_all[n:], "single": single,
            "single_features": dict(sorted(Counter(features[j] for j in chosen).items()))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--signals", type=Path, action="append", default=[], help="one agent's replayed sessions")
    ap.add_argument("--commits", type=Path, action="append", default=[], help="past-fix tasks over histories")
    ap.add_argument("--stores", type=Path, default=None,
                    help="the histories' memories the --commits searched (default: `store` beside each)")
    ap.add_argument("--projects", type=Path, action="append", default=[],
                    help="dated projects whose choices change (`project_data`): the time features' data")
    ap.add_argument("--questions", type=Path, default=QUESTIONS_MODEL,
                    help="the question reader the time features read questions with (default: the packaged one)")
    ap.add_argument("--check-signals", type=Path, action="append", default=[],
                    help="sessions scored by the held-out models but never trained on (an agent whose license "
                         "does not allow shipping a model trained on it)")
    ap.add_argument("--candidates", default=",".join(CANDIDATES),
                    help=f"the candidate feature lists to compare by the ship rule (default: {','.join(CANDIDATES)}; "
                         f"{REFERENCE!r} is always one)")
    ap.add_argument("--out", type=Path, default=Path("codemem/ranking/models"))
    ap.add_argument("--readme", type=Path, default=None, help="the model card whose generated section to rewrite")
    ap.add_argument("--report", type=Path, default=Path("/tmp/ranker/cv.json"))
    ap.add_argument("--data-root", type=Path, default=None,
                    help="name the data files in the card by their path under this folder (the training cache)")
    ap.add_argument("--allow-dirty", action="store_true",
                    help="train from a tree with uncommitted changes (the card says so)")
    args = ap.parse_args(argv)
    if not args.signals and not args.commits:
        ap.error("give --signals and/or --commits")
    names = list(dict.fromkeys([REFERENCE, *(n for n in args.candidates.split(",") if n)]))
    if unknown := [n for n in names if n not in CANDIDATES]:
        ap.error(f"unknown candidate(s) {', '.join(unknown)}; the candidates: {', '.join(CANDIDATES)}")
    t0 = time.perf_counter()
    # What the card says it was trained at: read before anything is written.
    at = tree_state()
    if not at["clean_tree"] and not args.allow_dirty:
        raise SystemExit("the tree has uncommitted changes to tracked files: commit them first, or give "
                         "--allow-dirty (the card then says the tree was dirty)")
    files = sorted(p / name for p in [*args.signals, *args.commits, *args.projects] for name in ("queries.jsonl", "cards.jsonl")
                   if (p / name).exists())
    hashes = {data_name(f, args.data_root): file_sha256(f) for f in [*files, *([args.questions] if args.projects else [])]}
    every = ([q for p in args.signals for q in load_sessions(p)] + [q for p in args.commits for q in load_commits(p, args.stores)]
             + [q for p in args.projects for q in load_sessions(p, kind="project", questions=args.questions)])
    checks = [q for p in args.check_signals for q in load_sessions(p, trains=False)]
    data = data_summary(every) | {"checks": dict(sorted(Counter(q.source for q in checks).items()))}
    print(json.dumps(data), flush=True)

    # Every candidate on the same folds; the ship rule (train/ranker/README.md) picks one.
    runs = {name: held_out(every, checks, CANDIDATES[name]) for name in names}
    idx = ranked(every)
    groups = {f"project questions: {asked}": [n for n, i in enumerate(idx) if every[i].kind in PROJECT_KINDS
                                               and every[i].asked == asked]
              for asked in sorted({q.asked for q in every if q.kind in PROJECT_KINDS})}
    rule = ship_rule.decide([every[i].y for i in idx], [every[i].kind for i in idx],
                            {n: [r["oof"][i] for i in idx] for n, r in runs.items()},
                            {n: r["single"] for n, r in runs.items()}, groups,
                            {n: PURPOSE[n] for n in names if n in PURPOSE}, REFERENCE)
    for n, r in runs.items():
        rule["candidates"][n] |= {"features": list(r["features"]), "params": r["params"],
                                  "single_features_chosen": r["single_features"],
                                  "grid_cv": {p: rounded(f) for p, f in r["table"].items()}}
    print(json.dumps({n: {k: c[k] for k in ("all", "checks", "passes")} for n, c in rule["candidates"].items()}
                     | {"shipped": rule["shipped"]}, indent=1), flush=True)
    args.report.parent.mkdir(parents=True, exist_ok=True)
    if rule["shipped"] is None:
        args.report.write_text(json.dumps({"ship_rule": rule, "trained_on": data}, indent=1))
        print(f"no candidate passes the ship rule: nothing written to {args.out}; see {args.report}", flush=True)
        return NOTHING_SHIPPED
    shipped = runs[rule["shipped"]]
    features, params, held, held_checks = shipped["features"], shipped["params"], shipped["oof"], shipped["checks"]
    checked = ranked(checks)
    write_per_query(args.report.parent / "per_query.jsonl", [every[i] for i in idx] + [checks[i] for i in checked],
                    [held[i] for i in idx] + [held_checks[i] for i in checked])

    by_kind, gain = {}, {}
    for kind in ("all", *KINDS):
        sub = [i for i in idx if kind == "all" or every[i].kind == kind]
        if not sub:
            continue
        qs = [every[i] for i in sub]
        by_kind[kind] = scored_table(qs, [held[i] for i in sub])
        gain[kind] = paired_gain(qs, [held[i] for i in sub], [q.fused for q in qs])
    by_source = {}
    for source in sorted({q.source for q in every if q.kind in ("session", *PROJECT_KINDS)}):
        sub = [i for i in idx if every[i].source == source]
        by_source[source] = scored_table([every[i] for i in sub], [held[i] for i in sub])
    for asked in sorted({q.asked for q in every if q.kind in PROJECT_KINDS}):  # update: hit@1 is newest first
        sub = [i for i in idx if every[i].kind in PROJECT_KINDS and every[i].asked == asked]
        by_source[f"project questions: {asked}"] = scored_table([every[i] for i in sub], [held[i] for i in sub])
    for source in sorted({q.source for q in checks}):
        sub = [i for i in ranked(checks) if checks[i].source == source]
        by_source[f"{source} (check: never trained on)"] = scored_table([checks[i] for i in sub],
                                                                        [held_checks[i] for i in sub])
    per_repo = {}
    for repo in sorted({every[i].repo for i in idx}):
        sub = [i for i in idx if every[i].repo == repo]
        per_repo[repo] = scored_table([every[i] for i in sub], [held[i] for i in sub])

    score = np.concatenate(held)
    related = np.concatenate([(q.y > 0).astype(float) for q in every])
    a, b = fit_platt(score, related)
    calib = calibration_figures(platt(score, a, b), related)
    probabilities = [platt(s, a, b) for s in held]
    search: dict[str, Any] = {"quiet_below": choose_quiet_below(every, probabilities),
              "relevance_floor": choose_floor([every[i] for i in idx], [probabilities[i] for i in idx])}
    shape = search | {"by_kind": {kind: quiet_figures([q for q in every if kind == "all" or q.kind == kind],
                                                      [p for q, p in zip(every, probabilities, strict=True)
                                                       if kind == "all" or q.kind == kind], search["quiet_below"])
                                  for kind in ("all", *KINDS) if kind == "all" or any(q.kind == kind for q in every)}}
    decision, nothing_related = absence.learn(every, probabilities, [platt(s, a, b) for s in shipped["absent"]],
                                              repository_folds(every))
    search["nothing_related"] = decision.card()
    print(json.dumps({"nothing_related": {k: nothing_related["learned"][k] for k in ("cuts", "all")}}, indent=1), flush=True)

    t1 = time.perf_counter()
    model = fit(every, params, features)
    fit_s = time.perf_counter() - t1
    args.out.mkdir(parents=True, exist_ok=True)
    model.booster_.save_model(str(args.out / "ranker.txt"))
    data_hash = hashlib.sha256("".join(sorted(hashes.values())).encode()).hexdigest()
    card = {
        "model_id": f"codemem-relevance-{data_hash[:8]}-{rule['shipped']}-{params['num_leaves']}x{params['n_estimators']}"
                    f"-{params['weighting']}",
        "features": list(features), "candidate_depth": CANDIDATE_DEPTH,
        "params": {**FIXED, "monotone_constraints": list(monotone(features)), **params},
        "calibration": {"kind": "platt", "a": a, "b": b, **calib},
        "search": search, "answer_shape": shape, "nothing_related": nothing_related,
        "trained_on": {"data_sha256": hashes, **at, **data},
        "ship_rule": rule,
        "cv": {"note": "leave-one-repository-out (and one dated project out) on the training data (not validation); "
                       f"the grid point was chosen by holding the same repositories out in {GRID_FOLDS} groups",
               "by_kind": by_kind, "by_source": by_source, "minus_fused": gain, "per_repo": per_repo,
               "grid_cv": {p: rounded(f) for p, f in shipped["table"].items()}},
        "fit_s": round(fit_s, 2), "total_s": round(time.perf_counter() - t0, 1),
        "machine": f"{len(os.sched_getaffinity(0))} cores, load {os.getloadavg()[0]:.1f}",
        "gain_importance": dict(sorted(zip(features, map(float, model.booster_.feature_importance("gain")), strict=True),
                                       key=lambda kv: -kv[1])),
    }
    (args.out / "ranker.json").write_text(json.dumps(card, indent=1) + "\n")
    args.report.write_text(json.dumps(card, indent=1))
    if args.readme:
        write_readme(args.readme, markdown(card))
    print(json.dumps({k: card[k] for k in ("model_id", "params", "search", "answer_shape", "fit_s", "total_s")}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
