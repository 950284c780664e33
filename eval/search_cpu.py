"""CPU time of one Search in-process, whole and by stage, and its answers (issue 18).

    python -m eval.search_cpu --store /tmp/cm-2k --out eval/results/tmp/search-cpu.json
    python -m eval.search_cpu --store /tmp/cm-2k --compare eval/results/tmp/search-cpu-before.json

The store is built once when `--store` does not exist: `--messages` messages of the real
trajectories in 20-message Adds (five to a session, as `eval.load --preload` sends them) under
user `load`, then compacted; later runs reuse it, so two checkouts can be compared on the same
rows (run it from each checkout; `python -m` takes `codemem` from the current directory). Searches are the related tasks' problem statements
(top_k 100), run one after another: CPU is the process's (`resource.getrusage`, LanceDB's
threads included) per Search, then per stage, each stage run alone over the same queries.
Every hit id of every answer is written out; `--compare` says how many answers equal those of
an earlier file (rankings must not move when only speed changes).
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import msgspec

from codemem.config import Settings
from codemem.contract.types import AddRequest, SearchRequest
from codemem.memory import Memory
from codemem.ranking.query import parse_query
from codemem.store.schema import key_of
from eval._paths import SWE_LITE
from eval._provenance import finish, provenance
from eval.latency import load_queries, load_sessions
from eval.load import chunks_of

USER = "load"


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def build(mem: Memory, messages: int) -> None:
    sent = 0
    for i, chunk in enumerate(chunks_of(load_sessions(SWE_LITE / "trajectories.tar.xz"))):
        if sent >= messages:
            break
        body = {"user_id": USER, "session_id": f"pre-{i // 5}", "request_id": f"pre-{i}", "messages": chunk}
        mem.add(msgspec.convert(body, AddRequest))
        sent += len(chunk)
    mem.refresher.flush()
    mem.store.optimize(timedelta(0))


def per_query_ms(queries: list[str], fn: Callable[[str], object]) -> float:
    fn(queries[0])
    c0 = cpu_s()
    for q in queries:
        fn(q)
    return round((cpu_s() - c0) / len(queries) * 1000, 2)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--store", type=Path, required=True, help="data directory (built when missing)")
    p.add_argument("--messages", type=int, default=2000, help="messages stored when building")
    p.add_argument("--queries", type=int, default=60)
    p.add_argument("--compare", type=Path, help="an earlier result file whose answers should be equal")
    p.add_argument("--out", type=Path, default=Path("eval/results/tmp/search-cpu.json"))
    args = p.parse_args(argv)
    prov = provenance("eval.search_cpu", argv)
    built = not args.store.exists()
    mem = Memory(Settings.from_env({}, data_dir=str(args.store), compact_interval_s=0))
    try:
        mem.warm_up()
        if built:
            build(mem, args.messages)
        queries = load_queries(SWE_LITE / "related_tasks.jsonl")[: args.queries]
        answers: dict[str, list[str]] = {}

        def search(q: str) -> None:
            answers[q] = [h.id for h in mem.search(SearchRequest(user_id=USER, query=q, top_k=100))]

        t0 = time.perf_counter()
        cpu = {"search": per_query_ms(queries, search)}
        wall_ms = round((time.perf_counter() - t0) / (len(queries) + 1) * 1000, 1)
        user_key, vector = key_of(USER), mem.embedder.embed([queries[0]], mem.settings.query_max_tokens)[0]
        cpu |= {
            "embed": per_query_ms(queries, lambda q: mem.embedder.embed([q], mem.settings.query_max_tokens)),
            "parse": per_query_ms(queries, parse_query),
            "fts_text": per_query_ms(queries, lambda q: mem.store.fts(parse_query(q).bm25, user_key, 100)),
            "fts_refs": per_query_ms(queries, lambda q: mem.store.fts(" ".join(parse_query(q).refs), user_key, 100, "refs")),
            "nearest": per_query_ms(queries, lambda q: mem.store.nearest(vector, user_key, 100)),
            "version": per_query_ms(queries, lambda q: mem.store.version()),
        }
        stats = mem.store.stats()
    finally:
        mem.close()
    result: dict[str, object] = {"provenance": finish(prov), "store": stats, "built_now": built,
                                 "cpu_ms_per_query": cpu, "search_wall_ms": wall_ms, "answers": answers}
    if args.compare:
        before = json.loads(args.compare.read_text())["answers"]
        result["same_answers"] = f"{sum(before.get(q) == a for q, a in answers.items())}/{len(answers)}"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k not in ("answers", "provenance")}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
