"""Training data for the learned ranker: SWE-bench Verified tasks replayed as sessions.

    nice -n 10 python -m train.ranker.build_data --out /tmp/ranker/signals [--repos django,sympy]

For each repository of `swe-verified-reuse` (tasks only, never an evaluation set), a fresh
in-process `Memory` on a temporary data dir is filled in `number` order, one session per
task: a user message with the problem statement, then an assistant that reads the touched
files, applies the human fix hunk by hunk (`Edit` tool calls) and shows it with `git diff`.
Just before a task of `links.json` is added, its problem statement is searched
(`Memory.signals`) in a memory holding only the repository's earlier tasks. Each query's
signals and labels (2 `same_function`, 1 `same_file`, 0 otherwise) are written to
`<out>/<repo>.jsonl`, one query a line, with session keys replaced by instance ids, so
features (`codemem.ranking.features`) are computed later without replaying again. A
repository whose file exists is skipped (delete it to rebuild).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from codemem.config import Settings
from codemem.experience.building.patches import patch_hunks
from codemem.memory import Memory
from codemem.models import AddRequest, Message
from codemem.ranking.recipes import DEFAULT_SEARCH
from codemem.ranking.relevance import SessionSignals
from codemem.store.schema import key_of

DATA = Path("/work/shared/data/swe-verified-reuse")
# Refused as inputs whatever the command line says: the validation sets.
EXCLUDED = ("swe-contextbench-lite", "past-fixes-dev", "locomo-dev")


def load(data: Path) -> tuple[dict[str, list[dict[str, Any]]], dict[str, dict[str, int]]]:
    """Tasks by repository in `number` order, and each linked task's labels (instance id ->
    2 same_function, 1 same_file)."""
    if any(name in str(data) for name in EXCLUDED):
        raise SystemExit(f"{data} is an evaluation set: never train on it")
    by_repo: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in (data / "tasks.jsonl").read_text().splitlines():
        task = json.loads(line)
        by_repo[task["repo"]].append(task)
    for tasks in by_repo.values():
        tasks.sort(key=lambda t: int(t["number"]))
    labels: dict[str, dict[str, int]] = {}
    for link in json.loads((data / "links.json").read_text()):
        labels[link["query"]] = {**dict.fromkeys(link["same_file"], 1), **dict.fromkeys(link["same_function"], 2)}
    return dict(by_repo), labels


def session_messages(task: dict[str, Any]) -> list[Message]:
    """One task as an agent session: the problem, reading the touched files, the fix as
    edits, then `git diff` showing the patch (what an agent's tool output would show)."""
    messages = [Message(role="user", content=task["problem_statement"])]
    for path in task["files"]:
        messages.append(Message(role="assistant", content="Tool call Read " + json.dumps({"file_path": path})))
        messages.append(Message(role="user", content=f"Tool result:\n(contents of {path})"))
    for hunk in patch_hunks(task["patch"]):
        edit = {"file_path": hunk.path, "old_string": hunk.old, "new_string": hunk.new}
        messages.append(Message(role="assistant", content="Tool call Edit " + json.dumps(edit)))
        messages.append(Message(role="user", content="Tool result:\nThe file has been updated."))
    messages.append(Message(role="assistant", content="Tool call Bash " + json.dumps({"command": "git diff"})))
    messages.append(Message(role="user", content="Tool result:\n" + task["patch"]))
    return messages


def signals_record(signals: SessionSignals, names: dict[str, str]) -> dict[str, Any]:
    """`signals` as JSON, session keys replaced by instance ids (`names`)."""
    def keyed(d: dict[str, Any]) -> dict[str, Any]:
        return {names[k]: v for k, v in d.items() if k in names}

    return {"ranks": {n: keyed(r) for n, r in signals.ranks.items()}, "cosine": keyed(signals.cosine),
            "bm25": keyed(signals.bm25), "location": keyed(signals.location),
            "refs_bm25": keyed(signals.refs_bm25), "kind_bm25": {n: keyed(s) for n, s in signals.kind_bm25.items()}}


def signals_from(record: dict[str, Any]) -> SessionSignals:
    """The `SessionSignals` of a `signals_record` (keys are instance ids)."""
    return SessionSignals(record["ranks"], record["cosine"], record["bm25"],
                          {k: (float(e), float(m)) for k, (e, m) in record["location"].items()},
                          refs_bm25=record["refs_bm25"], kind_bm25=record["kind_bm25"])


def replay(repo: str, tasks: list[dict[str, Any]], labels: dict[str, dict[str, int]], out: Path,
           max_tasks: int | None) -> dict[str, float]:
    """Replay one repository; write its queries to `out`; return its timings."""
    user = repo
    names: dict[str, str] = {}
    add_s = search_s = 0.0
    queries = 0
    with tempfile.TemporaryDirectory(prefix="ranker-") as tmp, \
            Memory(Settings(data_dir=str(Path(tmp) / "data"), compact_interval_s=1.0)) as memory, \
            out.open("w") as f:
        for task in tasks[:max_tasks]:
            iid = task["instance_id"]
            if iid in labels and names:
                t0 = time.perf_counter()
                signals, _ = memory.signals(user, task["problem_statement"], DEFAULT_SEARCH, DEFAULT_SEARCH.candidates)
                search_s += time.perf_counter() - t0
                held = set(names.values())
                f.write(json.dumps({"query": iid, "repo": repo, "memory": len(names),
                                    "labels": {k: v for k, v in labels[iid].items() if k in held},
                                    "signals": signals_record(signals, names)}) + "\n")
                queries += 1
            t0 = time.perf_counter()
            memory.add(AddRequest(user_id=user, session_id=iid, request_id=f"{iid}:0",
                                  messages=session_messages(task)))
            add_s += time.perf_counter() - t0
            names[key_of(user, iid)] = iid
    return {"tasks": len(names), "queries": queries, "add_s": round(add_s, 1), "search_s": round(search_s, 1)}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--out", type=Path, default=Path("/tmp/ranker/signals"))
    ap.add_argument("--repos", default="", help="comma-separated repository names (default: all)")
    ap.add_argument("--max-tasks", type=int, default=None, help="replay only each repository's first N tasks")
    args = ap.parse_args(argv)
    by_repo, labels = load(args.data)
    wanted = [r for r in args.repos.split(",") if r]
    args.out.mkdir(parents=True, exist_ok=True)
    timings = {}
    for repo, tasks in sorted(by_repo.items(), key=lambda kv: len(kv[1])):
        if wanted and not any(w in repo for w in wanted):
            continue
        path = args.out / (repo.replace("/", "+") + ".jsonl")
        if path.exists():
            print(f"{repo}: {path} exists, skipped", flush=True)
            continue
        part = path.with_suffix(".part")
        t0 = time.perf_counter()
        timings[repo] = replay(repo, tasks, labels, part, args.max_tasks)
        part.rename(path)
        timings[repo]["wall_s"] = round(time.perf_counter() - t0, 1)
        print(f"{repo}: {timings[repo]}", flush=True)
    (args.out / f"timings-{int(time.time())}.json").write_text(json.dumps(timings, indent=1))


if __name__ == "__main__":
    main()
