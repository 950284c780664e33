"""Retrieval replay of SWE-ContextBench Lite through the real HTTP service, with baselines.

    python -m eval.replay                                   # everything (about an hour on 2 cores)
    python -m eval.replay --smoke                           # 3 tasks, 7 trajectories: a few minutes
    python -m eval.replay --smoke --tasks 1 --others 2 --baselines bm25-traj,bm25-msg   # the CI smoke test
    python -m eval.replay --rendering plain --chunk 10 --keep /tmp/replay-plain
    python -m eval.replay --reuse /tmp/replay-plain --conditions noisy-all,absent

Every trajectory is rendered by eval's own renderer (`--rendering`: default = tool calls as
JSON, plain = prose without JSON, noreasoning = default without thinking blocks) and Added in
chunks of `--chunk` messages, one session_id per trajectory (its instance_id), `--concurrency`
sessions at a time, each session's chunks in order. Each condition is its own user_id in one
server: `relevant:<task>` (only the task's gold trajectories), `repo:<repo>` (noisy-repo: all
trajectories of the task's repository), `all` (noisy-all: all 300) and `absent` (all minus the
gold of every labelled task). Each labelled task's problem_statement is searched (top_k 100)
in each condition; the same corpora are searched in-process by three baselines (BM25 over
trajectories, BM25 over messages, MiniLM over ~256-token chunks) and all are scored by the
same code at trajectory level (each answer reduced to its distinct session_ids: hit@k, MRR and
"found" count trajectories, not items). codemem's latency is Search over HTTP measured by the
client; the baselines' is their query in this process: the report labels the two. Writes
`<out>.json` (raw figures and the run's provenance), `<out>.md` (table) and `<out>.png` (plot).
The plan, the manifest and the ingest are in `eval/replay/ingest.py`.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx
import msgspec

from codemem.config import Settings
from codemem.contract.types import SearchRequest
from codemem.memory import Memory
from eval._paths import RESULTS
from eval._provenance import header as provenance_header
from eval._provenance import provenance, write_result
from eval._server import Server, post_retrying, running_server, shield_from_stray_sigterm
from eval.replay.baselines import (
    BASELINES,
    Bm25Index,
    DenseChunks,
    Tokenizer,
    message_index,
    trajectory_index,
)
from eval.replay.data import (
    CONDITION_KINDS,
    DEFAULT_DATA,
    RENDERINGS,
    Task,
    parse_kinds,
)
from eval.replay.fusion import FusedRanker, fused_search
from eval.replay.ingest import (
    MANIFEST,
    IngestReport,
    Plan,
    check_reusable,
    ingest,
    log,
    make_plan,
    manifest_for,
    wait_settled,
)
from eval.replay.metrics import (
    TOKEN_NOTE,
    Item,
    QueryScore,
    Summary,
    count_tokens,
    score_query,
    summarize_all,
)
from eval.replay.report import LEGEND, latency_kind, markdown, plot, text_table

DEFAULT_CACHE = RESULTS / "tmp" / "replay-cache"  # gitignored
TOP_K = 100


# -- codemem searches -------------------------------------------------------------------------

@dataclass
class ContractCheck:
    """Oddities seen in Search responses (reported, not fixed)."""

    over_top_k: int = 0
    missing_id_or_content: int = 0
    missing_session_id: int = 0
    duplicate_ids: int = 0
    scores_not_descending: int = 0
    http_errors: list[str] = field(default_factory=list)

    def notes(self) -> list[str]:
        out = [f"{v} responses with {k.replace('_', ' ')}" for k, v in asdict(self).items() if isinstance(v, int) and v]
        if self.http_errors:
            out.append(f"{len(self.http_errors)} Search errors, first: {self.http_errors[0]}")
        return out

    def check(self, data: list[dict[str, Any]]) -> None:
        self.over_top_k += len(data) > TOP_K
        self.missing_id_or_content += any(not h.get("id") or not h.get("content") for h in data)
        self.missing_session_id += any(not h.get("session_id") for h in data)
        self.duplicate_ids += len({h.get("id") for h in data}) != len(data)
        scores = [h.get("score") for h in data if isinstance(h.get("score"), int | float)]
        self.scores_not_descending += any(a < b for a, b in zip(scores, scores[1:], strict=False))  # type: ignore[operator]


def search_codemem(srv: Server, plan: Plan, check: ContractCheck, system: str = "codemem",
                   warmup: int = 3) -> tuple[list[QueryScore], list[dict]]:
    """Every task in every condition, sequentially, timed end to end; also the top sessions
    of each answer (raw, for the JSON)."""
    scores, raw = [], []
    tasks = plan.task_by_id
    with httpx.Client(timeout=300.0, trust_env=False) as client:
        for i in range(warmup):
            c = plan.conditions[i % len(plan.conditions)]
            post_retrying(client, srv, "/search", {"user_id": c.user_id, "query": tasks[c.tasks[0]].query, "top_k": TOP_K})
        for c in plan.conditions:
            for tid in c.tasks:
                task = tasks[tid]
                r, dt = post_retrying(client, srv, "/search", {"user_id": c.user_id, "query": task.query, "top_k": TOP_K})
                if r.status_code != 200:
                    check.http_errors.append(f"{c.user_id} {tid}: HTTP {r.status_code} {r.text[:200]}")
                    data: list[dict] = []
                else:
                    data = r.json().get("data", [])
                    check.check(data)
                items = [Item(str(h.get("session_id", "")), count_tokens(h.get("content"))) for h in data]
                gold = task.gold if c.kind != "absent" else frozenset()
                scores.append(score_query(system, c.kind, tid, items, gold, dt * 1000, plan.same_file.get(tid, frozenset())))
                raw.append({"system": system, "condition": c.kind, "user_id": c.user_id, "task": tid,
                            "top_sessions": [h.get("session_id") for h in data[:10]],
                            "top_tokens": [round(it.tokens) for it in items[:10]],
                            "top_kinds": [(h.get("metadata") or {}).get("kind") for h in data[:10]]})
    return scores, raw


# -- baselines --------------------------------------------------------------------------------

FUSED = "fused"  # codemem's Search with the retired hand-set fusion in place of the model, in-process


def search_fused(data_dir: Path, plan: Plan) -> list[QueryScore]:
    """Every task in every condition searched in-process over the server's store, the
    candidates ordered by the hand-set fusion (`eval/replay/fusion.py`) and answered with its
    floor and quiet threshold, the answer's shape the product's; scored like codemem."""
    scores = []
    tasks = plan.task_by_id
    settings = Settings.from_env({}, overrides={"storage.data_dir": str(data_dir), "maintenance.interval_s": 0})
    with Memory(settings, ranker=FusedRanker()) as memory:
        memory.warm_up()
        config = fused_search(memory.search_config)
        for c in plan.conditions:
            for tid in c.tasks:
                t0 = time.perf_counter()
                hits = memory.search(SearchRequest(user_id=c.user_id, query=tasks[tid].query, top_k=TOP_K), config)
                dt = (time.perf_counter() - t0) * 1000
                items = [Item(h.session_id, count_tokens(h.content)) for h in hits]
                gold = tasks[tid].gold if c.kind != "absent" else frozenset()
                scores.append(score_query(FUSED, c.kind, tid, items, gold, dt, plan.same_file.get(tid, frozenset())))
    return scores


def lexical(index: Bm25Index, tok: Tokenizer, tasks: dict[str, Task]) -> Callable[[str], list[Item]]:
    """A BM25 baseline's search of one task's query."""
    return lambda tid: index.search(tok(tasks[tid].query), TOP_K)


def semantic(dense: DenseChunks, sessions: Sequence[str], tasks: dict[str, Task]) -> Callable[[str], list[Item]]:
    """The dense baseline's search of one task's query within one memory's sessions."""
    return lambda tid: dense.search(dense.query_vector(tasks[tid].query), sessions, TOP_K)


