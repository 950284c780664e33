"""Training data for the learned ranker: SWE-bench Verified tasks replayed as the real sessions
of several public agents that worked on them.

    nice -n 10 python -m train.ranker.build_data --agent mini=MIRROR[@COMMIT] --agent vorflux=MIRROR \
        --agent openhands=MIRROR --out DIR/signals [--replays mini,mixed] [--export DIR/sessions]

(`make train` runs it, one replay a step: `python -m train`.)

Each task of `swe-verified-reuse` (tasks only, never an evaluation set) is replayed as a real
coding-agent session, read by `agents.py` in that agent's own rendering: mini-swe-agent with
Gemini 3 Pro (bash in THOUGHT/```bash``` turns), Vorflux with Claude Opus 4.6 (typed tool
calls as JSON), OpenHands CodeAct with Claude 3.5 Sonnet (`<function=...>` calls). `MIRROR` is
the run's repository as the search tool's `fetch` gives it (`agents.RUNS` says which), read at
`COMMIT` (default its HEAD; `train.mirrors.RUN_COMMITS` pins the shipped model's), or a folder
that `--export` wrote (`<instance_id>.jsonl`, one message a line); only the trajectories of the
dataset's tasks are opened.

Replays, each into a fresh memory, each written to `OUT/<replay>/`:
- one per agent (`mini`, `vorflux`, ...): a query meets its repository's earlier sessions all
  in one agent's format;
- `mixed`: each task's session comes from one agent chosen by a seeded hash of its instance id
  (the next agent that has one, where the chosen run lacks it), so a memory mixes formats, as
  the Coding track's may (it does not say which agent wrote its trajectories).

In each, all tasks go into one memory, each repository's in `number` order, the repositories
interleaved by their progress (a task at 40% of its repository's list is added beside the
others' 40%), so a query meets its repository's earlier tasks among other repositories'
sessions, as a noisy memory of many repositories does. Each session is Added whole (one request,
one build of its card and steps; `--chunk 34` sends the evaluation's chunks instead, for the same
training rows: `train.ranker.replay_diff`), and the store is compacted every `COMPACT_EVERY`
sessions, at the same points in every run. Just before a task of `links.json` is
added, its problem statement is searched (`Memory.signals`, `DEFAULT_SEARCH`), and so is every
other task's once its repository has one in memory: those have no related task in memory,
which is what the calibration of P(related) must also see (an answer should be quiet for them).
A task whose run has no session is still searched, and not added. The record keeps the
signals of every session then in memory (keys replaced by instance ids), the labels
(2 `same_function`, 1 `same_file`, 0 otherwise), the query's text, and which agent wrote each
session (`agent` for the query task's own, `agents` for those in memory), so folds can be split
by task and by repository, never by trajectory. `cards.jsonl` keeps every session's final card
row (text, refs, metadata, agent), from which card-field features are computed later without
replaying.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from codemem.contract.types import AddRequest, Message
from codemem.memory import Memory
from codemem.ranking.recipes import DEFAULT_SEARCH
from codemem.ranking.relevance import SessionSignals
from codemem.store.schema import key_of
from eval._paths import SHARED_DATA
from train.data import refuse_evaluation_data
from train.encoder import step_settings
from train.licences import require_training
from train.ranker.agents import RUNS, read_sessions

DATA = SHARED_DATA / "swe-verified-reuse"
USER = "train"
CHUNK = 34  # messages per Add as the evaluation's replay sends them (`--chunk`, `answer_size.py`)
CARD_COLUMNS = ("session_key", "text", "refs", "metadata")
# Sessions Added between two compaction rounds (`train.encoder.step_settings`). A Search's BM25 scores
# depend on how the store is compacted and indexed when it runs, so the rounds are part of what
# a replay records: every 10 sessions here, the fastest of 1, 10 and 30 on a 150-task replay.
COMPACT_EVERY = 10
MIXED = "mixed"
SEED = "codemem-ranker-mixed-1"  # the mixed replay's choice of agent per task

Session = tuple[str, str, list[Message]]  # instance id, agent, messages (none: the run lacks it)


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


def sessions_of(name: str, source: Path, ids: list[str], rev: str = "HEAD") -> Iterator[tuple[str, list[Message]]]:
    """One agent's sessions of `ids`, in order: read from its run's mirror (a git directory) at
    `rev`, or from a folder `--export` wrote (`<instance_id>.jsonl`)."""
    if (source / "HEAD").is_file():
        yield from read_sessions(RUNS[name], source, ids, rev)
        return
    decoder = msgspec.json.Decoder(Message)
    for iid in ids:
        path = source / f"{iid}.jsonl"
        yield iid, ([decoder.decode(line) for line in path.read_bytes().splitlines() if line.strip()]
                    if path.is_file() else [])


def _words(text: str) -> str:
    return " ".join(text.split())


def own_sessions(name: str, sessions: Iterator[tuple[str, list[Message]]],
                 problems: dict[str, str]) -> Iterator[tuple[str, list[Message]]]:
    """`sessions`, less those whose task message does not hold their task's problem statement:
    a run's export can file a session under another task (Vorflux's pytest-5840 and -7324 hold
    each other's). Those count as missing, with a note."""
    for iid, messages in sessions:
        if messages and _words(problems[iid])[:200] not in _words(messages[0].text):
            print(f"{name}: the session filed under {iid} is another task's: left out", flush=True)
            messages = []
        yield iid, messages


