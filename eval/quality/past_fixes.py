"""Past fixes (issue 15): a developer pastes a bug report; does memory built from the
repository's history return the change that fixed it near the top?

The dev set is ``../shared/data/past-fixes-dev`` (21 tasks over 5 repositories; its README says
how to fetch the histories and how to score). Each repository's default-branch history is
imported into its own user_id with ``codemem.importers.git.ingest_git`` (what ``codemem ingest-git``
runs), in this process, on a temporary data directory; then each task's problem_statement is
searched in that user_id through ``Memory.search`` (what the HTTP Search runs). An item matches
when a gold SHA, or a 7+ character prefix of one, appears in its content or metadata, as a user
would see it. Side by side, in the same run: plain BM25 (bm25s, default parameters) over each
change's message + diff (the same first-parent changes), a change matching when it is a gold
commit or a merge that brought one in.

    git clone /work/.mirror/BurntSushi+ripgrep/repo /work/pastfixes-repos/ripgrep   # etc.
    python -m eval.quality.past_fixes [--repos /work/pastfixes-repos] [--only ripgrep,caddy]

``--repos DIR`` holds one clone per repository, named by the repository's name (``ripgrep``,
``caddy``, ``lombok``, ``preact``, ``tokio``). ``--store DIR`` keeps the imported memory, one
data directory per repository; a second run on it imports only what is new (which times a
re-import of an unchanged history). ``--jobs N`` imports N repositories at once.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from eval._paths import RESULTS, SHARED_DATA  # noqa: E402
from eval._provenance import provenance, write_result  # noqa: E402

TASKS = SHARED_DATA / "past-fixes-dev" / "tasks.json"
DEFAULT_REPOS = Path("/work/pastfixes-repos")
PREFIX = 7  # a gold SHA's shortest prefix that counts as naming it


def gold_rank(items: list[str], gold: list[str]) -> int | None:
    """1-based position of the first item text naming a gold commit (a 7+ char prefix)."""
    prefixes = [g[:PREFIX].lower() for g in gold]
    for i, text in enumerate(items, 1):
        low = text.lower()
        if any(p in low for p in prefixes):
            return i
    return None


def metrics(ranks: list[int | None]) -> dict[str, float]:
    n = max(len(ranks), 1)
    return {
        "hit@1": round(sum(1 for r in ranks if r == 1) / n, 3),
        "hit@5": round(sum(1 for r in ranks if r is not None and r <= 5) / n, 3),
        "mrr": round(sum(1 / r for r in ranks if r is not None) / n, 3),
        "found": round(sum(1 for r in ranks if r is not None) / n, 3),
    }


def hit_text(hit: Any) -> str:
    """What a user sees of one Search item: its content and its metadata."""
    content = hit.content if isinstance(hit.content, str) else json.dumps(hit.content, default=str)
    return content + "\n" + json.dumps(hit.metadata, default=str)


def bm25_ranks(repo: Path, tasks: list[dict[str, Any]], top_k: int) -> tuple[list[int | None], float]:
    """Plain BM25 over each change's message + (bounded) diff, the changes codemem stores (the
    first-parent line: a merge's diff against its first parent, named by its branch's commits
    too); returns ranks, seconds."""
    import bm25s

    from codemem.git.log import iter_changes

    t0 = time.perf_counter()
    shas: list[str] = []
    docs: list[str] = []
    for rec in iter_changes(str(repo)):
        shas.append(" ".join([rec.sha, *(sha for sha, _ in rec.branch)]))
        docs.append(f"{rec.message}\n{rec.diff}")
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(docs, stopwords="en", show_progress=False), show_progress=False)
    del docs
    ranks: list[int | None] = []
    for task in tasks:
        q = bm25s.tokenize([task["problem_statement"]], stopwords="en", show_progress=False)
        k = min(top_k, len(shas))
        idx, _ = retriever.retrieve(q, k=k, show_progress=False)
        ranks.append(gold_rank([shas[int(i)] for i in idx[0]], task["gold_commits"]))
    return ranks, time.perf_counter() - t0


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_repo(name: str, path: Path, data_dir: Path, tasks: list[dict[str, Any]], top_k: int, bm25: bool,
             env: dict[str, str] | None = None) -> tuple[str, dict[str, Any], list[dict[str, Any]]]:
    """Import one repository into its own data directory and user_id, search its tasks; `env`:
    the service's settings as variables (`CODEMEM_*`), else its defaults."""
    from codemem.config import Settings
    from codemem.contract.types import SearchRequest
    from codemem.importers.git import ingest_git
    from codemem.memory import Memory

    memory = Memory(Settings.from_env(env or {}, overrides={"storage.data_dir": str(data_dir),
                                                           "maintenance.interval_s": 0}))
    rows: list[dict[str, Any]] = []
    try:
        memory.warm_up()
        user_id = f"pastfixes-{name}"
        t0, c0, k0 = time.perf_counter(), time.process_time(), _children_cpu_s()
        report = ingest_git(memory, str(path), user_id, progress=False)
        import_s, cpu_s = time.perf_counter() - t0, time.process_time() - c0
        info = {"commits": report.sources, "added": report.added, "unchanged": report.unchanged,
                "import_s": round(import_s, 1), "import_cpu_s_main_process": round(cpu_s, 1),
                # the converting process and git's (reaped when the import ends)
                "import_cpu_s_children": round(_children_cpu_s() - k0, 1),
                "added_per_s": round(report.added / max(import_s, 1e-9), 1)}
        print(f"{name}: {report.sources} changes, {report.added} added, {report.unchanged} stored before, "
              f"in {import_s:.1f} s ({info['added_per_s']} added/s)", flush=True)
        ranks, bm25_s = bm25_ranks(path, tasks, top_k) if bm25 else ([], 0.0)
        info["bm25_s"] = round(bm25_s, 1)
        for i, task in enumerate(tasks):
            t1 = time.perf_counter()
            hits = memory.search(SearchRequest(user_id=user_id, query=task["problem_statement"], top_k=top_k))
            search_ms = (time.perf_counter() - t1) * 1000
            rank = gold_rank([hit_text(h) for h in hits], task["gold_commits"])
            row = {"instance_id": task["instance_id"], "repo": name, "codemem_rank": rank,
                   "bm25_rank": ranks[i] if ranks else None, "search_ms": round(search_ms),
                   "top_items": [hit_text(h).split("\n", 1)[0][:120] for h in hits[:3]]}
            rows.append(row)
            print(f"  {task['instance_id']}: codemem rank {rank}, bm25 rank {row['bm25_rank']}", flush=True)
    finally:
        memory.close()
    for row, rank in zip(rows, fused_ranks(data_dir, f"pastfixes-{name}", tasks, top_k, env), strict=True):
        row["fused_rank"] = rank
    return name, info, rows