def run_baselines(plan: Plan, systems: Sequence[str], cache_file: Path) -> tuple[list[QueryScore], dict[str, Any]]:
    """The in-process baselines over each condition's own corpus, scored like codemem."""
    scores: list[QueryScore] = []
    info: dict[str, Any] = {}
    tasks = plan.task_by_id
    tok = Tokenizer()
    dense = None
    if "dense-chunk" in systems:
        dense = DenseChunks([plan.trajectories[i] for i in sorted(plan.trajectories)], cache_file, log)
        dense.query_vector("warm up")
        info["dense"] = {"chunks": len(dense.docs), "cached_chunks": dense.cached, "embed_s": round(dense.embed_s, 1),
                         "cache": str(cache_file)}
    for c in plan.conditions:
        trajs = [plan.trajectories[i] for i in c.trajectories]
        indexes: dict[str, Callable[[str], list[Item]]] = {}
        if "bm25-traj" in systems:
            indexes["bm25-traj"] = lexical(trajectory_index(trajs, tok), tok, tasks)
        if "bm25-msg" in systems:
            indexes["bm25-msg"] = lexical(message_index(trajs, tok), tok, tasks)
        if dense is not None:
            indexes["dense-chunk"] = semantic(dense, c.trajectories, tasks)
        for name, search in indexes.items():
            for tid in c.tasks:
                t0 = time.perf_counter()
                items = search(tid)
                dt = (time.perf_counter() - t0) * 1000
                gold = tasks[tid].gold if c.kind != "absent" else frozenset()
                scores.append(score_query(name, c.kind, tid, items, gold, dt, plan.same_file.get(tid, frozenset())))
        if len(plan.conditions) < 20 or c.kind != "relevant":
            log(f"  baselines done for {c.user_id} ({len(trajs)} trajectories)")
    return scores, info