def export(name: str, sessions: Iterator[tuple[str, list[Message]]], out: Path) -> None:
    """Write each session as `out/<instance_id>.jsonl` (one Add message a line), and say how
    many there are."""
    out.mkdir(parents=True, exist_ok=True)
    counts: Counter[str] = Counter()
    for iid, messages in sessions:
        if messages:
            (out / f"{iid}.jsonl").write_bytes(b"".join(msgspec.json.encode(m) + b"\n" for m in messages))
            counts["sessions"] += 1
            counts["messages"] += len(messages)
        else:
            counts["missing"] += 1
    print(f"exported {name}: {dict(counts)}", flush=True)


def chosen_agent(iid: str, agents: list[str]) -> list[str]:
    """The mixed replay's agents for a task, in the order tried: the one a seeded hash of its
    instance id picks, then the others in turn."""
    first = int(hashlib.sha256(f"{SEED}:{iid}".encode()).hexdigest(), 16) % len(agents)
    return agents[first:] + agents[:first]


def mixed(streams: dict[str, Iterator[tuple[str, list[Message]]]]) -> Iterator[Session]:
    """One session per task from the agents' streams (all in the same task order): the chosen
    agent's, or the next one's where its run lacks the task."""
    agents = list(streams)
    for rows in zip(*streams.values(), strict=True):
        iid = rows[0][0]
        by_agent = dict(zip(agents, (messages for _, messages in rows), strict=True))
        agent = next((a for a in chosen_agent(iid, agents) if by_agent[a]), agents[0])
        yield iid, agent, by_agent[agent]


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


# Where `added_at` dates the first session Added, and how far apart the Adds are.
FIRST_ADD_MS = 1_704_067_200_000  # 2024-01-01T00:00:00Z
ADD_EVERY_MS = 86_400_000  # a day


def added_at(records: list[dict[str, Any]]) -> dict[str, int]:
    """When each session of a replay was Added (Unix ms), read back from its query records in
    the order `replay` wrote them. The replay Adds its sessions undated; the service dates
    every Add, and its time features read those dates, so a model trained on undated sessions
    would meet dated ones only at Search. Each record is written just before its own task is
    Added: that session is dated half a step after its record; a session Added without a
    record of its own (its repository's first) is dated a quarter step before the first
    record whose memory holds it. One step is `ADD_EVERY_MS` from `FIRST_ADD_MS`."""
    steps: dict[str, float] = {}
    for n, rec in enumerate(records):
        for held in rec["memory"]:
            steps.setdefault(held, n - 0.25)
        steps[rec["query"]] = n + 0.5  # Added after this record (if its run has a session)
    return {iid: FIRST_ADD_MS + round(step * ADD_EVERY_MS) for iid, step in steps.items()}