def fused_ranks(data_dir: Path, user_id: str, tasks: list[dict[str, Any]], top_k: int,
                env: dict[str, str] | None = None) -> list[int | None]:
    """Each task's gold rank in the answer of the retired hand-set fusion (`eval/replay/fusion.py`,
    its commit knobs as they shipped), searched over the same imported memory: the baseline
    the relevance model replaced, side by side."""
    from codemem.config import Settings
    from codemem.contract.types import SearchRequest
    from codemem.memory import Memory
    from eval.replay.fusion import FusedRanker, fused_search

    settings = Settings.from_env(env or {}, overrides={"storage.data_dir": str(data_dir), "maintenance.interval_s": 0})
    with Memory(settings, ranker=FusedRanker()) as memory:
        config = fused_search(memory.search_config)
        return [gold_rank([hit_text(h) for h in memory.search(
                    SearchRequest(user_id=user_id, query=task["problem_statement"], top_k=top_k), config)],
                          task["gold_commits"]) for task in tasks]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repos", type=Path, default=DEFAULT_REPOS, help="folder with one clone per repository")
    ap.add_argument("--tasks", type=Path, default=TASKS)
    ap.add_argument("--only", default="", help="comma-separated repository names to run (default: all)")
    ap.add_argument("--top-k", type=int, default=10)
    ap.add_argument("--store", help="keep the imported memory here (one data directory per repository); a "
                    "second run on it imports only what is new, which times a re-import")
    ap.add_argument("--no-bm25", action="store_true")
    ap.add_argument("--jobs", type=int, default=1, help="repositories imported at once (one process each)")
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                    help="a service setting, e.g. CODEMEM_EMBEDDER=tuned (default: the service's defaults)")
    ap.add_argument("--out", type=Path, default=RESULTS / "tmp" / "past_fixes.json")
    args = ap.parse_args(argv)
    if bad := [e for e in args.env if "=" not in e or not e.startswith("CODEMEM_")]:
        ap.error(f"--env takes CODEMEM_NAME=VALUE: {', '.join(bad)}")
    env = dict(e.split("=", 1) for e in args.env)
    prov = provenance("eval.quality.past_fixes", argv)

    tasks = json.loads(args.tasks.read_text())
    only = {s for s in args.only.split(",") if s}
    by_repo: dict[str, list[dict[str, Any]]] = {}
    for task in tasks:
        name = task["repo"].split("/")[1]
        if not only or name in only:
            by_repo.setdefault(name, []).append(task)
    for name, repo_tasks in by_repo.items():
        path = args.repos / name
        if not (path / ".git").exists() and not (path / "HEAD").exists():
            raise SystemExit(f"no clone of {repo_tasks[0]['repo']} at {path} (see eval/quality/past_fixes.py's docstring)")

    done: list[tuple[str, dict[str, Any], list[dict[str, Any]]]] = []
    with tempfile.TemporaryDirectory(prefix="codemem-pastfixes-") as tmp:
        store = Path(args.store or tmp)
        jobs = [(name, args.repos / name, store / name, repo_tasks, args.top_k, not args.no_bm25, env)
                for name, repo_tasks in sorted(by_repo.items())]
        if args.jobs > 1:
            with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
                for future in as_completed([pool.submit(run_repo, *job) for job in jobs]):
                    done.append(future.result())
                    save_result(args, prov, done, complete=len(done) == len(jobs))
        else:
            for job in jobs:
                done.append(run_repo(*job))
                save_result(args, prov, done, complete=len(done) == len(jobs))
    return 0


