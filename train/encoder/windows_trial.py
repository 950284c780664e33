"""Which parts of an experience to embed besides its task: a dense-only screen on the
training data (issue 55, item 3).

Until this screen a card's one vector read the task alone (`codemem/writing/derived_rows.py`).
It embeds a few windows of each card as it is stored (its rendered sections) and ranks
each training query's candidates by the dense signal alone, scoring a candidate by the best
of its windows (or by one vector, their mean). Nothing is fitted: every figure is the plain
cosine of the packaged MiniLM, so the screen needs no folds; what it decides is which
windows are worth carrying into a `make train` run, where the relevance model's
leave-one-repository-out folds decide whether they ship.

The data (the training cache of `make train`, never an evaluation set):
- agent sessions: the labelled queries of the `replay-mini` and `replay-vorflux` steps, each
  ranked against its whole memory (about 200 experiences), cards as the replay rendered them;
- commits: the labelled bug reports of the `commits` step, each ranked against the candidates
  its Search assembled (the lexical and dense retrievers' first 30 each, the references'),
  cards read from the `pastfix` step's stores.

The rule, written before the first score: a window set is worth a `make train` run when it
lifts dense-only MRR over the task alone by at least 0.01 on the sessions and on the commits
alike; among those, the set with the highest mean of the two MRRs, preferring fewer vectors
(the ingest cost) within 0.005 of it.

    python -m train.encoder.windows_trial --cache ~/.cache/codemem-train --out eval/results/windows-trial.json
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from codemem.encoders import Embedder, make_embedder
from codemem.experience.building.render import CODE_SECTIONS, card_sections, code_window
from eval._provenance import finish, provenance
from eval.replay.metrics import hit_at, reciprocal_rank

TASK_TOKENS = {"session": 256, "commit": 64}  # what a card's vector reads today, per kind
WINDOW_TOKENS = 128
QUERY_TOKENS = 64
POOL = 30  # each retriever's first candidates a commit query is ranked among

# A window: the card sections it reads (the rendered card's "## " headings); "code" is the
# code window the service embeds (`render.code_window`).
WINDOWS: dict[str, tuple[str, ...]] = {
    "task": ("Task",),
    "reason": ("Outcome", "Root cause"),
    "code": CODE_SECTIONS,
}
# A variant: the vectors a candidate keeps ("card": its whole text, read to 256 tokens,
# "card128" to 128); "mean:" one vector, the normalised mean of the windows named.
VARIANTS: dict[str, tuple[str, ...]] = {
    "task (today)": ("task",),
    "card": ("card",),
    "task+card": ("task", "card"),
    "task+card128": ("task", "card128"),
    "task+code": ("task", "code"),
    "task+reason": ("task", "reason"),
    "task+code+reason": ("task", "code", "reason"),
    "mean:task+code+reason": ("task", "code", "reason"),
}

def window_texts(card: str) -> dict[str, str]:
    """Each window's text ("" where the card has none of its sections), and the whole card."""
    parts = dict(card_sections(card))
    out = {name: "\n".join(f"{h}: {parts[h]}" if h != "Task" else parts[h] for h in heads if parts.get(h))
           for name, heads in WINDOWS.items()}
    assert out["code"] == code_window(card)
    out["card"] = card
    return out


def _latest(cache: Path, step: str) -> Path:
    done = [p.parent for p in (cache / step).glob("*/step.json")]
    if not done:
        sys.exit(f"no finished {step} step under {cache}: run make train first")
    return max(done, key=lambda p: (p / "step.json").stat().st_mtime)


def session_queries(cache: Path) -> list[dict]:
    """The replays' labelled queries, each with its memory's cards."""
    out = []
    for step, run in (("replay-mini", "mini"), ("replay-vorflux", "vorflux")):
        folder = _latest(cache, step) / run
        cards = {c["id"]: c["text"] for c in map(json.loads, (folder / "cards.jsonl").open())}
        for q in map(json.loads, (folder / "queries.jsonl").open()):
            if q["labels"]:
                pool = [m for m in q["memory"] if m in cards]
                out.append({"kind": "session", "source": run, "repo": q["repo"].split("/")[1], "text": q["text"],
                            "labels": {f"{run}:{m}": v for m, v in q["labels"].items()},
                            "pool": {f"{run}:{m}": cards[m] for m in pool}})
    return out


