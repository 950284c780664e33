"""Whether a second encoder beside MiniLM could lift the relevance model: the issue's third
route (issue 55, item 2), screened on the learned model's out-of-fold figures before any such
encoder is built.

A second encoder is only worth its cost (a second vector per item at every Add) if the relevance
model gains from reading two dense signals where it reads one today. That can be measured before
the encoder exists, with the strongest second encoder at hand: MiniLM fine-tuned on the written
reports (`finetune.py`), whose dense signal alone beats MiniLM's (0.581 against 0.548 MRR out of
fold) but which, read *instead of* MiniLM's, moved the model by +0.002 (`README.md`). Here it is
read *beside* MiniLM's.

Two `make train` builds at one commit, `--encoder minilm` (A) and `--encoder tuned` (B), hold the
same queries over the same memories, each Searched with its own encoder. Each candidate of A's
queries gains B's three dense features of the same candidate of the same query: its dense rank,
its gap to the query's best and its raw cosine (`TUNED`); a candidate B's dense retriever did not
reach reads 0, as any ranking's absent candidate does. The relevance model is then trained on the
shipped feature list of A's card and on that list with the three added, on the same queries,
folds (leave one repository or project out) and grid (`train.ranker.train.held_out`), and both are
scored out of fold; the OpenHands sessions are a check, never trained on.

The rule, written before the first score (2026-12-07): a second encoder is worth building when
the model with both encoders' features has, against the shipped list alone,
- an MRR over all ranked queries at least 0.005 higher,
- no kind of at least 100 queries (sessions, commits, projects, chats) more than 0.01 lower,
- and the OpenHands check no more than 0.01 lower.
That is the ship rule of the fine-tuned encoder (`ship.py`). The tuned MiniLM costs as much as
MiniLM at every Add, which the track's cost targets cannot carry twice (ingest 1.2x and Add
throughput 0.85x of the baseline already, `eval/results/versus-97be416.json`): the encoder to
build would be a cheaper one (static word vectors trained on the same pairs), and not a stronger
one. So where this ceiling fails the rule, the route is closed for encoders trained on these
pairs; where it passes, the cheap encoder is built and screened in the same way.

Besides the rule, it writes where the models miss: for the ranked queries the shipped model of A
does not put a gold first, how often A's dense rank, B's, BM25 or their fusion would have.

    python -m train.encoder.second_encoder_trial --minilm CACHE/ranker/KEY --tuned CACHE2/ranker/KEY \\
        --tuned-encoder CACHE2/encoder-tuned/KEY --out eval/results/second-encoder-trial.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from eval._provenance import finish, provenance
from train.encoder.ship import CHECK_LOSS, KIND_LOSS, MIN_KIND, numbered
from train.ranker import featureset, ship_rule
from train.ranker.train import Query, figures, held_out, load_commits, load_sessions, ranked

ALL_GAIN = 0.005
DENSE = ("dense_rr", "dense_gap", "cosine")
TUNED = tuple(f"tuned_{name}" for name in DENSE)
KINDS = ("session", "commit", "project", "chat")


def load_build(ranker_step: Path) -> tuple[list[Query], list[Query], list[str]]:
    """A build's training queries and checks, read as its ranker step read them (`step.json`'s
    arguments), and the feature list its card shipped."""
    argv = json.loads((ranker_step / "step.json").read_text())["argv"]
    given: dict[str, list[Path]] = {}
    for flag, value in zip(argv[::2], argv[1::2], strict=True):
        given.setdefault(flag, []).append(Path(value))
    stores = given["--stores"][0]
    questions = given["--questions"][0]
    every = ([q for p in given.get("--signals", []) for q in load_sessions(p)]
             + [q for p in given.get("--commits", []) for q in load_commits(p, stores)]
             + [q for p in given.get("--projects", []) for q in load_sessions(p, kind="project", questions=questions)])
    checks = [q for p in given.get("--check-signals", []) for q in load_sessions(p, trains=False)]
    card = json.loads((ranker_step / "ranker.json").read_text())
    return every, checks, list(card["features"])


def identities(queries: Sequence[Query]) -> list[tuple[str, ...]]:
    """Each query's identity across two builds (`ship.numbered`)."""
    return numbered((q.kind, q.source, q.repo, q.asked, q.query) for q in queries)


def with_tuned(a: Sequence[Query], b: Sequence[Query]) -> int:
    """Append B's dense features to each of A's candidates (0 where B did not reach it); the
    queries of A that B lacks read 0 throughout. Returns how many of A's queries B held."""
    cols = [featureset.FEATURES.index(name) for name in DENSE]
    by_key = dict(zip(identities(b), b, strict=True))
    matched = 0
    for q, identity in zip(a, identities(a), strict=True):
        other = by_key.get(identity)
        extra = np.zeros((len(q.keys), len(TUNED)))
        if other is not None:
            matched += 1
            row = {k: other.x[i, cols] for i, k in enumerate(other.keys)}
            for i, k in enumerate(q.keys):
                if k in row:
                    extra[i] = row[k]
        q.x = np.hstack([q.x, extra])
        if q.absent is not None:  # the same Search less its related experiences: B's view unknown
            q.absent.x = np.hstack([q.absent.x, np.zeros((len(q.absent.keys), len(TUNED)))])
    return matched


