"""Training data for the learned ranker: SWE-bench Verified tasks replayed as the real agent
sessions that solved them.

    nice -n 10 python -m train.ranker.build_data --trajectories MIRROR --out /tmp/ranker/signals

Each task of `swe-verified-reuse` (tasks only, never an evaluation set) is replayed as a real
coding-agent trajectory: mini-swe-agent 1.15 with Gemini 3 Pro on SWE-bench Verified, public in
`gruckion/mini-swe-agent` (`swebench_results/20251118_gemini-3-pro-74pct/trajs/`), which every one
of the 392 tasks has. `MIRROR` is that repository's git directory (the search tool's
`fetch github:gruckion/mini-swe-agent`); only the trajectories of the dataset's tasks are read.
The sessions are long and real: the agent's reasoning, `grep`/`cat`/`sed` output, reproduction
scripts, test runs, tracebacks, edits and the submitted diff, as in the evaluation's Claude Code
transcripts. The system prompt is left out, and the first user message ends with the task's
`</pr_description>` (the harness's generic instructions after it are the same in every session).

All tasks go into one memory, each repository's in `number` order, the repositories interleaved
by their progress (a task at 40% of its repository's list is added beside the others' 40%), so
a query meets its repository's earlier tasks among other repositories' sessions, as a noisy
memory of many repositories does. Just before a task of `links.json` is added, its problem
statement is searched (`Memory.signals`, `DEFAULT_SEARCH`), and so is every other task's once
its repository has one in memory: those have no related task in memory, which is what the
calibration of P(related) must also see (an answer should be quiet for them). The record keeps
the signals of
every session then in memory (keys replaced by instance ids), the labels (2 `same_function`,
1 `same_file`, 0 otherwise) and the query's text. `cards.jsonl` keeps every session's final card
row (text, refs, metadata), from which card-field features are computed later without replaying.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from codemem.config import Settings
from codemem.contract.types import AddRequest, Message
from codemem.memory import Memory
from codemem.ranking.recipes import DEFAULT_SEARCH
from codemem.ranking.relevance import SessionSignals
from codemem.store.schema import key_of
from eval._paths import SHARED_DATA
from train.data import refuse_evaluation_data

DATA = SHARED_DATA / "swe-verified-reuse"
TRAJECTORIES = "swebench_results/20251118_gemini-3-pro-74pct/trajs"
USER = "train"
CHUNK = 34  # messages per Add, as the evaluation's replay sends them
CARD_COLUMNS = ("session_key", "text", "refs", "metadata")
TASK_END = "</pr_description>"


def load(data: Path) -> tuple[dict[str, list[dict[str, Any]]], dict[str, dict[str, int]]]:
    """Tasks by repository in `number` order, and each linked task's labels (instance id ->
    2 same_function, 1 same_file)."""
    refuse_evaluation_data(data)
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


def interleaved(by_repo: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Every task, each repository's in its order, repositories interleaved by progress."""
    keyed = [((i + 0.5) / len(tasks), repo, task) for repo, tasks in by_repo.items() for i, task in enumerate(tasks)]
    return [task for _, _, task in sorted(keyed, key=lambda t: (t[0], t[1]))]