def add_session(memory: Memory, iid: str, messages: list[Message], chunk: int | None = None) -> int:
    """Add one finished session as a client that sends it whole does (one request, one build
    of its card and steps), and return the Adds it took. With `chunk`, in requests of that many
    messages, as the evaluation's replay sends them, then rebuilt whole: the same card, steps and
    message texts, at a build of the session per chunk (`tests/train/test_replay_sameness.py`)."""
    size = chunk or len(messages)
    starts = range(0, len(messages), size)
    for n, start in enumerate(starts):
        memory.add(AddRequest(user_id=USER, session_id=iid, request_id=f"{iid}:{n}",
                              messages=messages[start:start + size]))
    if chunk:
        memory.refresh_session(USER, iid)  # the card as a finished session has it
    else:
        memory.refresher.flush()  # a rebuild the Add left owed (a card with no task yet): done now
    return len(starts)


def replay(name: str, tasks: list[dict[str, Any]], labels: dict[str, dict[str, int]], sessions: Iterator[Session],
           out: Path, chunk: int | None = None) -> dict[str, Any]:
    """Add every task's session in order, searching each task's problem statement first once
    its repository has a session in memory; write the queries (`queries.jsonl`) and the final
    cards (`cards.jsonl`) to `out`. `name` is the replay's, written on every row."""
    out.mkdir(parents=True, exist_ok=True)
    names: dict[str, str] = {}  # session key -> instance id
    agent_of: dict[str, str] = {}  # instance id -> the agent whose session is in memory
    held_repos: set[str] = set()
    by_id = {t["instance_id"]: t for t in tasks}
    add_s = search_s = 0.0
    adds = messages = queries = 0
    written = 0  # sessions Added since the last compaction round
    counts: Counter[str] = Counter()
    with tempfile.TemporaryDirectory(prefix="ranker-") as tmp, \
            Memory(step_settings(Path(tmp) / "data")) as memory, \
            (out / "queries.part").open("w") as f:
        memory.warm_up()
        for iid, agent, msgs in sessions:
            task = by_id[iid]
            if task["repo"] in held_repos:
                t0 = time.perf_counter()
                if written >= COMPACT_EVERY:  # the compactor's round, at the same points in every run
                    memory.compactor.run_once()
                    written = 0
                signals, _ = memory.signals(USER, task["problem_statement"], DEFAULT_SEARCH, DEFAULT_SEARCH.retrieval.candidates)
                search_s += time.perf_counter() - t0
                held = set(names.values())
                f.write(json.dumps({"query": iid, "instance_id": iid, "repo": task["repo"], "replay": name,
                                    "agent": agent if msgs else None, "text": task["problem_statement"],
                                    "memory": sorted(held), "agents": {k: agent_of[k] for k in sorted(held)},
                                    "labels": {k: v for k, v in labels.get(iid, {}).items() if k in held},
                                    "signals": signals_record(signals, names)}) + "\n")
                f.flush()
                queries += 1
            if not msgs:
                counts["missing"] += 1
                print(f"{len(names)}/{len(tasks)} {iid}: no {agent} session, not added", flush=True)
                continue
            t0 = time.perf_counter()
            adds += add_session(memory, iid, msgs, chunk)
            written += 1
            add_s += time.perf_counter() - t0
            messages += len(msgs)
            names[key_of(USER, iid)] = iid
            agent_of[iid] = agent
            held_repos.add(task["repo"])
            counts[agent] += 1
            print(f"{len(names)}/{len(tasks)} {iid} ({agent}): {len(msgs)} messages", flush=True)
        cards = memory.store.user_rows(key_of(USER), "card", list(CARD_COLUMNS))
    with (out / "cards.part").open("w") as f:
        for card in cards:
            if (card_id := names.get(str(card["session_key"]))) is not None:
                f.write(json.dumps({"id": card_id, "instance_id": card_id, "agent": agent_of[card_id], "replay": name,
                                    **{c: card[c] for c in CARD_COLUMNS if c != "session_key"}}) + "\n")
    (out / "queries.part").rename(out / "queries.jsonl")
    (out / "cards.part").rename(out / "cards.jsonl")
    return {"replay": name, "tasks": len(names), "sessions": dict(counts), "queries": queries, "messages": messages,
            "adds": adds, "add_s": round(add_s, 1), "search_s": round(search_s, 1)}