def mrr_by_kind(queries: Sequence[Query], scores: Sequence[np.ndarray]) -> dict[str, dict[str, float]]:
    """MRR (and hit@1) of ranking each ranked query's candidates by `scores`, over all and by kind."""
    out = {}
    for kind in ("all", *KINDS):
        sub = [i for i in ranked(queries) if kind == "all" or queries[i].kind == kind]
        if sub:
            got = figures([queries[i] for i in sub], [scores[i] for i in sub])
            out[kind] = {"queries": len(sub), "mrr": round(got["mrr"], 4), "hit@1": round(got["hit@1"], 4)}
    return out


def misses(queries: Sequence[Query], model: Sequence[np.ndarray]) -> dict[str, dict[str, float]]:
    """Of the ranked queries whose gold the model does not put first, by kind: the share each
    single signal would have put first (A's dense, B's dense, BM25, their fusion, any of them)."""
    idx = ranked(queries)
    labels = [queries[i].y for i in idx]
    tuned_col = featureset.FEATURES.index(TUNED[2])
    signals = {"model": [model[i] for i in idx], "dense": [queries[i].cosine for i in idx],
               # B's cosine, with the candidates it did not reach last
               "tuned dense": [np.where(queries[i].x[:, tuned_col] > 0, queries[i].x[:, tuned_col], -1.0) for i in idx],
               "bm25": [queries[i].bm25 for i in idx], "fused": [queries[i].fused for i in idx]}
    first = {name: ship_rule.per_query(labels, s)["hit@1"] for name, s in signals.items()}
    out = {}
    for kind in ("all", *KINDS):
        sub = [n for n, i in enumerate(idx) if (kind == "all" or queries[i].kind == kind) and first["model"][n] < 1]
        if sub:
            row: dict[str, float] = {"misses": len(sub)}
            for name in ("dense", "tuned dense", "bm25", "fused"):
                row[f"first by {name}"] = round(float(first[name][sub].mean()), 3)
            row["first by any"] = round(float(np.max([first[n][sub] for n in ("dense", "tuned dense", "bm25", "fused")],
                                                     axis=0).mean()), 3)
            out[kind] = row
    return out


def decide(base: dict[str, dict[str, float]], both: dict[str, dict[str, float]],
           check_base: float, check_both: float) -> dict[str, Any]:
    def diff(kind: str) -> float:
        return round(both[kind]["mrr"] - base[kind]["mrr"], 4)

    conditions = {
        f"all queries: MRR at least +{ALL_GAIN}": {"difference": diff("all"), "met": diff("all") >= ALL_GAIN},
        **{f"{kind}: MRR no more than {KIND_LOSS} lower": {"difference": diff(kind), "met": diff(kind) >= -KIND_LOSS}
           for kind in KINDS if kind in base and base[kind]["queries"] >= MIN_KIND},
    }
    check = round(check_both - check_base, 4)
    conditions[f"OpenHands check: MRR no more than {CHECK_LOSS} lower"] = {"difference": check, "met": check >= -CHECK_LOSS}
    return {"conditions": conditions, "worth_building": all(c["met"] for c in conditions.values())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minilm", type=Path, required=True, help="the ranker step of `make train --encoder minilm`")
    ap.add_argument("--tuned", type=Path, required=True, help="the ranker step of `make train --encoder tuned`")
    ap.add_argument("--tuned-encoder", type=Path, required=True, help="that build's encoder-tuned step (its folder)")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    prov = provenance("train.encoder.second_encoder_trial", argv if argv is not None else sys.argv[1:])
    # Each build's memories are opened with the encoder that wrote them (another would re-embed them).
    os.environ.pop("CODEMEM_EMBEDDER", None)
    every, checks, shipped = load_build(args.minilm)
    os.environ["CODEMEM_EMBEDDER"] = str(args.tuned_encoder)
    every_b, checks_b, _ = load_build(args.tuned)
    os.environ.pop("CODEMEM_EMBEDDER", None)
    matched, checks_matched = with_tuned(every, every_b), with_tuned(checks, checks_b)
    featureset.FEATURES = (*featureset.FEATURES, *TUNED)
    featureset.MONOTONE = (*featureset.MONOTONE, 1, 1, 1)

    runs = {"shipped": held_out(every, checks, tuple(shipped)), "with tuned": held_out(every, checks, (*shipped, *TUNED))}
    figures = {name: mrr_by_kind(every, r["oof"]) | {"check: openhands": mrr_by_kind(checks, r["checks"])["all"]}
               for name, r in runs.items()}
    result = {
        "label": "training (out of fold, leave one repository or project out; OpenHands a check, never trained on)",
        "builds": {"minilm": str(args.minilm), "tuned": str(args.tuned), "tuned encoder": str(args.tuned_encoder)},
        "queries": {"minilm": len(every), "tuned": len(every_b), "matched": matched,
                    "checks": len(checks), "checks matched": checks_matched},
        "features": {"shipped": shipped, "added": list(TUNED)},
        "params": {name: r["params"] for name, r in runs.items()},
        "figures": figures,
        "rule": decide(figures["shipped"], figures["with tuned"], figures["shipped"]["check: openhands"]["mrr"],
                       figures["with tuned"]["check: openhands"]["mrr"]),
        "misses of the shipped model": misses(every, runs["shipped"]["oof"]),
        "provenance": finish(prov),
    }
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: result[k] for k in ("figures", "rule", "misses of the shipped model")}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
