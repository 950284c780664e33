"""How far can fusing the relevance signals we have go? An upper bound for the replay's
noisy-all condition (62 labelled tasks, all 300 trajectories in memory).

    python -m eval.replay.ceiling                      # after `python -m eval.replay` (reads its JSON)

Each signal ranks the 300 trajectories for each task's problem_statement, independently of
codemem's code (eval's own BM25 and MiniLM, as in the replay's baselines):

- `bm25-traj`: BM25 over whole trajectories; `bm25-msg`: a trajectory's best message;
- `dense-chunk`: a trajectory's best ~256-token chunk (MiniLM; the replay's cached vectors);
- `task-task`: MiniLM cosine between the task text and each trajectory's first request;
- `codemem`: the service's own ranking, read from the replay's JSON (its first 10 items).

Weighted reciprocal-rank fusion of all five, with the weights and k searched on the very
tasks it is scored on, is an optimistic ceiling for any fusion of these signals; choosing
them on django's tasks and scoring on sympy's (and back) shows what survives out of sample.
The label audit lists the tasks whose first answer is an experience of an issue with the
query's own title: a miss by the labels, the same bug to a reader. Writes
`eval/results/ceiling.json` and `.md`.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from eval._paths import RESULTS
from eval._provenance import header as provenance_header
from eval._provenance import provenance, write_result
from eval.replay.baselines import DenseChunks, Tokenizer, message_index, trajectory_index
from eval.replay.data import DEFAULT_DATA, Task, Trajectory, iter_trajectories, load_tasks
from eval.replay.run import DEFAULT_CACHE

Ranking = list[str]  # trajectory ids, best first
WEIGHTS = (0.0, 0.5, 1.0, 2.0)
RRF_KS = (1, 3, 10)
DEPTH = 100


@dataclass(frozen=True)
class Figures:
    hit1: float
    hit5: float
    mrr: float


def figures(rankings: Sequence[Ranking], tasks: Sequence[Task]) -> Figures:
    ranks = [next((i for i, s in enumerate(r, 1) if s in t.gold), None) for r, t in zip(rankings, tasks, strict=True)]
    n = len(ranks) or 1
    return Figures(round(sum(r == 1 for r in ranks) / n, 3), round(sum(r is not None and r <= 5 for r in ranks) / n, 3),
                   round(sum(1 / r for r in ranks if r) / n, 3))


def sessions_of(session_ids: Sequence[str]) -> Ranking:
    """Distinct trajectories in order of their first appearance."""
    return list(dict.fromkeys(session_ids))


def fuse(lists: dict[str, Ranking], weights: dict[str, float], k: int) -> Ranking:
    score: dict[str, float] = {}
    for name, ranking in lists.items():
        w = weights.get(name, 0.0)
        if w:
            for r, s in enumerate(ranking[:DEPTH], 1):
                score[s] = score.get(s, 0.0) + w / (k + r)
    return sorted(score, key=lambda s: score[s], reverse=True)


def search_weights(per_task: Sequence[dict[str, Ranking]], tasks: Sequence[Task],
                   names: Sequence[str]) -> tuple[dict[str, float], int, Figures]:
    """The weights and k with the best MRR (then hit@1) on `tasks`."""
    best: tuple[tuple[float, float], dict[str, float], int, Figures] | None = None
    for combo in itertools.product(WEIGHTS, repeat=len(names)):
        if not any(combo):
            continue
        weights = dict(zip(names, combo, strict=True))
        for k in RRF_KS:
            f = figures([fuse(lists, weights, k) for lists in per_task], tasks)
            if best is None or (f.mrr, f.hit1) > best[0]:
                best = ((f.mrr, f.hit1), weights, k, f)
    assert best is not None
    return best[1], best[2], best[3]


def first_request(traj: Trajectory) -> str:
    """The task a trajectory solved: its first substantial user message."""
    return next((m.content for m in traj.messages if m.role == "user" and len(m.content) > 100),
                traj.messages[0].content if traj.messages else "")


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w]+", " ", text.lower()).split())


def same_issue(query: str, traj: Trajectory) -> bool:
    """The trajectory's task carries the query's title (its first line, 20+ characters)."""
    title = _norm(query.strip().splitlines()[0] if query.strip() else "")
    return len(title) >= 20 and title in _norm(first_request(traj))


def signal_rankings(tasks: Sequence[Task], trajs: Sequence[Trajectory], cache: Path,
                    codemem: dict[str, Ranking]) -> list[dict[str, Ranking]]:
    tok = Tokenizer()
    by_traj, by_msg = trajectory_index(trajs, tok), message_index(trajs, tok)
    dense = DenseChunks(trajs, cache)
    ids = [t.instance_id for t in trajs]
    requests = dense.embed([first_request(t) for t in trajs])
    out = []
    for task in tasks:
        qvec = dense.query_vector(task.query)
        cos = requests @ qvec
        out.append({
            "bm25-traj": sessions_of([i.session_id for i in by_traj.search(tok(task.query), DEPTH)]),
            "bm25-msg": sessions_of([i.session_id for i in by_msg.search(tok(task.query), 2000)]),
            "dense-chunk": sessions_of([i.session_id for i in dense.search(qvec, ids, 2000)]),
            "task-task": [ids[j] for j in np.argsort(-cos, kind="stable")[:DEPTH]],
            "codemem": codemem.get(task.instance_id, []),
        })
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument("--replay", type=Path, default=RESULTS / "replay.json",
                   help="a replay JSON whose noisy-all codemem rankings join the fusion")
    p.add_argument("--cache", type=Path, default=DEFAULT_CACHE / "dense-default-minilm-256.npz")
    p.add_argument("--out", type=Path, default=RESULTS / "ceiling")
    args = p.parse_args(argv)
    prov = provenance("eval.replay.ceiling", argv)

    tasks = load_tasks(args.data)
    trajs = list(iter_trajectories(args.data, "default"))
    replay = json.loads(args.replay.read_text())
    codemem = {r["task"]: sessions_of(r["top_sessions"]) for r in replay["codemem_raw"] if r["condition"] == "noisy-all"}
    per_task = signal_rankings(tasks, trajs, args.cache, codemem)
    names = list(per_task[0])
    single = {n: figures([lists[n] for lists in per_task], tasks) for n in names}
    weights, k, in_sample = search_weights(per_task, tasks, names)

    held_out: list[Ranking] = []
    held_tasks: list[Task] = []
    splits: list[dict[str, Any]] = []
    repos = sorted({t.repo for t in tasks})
    for test_repo in repos:
        train = [i for i, t in enumerate(tasks) if t.repo != test_repo]
        test = [i for i, t in enumerate(tasks) if t.repo == test_repo]
        w, kk, f = search_weights([per_task[i] for i in train], [tasks[i] for i in train], names)
        held_out += [fuse(per_task[i], w, kk) for i in test]
        held_tasks += [tasks[i] for i in test]
        splits.append({"test_repo": test_repo, "weights": w, "k": kk, "train": asdict(f),
                       "test": asdict(figures(held_out[-len(test):], [tasks[i] for i in test]))})
    out_of_sample = figures(held_out, held_tasks)

    traj_by_id = {t.instance_id: t for t in trajs}
    audit = []
    for task, lists in zip(tasks, per_task, strict=True):
        top = lists["codemem"][0] if lists["codemem"] else None
        if top and top not in task.gold and same_issue(task.query, traj_by_id[top]):
            audit.append({"task": task.instance_id, "first": top, "gold": sorted(task.gold)})

    result = {
        "run": {"tasks": len(tasks), "trajectories": len(trajs), "replay": str(args.replay),
                "replay_provenance": replay.get("provenance") or replay.get("run", {}).get("git_head")},
        "signals": {n: asdict(f) for n, f in single.items()},
        "fusion_in_sample": {"weights": weights, "k": k, **asdict(in_sample)},
        "fusion_held_out_by_repo": {**asdict(out_of_sample), "splits": splits},
        "same_issue_misses": audit,
    }
    out = write_result(args.out.with_suffix(".json"), result, prov, indent=1,
                       markdown=lambda r: report(r, single, in_sample, out_of_sample, audit, len(tasks)))
    print(out.with_suffix(".md").read_text())
    return 0


def report(result: dict[str, Any], single: dict[str, Figures], in_sample: Figures, held: Figures,
           audit: list[dict[str, Any]], n: int) -> str:
    fusion = result["fusion_in_sample"]
    lines = [
        "# Fusion ceiling (noisy-all, links_dev.json)", "",
        f"{provenance_header(result['provenance'])}; {n} labelled tasks, all {result['run']['trajectories']} "
        "trajectories in memory.", "",
        f"`{result['provenance']['command']}` (after `python -m eval.replay`)", "",
        "| ranking | hit@1 | hit@5 | MRR |", "|---|---:|---:|---:|",
    ]
    lines += [f"| {name} | {f.hit1:.2f} | {f.hit5:.2f} | {f.mrr:.3f} |" for name, f in single.items()]
    lines += [
        f"| fusion, weights searched on these tasks (k={fusion['k']}, {fusion['weights']}) | "
        f"{in_sample.hit1:.2f} | {in_sample.hit5:.2f} | {in_sample.mrr:.3f} |",
        f"| fusion, weights searched on the other repository | {held.hit1:.2f} | {held.hit5:.2f} | {held.mrr:.3f} |",
        "", f"Tasks whose first answer is an experience of an issue with the task's own title, not labelled gold: "
        f"{len(audit)} of {n}" + (": " + ", ".join(f"{a['task']} -> {a['first']}" for a in audit) if audit else "."),
        "", "hit@k and MRR at trajectory level; weights from "
        f"{{{', '.join(str(w) for w in WEIGHTS)}}} per signal, k from {{{', '.join(str(k) for k in RRF_KS)}}}.",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
