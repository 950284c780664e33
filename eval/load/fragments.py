"""Write amplification: Search latency over a table of many small commits, before and after
compaction, and with the background compactor on (default settings).

    python -m eval.load.fragments                      # 2,000 Adds per run, 100 Searches per state
    python -m eval.load.fragments --adds 500 --searches 50

Three states of one user's memory, each filled by `--adds` small sequential Adds (1-2 short
messages of real transcripts each, a new session every 20 Adds):

  A. uncompacted: server with the compactor off (CODEMEM_COMPACT_INTERVAL_S=0): one fragment
     (or more) per Add;
  B. freshly compacted: A's server stopped, its table compacted offline (`Store.optimize`,
     as the compactor does), then served again (compactor still off, so nothing moves);
  C. default settings: a fresh server with the compactor on during the Adds, measured right
     after the last Add.

Each state: `--searches` sequential Searches (related tasks' problem statements, top_k 100)
after 3 untimed ones, end to end over HTTP, plus the server's CPU time per Search. The
target: C / B <= 1.5 (p95, and p50 for reference).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LANCE_LOG", "error")

import httpx  # noqa: E402

from eval._compaction import table_stats  # noqa: E402
from eval._data import load_queries, load_sessions  # noqa: E402
from eval._paths import RESULTS  # noqa: E402
from eval._provenance import finish, provenance, write_result  # noqa: E402
from eval._provenance import header as provenance_header  # noqa: E402
from eval._server import (  # noqa: E402
    Server,
    post_retrying,
    running_server,
    shield_from_stray_sigterm,
    use_source,
)
from eval._stats import summary_ms  # noqa: E402
from eval.load.latency import conditions, fmt, searches_with_cpu  # noqa: E402

USER = "bench-fragments"


def small_adds(n: int, tag: str, per_session: int = 20, max_chars: int = 200) -> list[dict[str, Any]]:
    """`n` Add bodies of 1 or 2 short messages (real transcript text, cut to `max_chars`)."""
    pool = [m for _, msgs in load_sessions() for m in msgs]
    bodies, k = [], 0
    for i in range(n):
        take = 1 + i % 2
        msgs = []
        for _ in range(take):
            m = pool[k % len(pool)]
            k += 1
            msgs.append({"role": m["role"], "content": str(m["content"])[:max_chars], "timestamp": m["timestamp"]})
        bodies.append({"request_id": f"{tag}-{i}", "user_id": USER, "session_id": f"{tag}-s{i // per_session}",
                       "messages": msgs})
    return bodies


def send_sequential(srv: Server, bodies: list[dict[str, Any]], label: str) -> dict[str, Any]:
    lat, errors = [], []
    t0 = time.perf_counter()
    with httpx.Client(timeout=300, trust_env=False) as client:
        for i, body in enumerate(bodies):
            try:
                r, dt = post_retrying(client, srv, "/add", body)
                if r.status_code != 200:
                    errors.append(f"HTTP {r.status_code}: {r.text[:200]}")
                else:
                    lat.append(dt)
            except Exception as exc:  # noqa: BLE001
                errors.append(f"{type(exc).__name__}: {exc}")
            if len(errors) > 20:
                raise RuntimeError(f"too many Add errors, first: {errors[0]}")
            if (i + 1) % 250 == 0:
                print(f"  [{label}] {i + 1}/{len(bodies)} Adds, {time.perf_counter() - t0:.0f} s", flush=True)
    wall = time.perf_counter() - t0
    q = max(1, len(lat) // 10)
    return {"n": len(bodies), "wall_s": wall, "latency_ms": summary_ms(lat),
            "first_10pct_ms": summary_ms(lat[:q]), "last_10pct_ms": summary_ms(lat[-q:]),
            "errors": errors[:5], "n_errors": len(errors), "server_restarts": srv.restarts}


def measure(srv: Server, queries: list[str], searches: int) -> dict[str, Any]:
    before = table_stats(srv.data_dir)
    res = searches_with_cpu(srv, USER, queries, searches)
    res.pop("raw_ms", None)
    res["stats_before"] = before
    res["stats_after"] = table_stats(srv.data_dir)
    res["loadavg"] = os.getloadavg()
    return res


def offline_compact(data_dir: str) -> dict[str, Any]:
    """What the compactor does (`Store.optimize`), on the stopped server's data dir."""
    from codemem.encoders import ShippedEmbedder
    from codemem.store.lance import Store
    from codemem.store.maintenance import KEEP_VERSIONS_FOR

    store = Store(data_dir, (shipped := ShippedEmbedder()).name, shipped.dim)
    t0 = time.perf_counter()
    store.optimize(KEEP_VERSIONS_FOR)
    return {"optimize_s": time.perf_counter() - t0, "stats": table_stats(data_dir)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m eval.load.fragments", description=__doc__.split("\n\n")[0])
    p.add_argument("--adds", type=int, default=2000)
    p.add_argument("--searches", type=int, default=100)
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                   help="extra server environment for all three runs (e.g. OMP_WAIT_POLICY=PASSIVE); "
                        "run A/B also get CODEMEM_COMPACT_INTERVAL_S=0")
    p.add_argument("--source", default=None, help="run the project from this snapshot directory instead of the checkout")
    p.add_argument("--phases", default="AB,C", help="which runs: 'AB' (A then B on its data), 'C', or both")
    p.add_argument("--merge", action="store_true", help="keep the other phases' results already in --out")
    p.add_argument("--out", default=str(RESULTS / "fragments.json"))
    args = p.parse_args(argv)
    prov = provenance("eval.load.fragments", argv)
    use_source(args.source)
    sigterms = shield_from_stray_sigterm()
    phases = {x.strip().upper() for x in args.phases.split(",")}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    queries = load_queries()
    tag = f"frag{int(time.time())}"
    extra = dict(kv.split("=", 1) for kv in args.env)
    result: dict[str, Any] = json.loads(out.read_text()) if args.merge and out.exists() else {}
    result["conditions_" + "_".join(sorted(phases))] = conditions(extra, args.source)
    result["params"] = vars(args)

    def save() -> None:
        result["provenance_" + "_".join(sorted(phases))] = finish(prov)
        result["ignored_sigterms"] = len(sigterms)
        write_result(out, result, prov)

    off = extra | {"CODEMEM_COMPACT_INTERVAL_S": "0"}
    if "AB" in phases:
        bodies = small_adds(args.adds, tag)
        print(f"{args.adds} Adds of 1-2 short messages ({sum(len(b['messages']) for b in bodies)} messages), "
              f"{args.searches} Searches per state", flush=True)
        dir_a = tempfile.mkdtemp(prefix="cmbench-frag-a-")
        try:
            print("A: compactor off ...", flush=True)
            with running_server(data_dir=dir_a, env=off, source=args.source) as srv:
                result["A_adds"] = send_sequential(srv, bodies, "A")
                result["A_uncompacted"] = measure(srv, queries, args.searches)
            save()
            print(f"  A: {result['A_uncompacted']['stats_before']}", flush=True)
            print("B: offline compaction, then served again (compactor off) ...", flush=True)
            result["B_compaction"] = offline_compact(dir_a)
            print(f"  optimize {result['B_compaction']['optimize_s']:.1f} s -> {result['B_compaction']['stats']}", flush=True)
            with running_server(data_dir=dir_a, env=off, source=args.source) as srv:
                result["B_compacted"] = measure(srv, queries, args.searches)
            save()
        finally:
            shutil.rmtree(dir_a, ignore_errors=True)

    if "C" in phases:
        dir_c = tempfile.mkdtemp(prefix="cmbench-frag-c-")
        try:
            print("C: default settings (compactor on during the Adds) ...", flush=True)
            bodies_c = small_adds(args.adds, tag + "c")
            with running_server(data_dir=dir_c, env=extra, source=args.source) as srv:
                result["C_adds"] = send_sequential(srv, bodies_c, "C")
                result["C_default"] = measure(srv, queries, args.searches)
            save()
        finally:
            shutil.rmtree(dir_c, ignore_errors=True)

    if not all(k in result for k in ("A_uncompacted", "B_compacted", "C_default")):
        print(f"partial results written to {out}; run the other phases with --merge")
        return 0
    a, b, c = (result[k]["latency_ms"] for k in ("A_uncompacted", "B_compacted", "C_default"))
    result["ratio_C_over_B"] = {"p50": c["p50"] / b["p50"], "p95": c["p95"] / b["p95"]}
    result["ratio_A_over_B"] = {"p50": a["p50"] / b["p50"], "p95": a["p95"] / b["p95"]}
    save()

    lines = [
        f"{'state':<34} | {'frags':>5} | {'unidx':>5} | {'rows':>5} | {'p50':>6} | {'p95':>6} | {'p99':>6} | {'srv CPU':>7}",
        "-" * 96,
    ]
    for label, key in (("A uncompacted (compactor off)", "A_uncompacted"), ("B freshly compacted", "B_compacted"),
                       ("C default settings, after last Add", "C_default")):
        r = result[key]
        s, st = r["latency_ms"], r["stats_before"]
        cpu = r["server_cpu_ms_per_search"]
        lines.append(f"{label:<34} | {st['fragments']:>5} | {st['unindexed_rows']:>5} | {st['rows']:>5} | "
                     f"{fmt(s['p50']):>6} | {fmt(s['p95']):>6} | {fmt(s['p99']):>6} | {fmt(cpu):>7}")
    rc, ra = result["ratio_C_over_B"], result["ratio_A_over_B"]
    lines += [
        "(Search ms end to end, top_k 100; srv CPU = server CPU ms per Search; frags/unidx/rows at the start of the searches)",
        f"ratio C/B (default vs freshly compacted): p50 {rc['p50']:.2f}x, p95 {rc['p95']:.2f}x  (target <= 1.5x)",
        f"ratio A/B (uncompacted vs compacted):     p50 {ra['p50']:.2f}x, p95 {ra['p95']:.2f}x",
        f"Add latency (ms p50/p95): A {fmt(result['A_adds']['latency_ms']['p50'])}/{fmt(result['A_adds']['latency_ms']['p95'])}"
        f" (first 10% p50 {fmt(result['A_adds']['first_10pct_ms']['p50'])}, last 10% p50 {fmt(result['A_adds']['last_10pct_ms']['p50'])}); "
        f"C {fmt(result['C_adds']['latency_ms']['p50'])}/{fmt(result['C_adds']['latency_ms']['p95'])}"
        f" (first 10% p50 {fmt(result['C_adds']['first_10pct_ms']['p50'])}, last 10% p50 {fmt(result['C_adds']['last_10pct_ms']['p50'])})",
    ]
    table = "\n".join(lines)
    print()
    print(table)
    conds = [v for k, v in result.items() if k.startswith("conditions_")]
    loads = ", ".join(f"{r}: {result[r]['loadavg'][0]:.1f}" for r in ("A_uncompacted", "B_compacted", "C_default"))
    out.with_suffix(".md").write_text(
        f"# codemem fragments / compaction check ({', '.join(c['date_utc'] for c in conds)}, "
        f"{conds[-1]['cpu_count']} cores; 1-min load at the end of each measurement: {loads})\n\n"
        f"{provenance_header(finish(prov))}\n\n"
        f"`{prov['command']}`"
        f" (phases run: {', '.join(sorted(k[11:] for k in result if k.startswith('conditions_')))}; "
        f"server restarts: A {result['A_adds']['server_restarts']}, C {result['C_adds']['server_restarts']}; "
        f"stray SIGTERMs ignored: {result.get('ignored_sigterms', 0)})\n\n```\n{table}\n```\n")
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