def parse_agent(spec: str) -> tuple[str, tuple[Path, str]]:
    """`NAME=PATH[@COMMIT]` of `--agent`, NAME one of the known runs; the commit a mirror is
    read at (default HEAD)."""
    name, sep, path = spec.partition("=")
    if not sep or name not in RUNS:
        raise argparse.ArgumentTypeError(f"--agent takes NAME=PATH[@COMMIT] with NAME one of {', '.join(RUNS)}: {spec!r}")
    where, at, rev = path.rpartition("@")
    if at and rev and all(c in "0123456789abcdefABCDEF" for c in rev):
        return name, (Path(where), rev)
    return name, (Path(path), "HEAD")


def source_commit(source: Path, rev: str = "HEAD") -> str | None:
    """The full commit a mirror is read at (None for an exported folder)."""
    if not (source / "HEAD").is_file():
        return None
    return subprocess.run(["git", "--git-dir", str(source), "rev-parse", f"{rev}^{{commit}}"], check=True,
                          capture_output=True, text=True).stdout.strip()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--agent", type=parse_agent, action="append", required=True, metavar="NAME=PATH",
                    help=f"a run's git directory (the search tool's fetch; @COMMIT: read at that commit) or exported folder; "
                         f"NAME: {', '.join(RUNS)}")
    ap.add_argument("--out", type=Path, default=Path("/tmp/ranker/signals"), help="each replay goes to OUT/<replay>/")
    ap.add_argument("--replays", default=None,
                    help=f"comma-separated replays to run (default: every agent's, and {MIXED!r} when there are several)")
    ap.add_argument("--export", type=Path, default=None,
                    help="also write each agent's sessions to EXPORT/<agent>/<instance_id>.jsonl")
    ap.add_argument("--chunk", type=int, default=None, help="messages per Add (default: each session whole)")
    ap.add_argument("--max-tasks", type=int, default=None, help="replay only the first N tasks (a smoke run)")
    args = ap.parse_args(argv)
    sources = {name: path for name, (path, _) in args.agent}
    revs = {name: rev for name, (_, rev) in args.agent}
    for source in sources.values():
        refuse_evaluation_data(source)
    replays = args.replays.split(",") if args.replays else [*sources, *([MIXED] if len(sources) > 1 else [])]
    if unknown := [r for r in replays if r != MIXED and r not in sources]:
        raise SystemExit(f"no --agent for replay(s) {', '.join(unknown)}")
    if MIXED in replays:  # a mixed replay is training data: no check-only run enters it
        for agent in sources:
            require_training(agent, f"mixed into the {MIXED!r} replay")
    by_repo, labels = load(args.data)
    tasks = interleaved(by_repo)[: args.max_tasks]
    ids = [t["instance_id"] for t in tasks]
    commits = {name: source_commit(source, revs[name]) for name, source in sources.items()}
    problems = {t["instance_id"]: t["problem_statement"] for t in tasks}

    def stream(agent: str) -> Iterator[tuple[str, list[Message]]]:
        return own_sessions(agent, sessions_of(agent, sources[agent], ids, revs[agent]), problems)

    if args.export:
        for name in sources:
            export(name, stream(name), args.export / name)
    for name in replays:
        t0 = time.perf_counter()
        if name == MIXED:
            sessions = mixed({a: stream(a) for a in sources})
        else:
            sessions = ((iid, name, msgs) for iid, msgs in stream(name))
        timings = replay(name, tasks, labels, sessions, args.out / name, args.chunk)
        timings["wall_s"] = round(time.perf_counter() - t0, 1)
        timings["sources"] = {a: {"repository": RUNS[a].repository, "folder": RUNS[a].folder, "commit": commits[a],
                                  "license": RUNS[a].license}
                              for a in (sources if name == MIXED else [name])}
        if name == MIXED:
            timings["seed"] = SEED
        (args.out / name / "timings.json").write_text(json.dumps(timings, indent=1))
        print(json.dumps(timings), flush=True)


if __name__ == "__main__":
    main()