# -- run conditions and output ----------------------------------------------------------------

SCORING = ("trajectory level for every system: each answer reduced to its distinct session_ids in order of first "
           "appearance; hit@k, MRR and found count gold trajectories; latency: codemem over HTTP (client-measured), "
           "baselines in-process")


def run_info(args: argparse.Namespace, plan: Plan) -> dict[str, Any]:
    return {
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "tasks": len(plan.tasks), "trajectories": len(plan.trajectories),
        "user_ids": {c.kind: sum(1 for x in plan.conditions if x.kind == c.kind) for c in plan.conditions},
        "top_k": TOP_K, "token_note": TOKEN_NOTE, "scoring": SCORING,
        "latency_measured": {"codemem": latency_kind("codemem"), "baselines": latency_kind("baseline")},
    }


def write_outputs(out: Path, result: dict[str, Any], prov: dict[str, Any], summaries: list[Summary],
                  notes: list[str]) -> None:
    def header(r: dict[str, Any]) -> str:
        info = r["run"]
        return (f"{provenance_header(r['provenance'])}; "
                f"{info['tasks']} labelled tasks, {info['trajectories']} trajectories; "
                f"rendering {info['args']['rendering']}, {info['args']['chunk']}-message Adds.")

    write_result(Path(f"{out}.json"), result, prov, indent=1,
                 markdown=lambda r: markdown(summaries, str(r["provenance"]["command"]), header(r), notes))
    plot(summaries, Path(f"{out}.png"), f"Retrieval replay, SWE-ContextBench Lite\n{header(result)}")


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m eval.replay", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the swe-contextbench-lite folder")
    p.add_argument("--rendering", choices=RENDERINGS, default="default")
    p.add_argument("--chunk", type=int, default=34, help="messages per Add")
    p.add_argument("--concurrency", type=int, default=8, help="sessions Added at a time")
    p.add_argument("--conditions", default=",".join(CONDITION_KINDS),
                   help=f"comma-separated subset of {','.join(CONDITION_KINDS)} (repo/all accepted)")
    p.add_argument("--tasks", type=int, default=None, help="only the first N labelled tasks")
    p.add_argument("--smoke", action="store_true",
                   help="3 tasks (or --tasks N), their gold trajectories and 4 others (or --others N)")
    p.add_argument("--others", type=int, default=4, help="--smoke: non-gold trajectories of the tasks' repositories")
    p.add_argument("--baselines", default=",".join((*BASELINES, FUSED)),
                   help=f"comma-separated subset, or 'none' ({FUSED}: the retired hand-set fusion over codemem's own "
                        "store, in-process)")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--keep", type=Path, default=None, help="ingest into this (new or empty) dir and keep it")
    group.add_argument("--reuse", type=Path, default=None, help="serve this already-ingested dir; skip ingest")
    p.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="where dense chunk embeddings are cached")
    p.add_argument("--compact-timeout", type=float, default=300.0,
                   help="max seconds to wait for the server's compactor before searching (0: don't)")
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="server setting, e.g. CODEMEM_X=1")
    p.add_argument("--out", type=Path, default=None,
                   help="output prefix: writes PREFIX.json, .md, .png (default eval/results/replay; "
                        "--smoke: eval/results/tmp/replay-smoke)")
    args = p.parse_args(argv)
    try:
        args.kinds = parse_kinds(args.conditions)
    except ValueError as exc:
        p.error(str(exc))
    args.systems = [] if args.baselines == "none" else [b.strip() for b in args.baselines.split(",") if b.strip()]
    if bad := [b for b in args.systems if b not in (*BASELINES, FUSED)]:
        p.error(f"unknown baseline(s) {bad}; choose from {(*BASELINES, FUSED)}")
    if args.out is None:
        args.out = RESULTS / ("tmp/replay-smoke" if args.smoke else "replay")
    if args.keep and args.keep.exists() and any(args.keep.iterdir()):
        p.error(f"--keep {args.keep} is not empty (use --reuse to serve an ingested dir)")
    return args