def read_trajectories(mirror: Path, ids: list[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each instance's trajectory JSON from the mirror's HEAD, in `ids` order (one
    `git cat-file --batch` for all)."""
    proc = subprocess.Popen(["git", "--git-dir", str(mirror), "cat-file", "--batch"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for iid in ids:
            proc.stdin.write(f"HEAD:{TRAJECTORIES}/{iid}/{iid}.traj.json\n".encode())
            proc.stdin.flush()
            header = proc.stdout.readline().decode().split()
            if len(header) < 3 or header[1] == "missing":
                raise SystemExit(f"no trajectory for {iid} in {mirror} ({' '.join(header)})")
            body = proc.stdout.read(int(header[2]))
            proc.stdout.read(1)  # the newline after each object
            yield iid, json.loads(body)
    finally:
        proc.stdin.close()
        proc.wait()


def session_messages(trajectory: dict[str, Any]) -> list[Message]:
    """A trajectory's messages as Add messages: no system prompt; the task message ends with
    the task (the harness's instructions after it are left out)."""
    out: list[Message] = []
    for msg in trajectory["messages"]:
        role, content = msg["role"], str(msg["content"])
        if role not in ("user", "assistant") or not content.strip():
            continue
        if not out and role == "user" and TASK_END in content:
            content = content[: content.index(TASK_END) + len(TASK_END)]
        out.append(Message(role=role, content=content))
    return out


def signals_record(signals: SessionSignals, names: dict[str, str]) -> dict[str, Any]:
    """`signals` as JSON, session keys replaced by their names (`names`: instance ids, SHAs)."""
    def keyed(d: dict[str, Any]) -> dict[str, Any]:
        return {names[k]: v for k, v in d.items() if k in names}

    return {"ranks": {n: keyed(r) for n, r in signals.ranks.items()}, "cosine": keyed(signals.cosine),
            "bm25": keyed(signals.bm25), "location": keyed(signals.location),
            "refs_bm25": keyed(signals.refs_bm25), "kind_bm25": {n: keyed(s) for n, s in signals.kind_bm25.items()},
            "commit_ranks": {n: keyed(r) for n, r in signals.commit_ranks.items()},
            "refs_held": keyed(signals.refs_held), "fields": keyed(signals.fields),
            "commits": sorted(names[k] for k in signals.commits if k in names)}


def signals_from(record: dict[str, Any]) -> SessionSignals:
    """The `SessionSignals` of a `signals_record` (keys are names). Records written before the
    commit rankings, the references held and the fields were recorded have none: the caller
    computes those from the cards (`train.ranker.train`)."""
    return SessionSignals(record["ranks"], record["cosine"], record["bm25"],
                          {k: (float(e), float(m)) for k, (e, m) in record["location"].items()},
                          refs_held=record.get("refs_held", {}), commit_ranks=record.get("commit_ranks", {}),
                          commits=frozenset(record.get("commits", ())),
                          refs_bm25=record["refs_bm25"], kind_bm25=record["kind_bm25"],
                          fields={k: tuple(v) for k, v in record.get("fields", {}).items()})


def replay(tasks: list[dict[str, Any]], labels: dict[str, dict[str, int]], mirror: Path, out: Path) -> dict[str, Any]:
    """Add every task's trajectory in order, searching each linked task first; write the
    queries (`queries.jsonl`) and the final cards (`cards.jsonl`) to `out`."""
    names: dict[str, str] = {}  # session key -> instance id
    repo_of = {t["instance_id"]: t["repo"] for t in tasks}
    by_id = {t["instance_id"]: t for t in tasks}
    add_s = search_s = 0.0
    adds = messages = 0
    with tempfile.TemporaryDirectory(prefix="ranker-") as tmp, \
            Memory(Settings().replace({"storage.data_dir": str(Path(tmp) / "data")})) as memory, \
            (out / "queries.part").open("w") as f:
        memory.warm_up()
        for iid, trajectory in read_trajectories(mirror, [t["instance_id"] for t in tasks]):
            task = by_id[iid]
            if any(repo_of[n] == task["repo"] for n in names.values()):
                t0 = time.perf_counter()
                signals, _ = memory.signals(USER, task["problem_statement"], DEFAULT_SEARCH, DEFAULT_SEARCH.retrieval.candidates)
                search_s += time.perf_counter() - t0
                held = set(names.values())
                f.write(json.dumps({"query": iid, "repo": task["repo"], "text": task["problem_statement"],
                                    "memory": sorted(held),
                                    "labels": {k: v for k, v in labels.get(iid, {}).items() if k in held},
                                    "signals": signals_record(signals, names)}) + "\n")
                f.flush()
            msgs = session_messages(trajectory)
            t0 = time.perf_counter()
            for n, start in enumerate(range(0, len(msgs), CHUNK)):
                memory.add(AddRequest(user_id=USER, session_id=iid, request_id=f"{iid}:{n}",
                                      messages=msgs[start:start + CHUNK]))
                adds += 1
            memory.refresh_session(USER, iid)  # the card as a finished session has it
            add_s += time.perf_counter() - t0
            messages += len(msgs)
            names[key_of(USER, iid)] = iid
            print(f"{len(names)}/{len(tasks)} {iid}: {len(msgs)} messages", flush=True)
        cards = memory.store.user_rows(key_of(USER), "card", list(CARD_COLUMNS))
    with (out / "cards.part").open("w") as f:
        for card in cards:
            if (card_id := names.get(str(card["session_key"]))) is not None:
                f.write(json.dumps({"id": card_id, **{c: card[c] for c in CARD_COLUMNS if c != "session_key"}}) + "\n")
    (out / "queries.part").rename(out / "queries.jsonl")
    (out / "cards.part").rename(out / "cards.jsonl")
    return {"tasks": len(names), "messages": messages, "adds": adds, "add_s": round(add_s, 1),
            "search_s": round(search_s, 1)}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--trajectories", type=Path, required=True,
                    help="git directory of github:gruckion/mini-swe-agent (the search tool's fetch)")
    ap.add_argument("--out", type=Path, default=Path("/tmp/ranker/signals"))
    ap.add_argument("--max-tasks", type=int, default=None, help="replay only the first N tasks (a smoke run)")
    args = ap.parse_args(argv)
    by_repo, labels = load(args.data)
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    timings = replay(interleaved(by_repo)[: args.max_tasks], labels, args.trajectories, args.out)
    timings["wall_s"] = round(time.perf_counter() - t0, 1)
    (args.out / "timings.json").write_text(json.dumps(timings, indent=1))
    print(json.dumps(timings), flush=True)


if __name__ == "__main__":
    main()