def commit_queries(cache: Path) -> list[dict]:
    """The labelled reports of the commits step, each with its candidates' cards."""
    import lancedb

    folder = _latest(cache, "commits")
    argv = json.loads((folder / "step.json").read_text())["argv"]
    store = Path(argv[argv.index("--store") + 1])
    queries = [q for q in map(json.loads, (folder / "queries.jsonl").open()) if q["labels"]]
    out = []
    by_repo: dict[str, list[dict]] = {}
    for q in queries:
        by_repo.setdefault(q["repo"].split("/")[1], []).append(q)
    for repo, qs in sorted(by_repo.items()):
        if not (store / repo).is_dir():
            continue
        pools = {}
        for q in qs:
            ranks = q["signals"]["ranks"]
            pool = {s for name in ("lexical", "dense") for s, r in ranks[name].items() if r <= POOL}
            pools[q["query"]] = pool | set(ranks["refs"]) | set(q["labels"])
        wanted = sorted(set().union(*pools.values()))
        table = lancedb.connect(str(store / repo)).open_table("items")
        cards: dict[str, str] = {}
        for start in range(0, len(wanted), 500):
            ids = ", ".join(f"'git:{s}'" for s in wanted[start: start + 500])
            for r in table.search().where(f"kind = 'card' AND session_id IN ({ids})").select(
                    ["session_id", "text"]).limit(None).to_list():
                cards[r["session_id"].removeprefix("git:")] = r["text"]
        for q in qs:
            held = {f"{repo}:{s}": cards[s] for s in pools[q["query"]] if s in cards}
            out.append({"kind": "commit", "source": repo, "repo": repo, "text": q["text"],
                        "labels": {f"{repo}:{s}": v for s, v in q["labels"].items()}, "pool": held})
    return out


class Embeds(Protocol):
    """What the screens embed with: the service's encoder, or a trial's."""

    def embed(self, texts: list[str], max_tokens: int) -> np.ndarray: ...