def serve_and_search(plan: Plan, args: argparse.Namespace) -> tuple[list[QueryScore], list[dict], dict[str, Any], ContractCheck]:
    """Start the service on the chosen data dir, ingest unless reusing, search every condition."""
    if args.reuse:
        check_reusable(args.reuse, plan, args)
    data_dir = args.reuse or args.keep or Path(tempfile.mkdtemp(prefix="cmbench-replay-"))
    data_dir.mkdir(parents=True, exist_ok=True)
    env = dict(kv.split("=", 1) for kv in args.env)
    check = ContractCheck()
    served: dict[str, Any] = {"data_dir": str(data_dir), "kept": bool(args.reuse or args.keep), "server_env": env}
    scores: list[QueryScore] = []
    raw: list[dict] = []
    try:
        with running_server(data_dir=str(data_dir), env=env) as srv:
            log(f"server {srv.url} (pid {srv.pid}, data {data_dir}, log {srv.log_path})")
            if args.reuse:
                rep = IngestReport(reused=True)
            else:
                log(f"ingesting {sum(len(c.trajectories) for c in plan.conditions)} sessions into "
                    f"{len(plan.conditions)} user_ids ({args.chunk}-message Adds, {args.concurrency} at a time) ...")
                rep = ingest(srv, plan, args.chunk, args.concurrency)
                log(f"ingest: {rep.chunks} Adds, {rep.messages:,} messages in {rep.wall_s:.0f} s; "
                    f"Add p50 {rep.add_p50_ms or 0:.0f} ms p95 {rep.add_p95_ms or 0:.0f} ms; {len(rep.errors)} errors")
                (data_dir / MANIFEST).write_bytes(msgspec.json.encode(manifest_for(plan, args, len(rep.errors))))
            served["ingest"] = asdict(rep) | {"errors": rep.errors[:20], "n_errors": len(rep.errors)}
            served["settle"] = wait_settled(str(data_dir), args.compact_timeout)
            log(f"searching {sum(len(c.tasks) for c in plan.conditions)} queries ...")
            scores, raw = search_codemem(srv, plan, check)
            served["server"] = {"restarts": srv.restarts, "log": srv.log_path}
        if FUSED in args.systems:
            log("searching the same memories in-process with the hand-set fusion ...")
            scores += search_fused(data_dir, plan)
    finally:
        if not (args.reuse or args.keep):
            shutil.rmtree(data_dir, ignore_errors=True)
    return scores, raw, served, check


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    shield_from_stray_sigterm()
    prov = provenance("eval.replay", argv)
    t0 = time.perf_counter()
    plan = make_plan(args.data, args.rendering, args.kinds, args.tasks, args.smoke, args.others)
    n_msgs = sum(len(t.messages) for t in plan.trajectories.values())
    log(f"{len(plan.tasks)} tasks, {len(plan.trajectories)} trajectories ({n_msgs:,} messages, rendering "
        f"{args.rendering}), {len(plan.conditions)} user_ids, loaded in {time.perf_counter() - t0:.0f} s")
    info = run_info(args, plan)
    scores, raw, served, check = serve_and_search(plan, args)
    baseline_info: dict[str, Any] = {}
    if args.systems:
        log(f"baselines {', '.join(args.systems)} ...")
        cache_file = args.cache / f"dense-{args.rendering}-minilm-256.npz"
        more, baseline_info = run_baselines(plan, args.systems, cache_file)
        scores += more
    summaries = summarize_all(scores)
    notes = check.notes() + ([f"{served['ingest']['n_errors']} Adds failed"]
                             if served.get("ingest", {}).get("n_errors") else [])
    info["wall_s"] = round(time.perf_counter() - t0, 1)
    result: dict[str, Any] = {"run": info, "service": served, "baselines": baseline_info,
              "contract_notes": notes,
              "summary": [s.as_dict() | {"latency_measured": latency_kind(s.system)} for s in summaries],
              "queries": [asdict(s) for s in scores], "codemem_raw": raw}
    write_outputs(args.out, result, prov, summaries, notes)
    print()
    print(text_table(summaries))
    print(f"({LEGEND})")
    for n in notes:
        print(f"note: {n}")
    print(f"\nwrote {args.out}.json, .md, .png in {info['wall_s'] / 60:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