def save_result(args: argparse.Namespace, prov: dict[str, object],
                done: list[tuple[str, dict[str, Any], list[dict[str, Any]]]], complete: bool) -> None:
    """The result so far (written after each repository, so a long run leaves its figures)."""
    per_repo = {name: info for name, info, _ in sorted(done)}
    per_task = [row for _, _, rows in sorted(done) for row in rows]
    summary = {"codemem": metrics([r["codemem_rank"] for r in per_task]),
               "fused": metrics([r["fused_rank"] for r in per_task])}
    if not args.no_bm25:
        summary["bm25_message_diff"] = metrics([r["bm25_rank"] for r in per_task])
    by_name: dict[str, dict[str, Any]] = {}
    for name in per_repo:
        rows = [r for r in per_task if r["repo"] == name]
        by_name[name] = {"codemem": metrics([r["codemem_rank"] for r in rows]),
                         "fused": metrics([r["fused_rank"] for r in rows]),
                         **({} if args.no_bm25 else {"bm25": metrics([r["bm25_rank"] for r in rows])})}
    result = {"complete": complete, "tasks": len(per_task), "top_k": args.top_k,
              "figure_kind": ("validation: the relevance model was trained on public past-fix tasks of 17 other "
                              "histories (train/past_fixes, train/ranker); the fused baseline's commit rankings were "
                              "designed on these tasks"),
              "summary": summary, "per_repo_scores": by_name, "repos": per_repo, "per_task": per_task}
    print(json.dumps(summary, indent=1), flush=True)
    write_result(args.out, result, prov)
    print(f"wrote {args.out}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