def _embed(embedder: Embeds, texts: Iterable[str], max_tokens: int,
           kept: dict[tuple[int, str], np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """Each text's vector at `max_tokens`; `kept` holds vectors of earlier runs (and gets these)."""
    kept = {} if kept is None else kept
    unique = sorted({t for t in texts if t})
    missing = [t for t in unique if (max_tokens, t) not in kept]
    if missing:
        kept.update(zip(((max_tokens, t) for t in missing), embedder.embed(missing, max_tokens), strict=True))
    return {t: kept[(max_tokens, t)] for t in unique}


@dataclass(frozen=True)
class CandidateVectors:
    """The product's two vectors of each candidate (its task's and its code window's, by
    candidate id; None where it shows no change) and each query's vector (by its text)."""

    task: Callable[[str], np.ndarray]
    code: Callable[[str], np.ndarray | None]
    query: dict[str, np.ndarray]


def candidate_vectors(queries: list[dict], embedder: Embeds,
                      kept: dict[tuple[int, str], np.ndarray] | None = None) -> CandidateVectors:
    """Every candidate's vectors and every query's, read as the service reads them."""
    cards = {cid: text for q in queries for cid, text in q["pool"].items()}
    kinds = {cid: q["kind"] for q in queries for cid in q["pool"]}
    windows = {cid: window_texts(text) for cid, text in cards.items()}
    task = {kind: _embed(embedder, (w["task"] or w["card"] for c, w in windows.items() if kinds[c] == kind), tokens, kept)
            for kind, tokens in TASK_TOKENS.items()}
    code = _embed(embedder, (w["code"] for w in windows.values()), WINDOW_TOKENS, kept)
    return CandidateVectors(lambda cid: task[kinds[cid]][windows[cid]["task"] or windows[cid]["card"]],
                            lambda cid: code.get(windows[cid]["code"]),
                            _embed(embedder, (q["text"] for q in queries), QUERY_TOKENS, kept))


def _load_kept(path: Path | None) -> dict[tuple[int, str], np.ndarray]:
    if path is None or not path.is_file():
        return {}
    with path.open("rb") as f:
        return pickle.load(f)  # noqa: S301 - our own cache file


def score(queries: list[dict], embedder: Embedder,
          kept: dict[tuple[int, str], np.ndarray] | None = None) -> dict[str, dict[str, dict[str, float]]]:
    """Dense-only hit@1, hit@5 and MRR of every variant, per kind of query (`kept`: vectors
    of earlier runs, by token cap and text)."""
    cards = {cid: text for q in queries for cid, text in q["pool"].items()}
    kinds = {cid: q["kind"] for q in queries for cid in q["pool"]}
    windows = {cid: window_texts(text) for cid, text in cards.items()}
    started = time.monotonic()
    vec: dict[tuple[str, int], dict[str, np.ndarray]] = {}
    for kind, tokens in TASK_TOKENS.items():
        vec[("task", tokens)] = _embed(embedder, (w["task"] or w["card"] for c, w in windows.items() if kinds[c] == kind),
                                       tokens, kept)
    vec[("card", 256)] = _embed(embedder, (w["card"] for w in windows.values()), 256, kept)
    vec[("card", 128)] = _embed(embedder, (w["card"] for w in windows.values()), 128, kept)
    vec[("window", WINDOW_TOKENS)] = _embed(
        embedder, (w[name] for w in windows.values() for name in ("reason", "code")), WINDOW_TOKENS, kept)
    embedded = sum(len(v) for v in vec.values())
    print(f"embedded {embedded} texts in {time.monotonic() - started:.0f} s", file=sys.stderr)
    qvec = _embed(embedder, (q["text"] for q in queries), QUERY_TOKENS, kept)

    def vectors(cid: str, names: tuple[str, ...]) -> list[np.ndarray]:
        w = windows[cid]
        out = []
        for name in names:
            if name == "task":
                out.append(vec[("task", TASK_TOKENS[kinds[cid]])][w["task"] or w["card"]])
            elif name in ("card", "card128"):
                out.append(vec[("card", 256 if name == "card" else 128)][w["card"]])
            elif w[name]:
                out.append(vec[("window", WINDOW_TOKENS)][w[name]])
        return out

    results: dict[str, dict[str, dict[str, float]]] = {}
    for variant, names in VARIANTS.items():
        per_kind: dict[str, list[int | None]] = {}
        for q in queries:
            qv = qvec[q["text"]]
            scored = []
            for cid in q["pool"]:
                vs = vectors(cid, names)
                if variant.startswith("mean:"):
                    m = np.mean(vs, axis=0)
                    s = float(m @ qv / (np.linalg.norm(m) or 1.0))
                else:
                    s = max(float(v @ qv) for v in vs)
                scored.append((s, cid))
            per_kind.setdefault(q["kind"], []).append(related_rank(scored, q["labels"]))
        results[variant] = figures(per_kind)
        print(variant, results[variant], file=sys.stderr)
    return results


def related_rank(scored: list[tuple[float, str]], labels: Mapping[str, object]) -> int | None:
    """The 1-based rank of the first related candidate of (score, id) pairs, best first, ties
    by id (None: none is related)."""
    order = [cid for _, cid in sorted(scored, key=lambda t: (-t[0], t[1]))]
    return next((i for i, cid in enumerate(order, 1) if cid in labels), None)


def figures(ranks: Mapping[str, list[int | None]]) -> dict[str, dict[str, float]]:
    """hit@1, hit@5 and MRR per kind of query, from each query's `related_rank`."""
    return {kind: {"queries": len(r), "hit@1": round(float(np.mean([hit_at(x, 1) for x in r])), 4),
                   "hit@5": round(float(np.mean([hit_at(x, 5) for x in r])), 4),
                   "mrr": round(float(np.mean([reciprocal_rank(x) for x in r])), 4)}
            for kind, r in ranks.items()}


def choose(results: dict[str, dict[str, dict[str, float]]]) -> str:
    """The rule of the module's docstring."""
    base = results["task (today)"]
    worth = {v: (r["session"]["mrr"] + r["commit"]["mrr"]) / 2 for v, r in results.items()
             if v != "task (today)" and all(r[k]["mrr"] - base[k]["mrr"] >= 0.01 for k in ("session", "commit"))}
    if not worth:
        return "task (today)"
    best = max(worth.values())
    near = [v for v, m in worth.items() if m >= best - 0.005]
    return min(near, key=lambda v: (1 if v.startswith("mean:") else len(VARIANTS[v]), -worth[v]))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "codemem-train")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--vectors", type=Path, help="a file keeping the vectors between runs")
    args = parser.parse_args(argv)
    prov = provenance("train.encoder.windows_trial", argv)
    embedder = make_embedder("minilm", 2)
    embedder.warm()
    queries = session_queries(args.cache) + commit_queries(args.cache)
    kept = _load_kept(args.vectors)
    results = score(queries, embedder, kept)
    if args.vectors is not None:
        with args.vectors.open("wb") as f:
            pickle.dump(kept, f)
    chosen = choose(results)
    args.out.write_text(json.dumps({
        "provenance": finish(prov),
        "rule": "lift dense-only MRR over the task alone by >= 0.01 on sessions and commits alike; "
                "then the highest mean MRR, fewer vectors within 0.005",
        "data": {"sessions": sum(q["kind"] == "session" for q in queries),
                 "commits": sum(q["kind"] == "commit" for q in queries)},
        "tokens": {"task": TASK_TOKENS, "window": WINDOW_TOKENS, "query": QUERY_TOKENS},
        "results": results, "chosen": chosen,
    }, indent=1) + "\n")
    print("chosen:", chosen)


if __name__ == "__main__":
    main()
