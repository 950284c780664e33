"""Training data of the relevance model for commit memories: past-fix tasks (a bug report and
the change of its repository's history that fixed it) searched over that history.

    python -m train.ranker.commit_data --store DIR/store --tasks DIR/tasks.json --out DIR/commits

`--store` and `--tasks` are what `train.past_fixes.build_data` writes (public histories, one data
directory and user id `pastfixes-<name>` per repository; never an evaluation set's). Each task's
report is searched in its repository's memory (`Memory.signals`: the product's retrievers,
commit rankings and card fields), its gold the experiences whose change holds a gold commit
(label 2); and once more in the next repository's memory (in name order), where nothing is
related: an answer the calibration must learn to keep quiet. Writes `queries.jsonl` in
`train.ranker.build_data`'s format (candidates named by their change's SHA) and `summary.json`.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from codemem.memory import Memory
from codemem.ranking.recipes import DEFAULT_SEARCH
from codemem.store.schema import key_of
from train.data import refuse_evaluation_data
from train.encoder import step_settings
from train.ranker.build_data import signals_record


def store_name(repo: str) -> str:
    """A repository's data directory and user id suffix, as `train.past_fixes.build_data` names them."""
    return repo.split("/")[1]


def open_memory(store: Path, name: str) -> tuple[Memory, str, dict[str, str], dict[str, set[str]]]:
    """One repository's memory, its user id, each experience's name (its change's SHA) and the
    commits each holds (a merge holds its branch's)."""
    memory = Memory(step_settings(store / name))
    user_id = f"pastfixes-{name}"
    names, commits = {}, {}
    for card in memory.store.user_rows(key_of(user_id), "card", ["session_key", "metadata"]):
        meta = json.loads(str(card["metadata"]) or "{}")
        key = str(card["session_key"])
        names[key] = str(meta.get("commit") or key)
        commits[key] = set(meta.get("commits") or []) | {str(meta.get("commit") or "")}
    return memory, user_id, names, commits


def search(memory: Memory, user_id: str, text: str) -> Any:
    signals, _ = memory.signals(user_id, text, DEFAULT_SEARCH, DEFAULT_SEARCH.retrieval.candidates)
    return signals


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", type=Path, required=True)
    ap.add_argument("--tasks", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    for path in (args.store, args.tasks):
        refuse_evaluation_data(path)
    tasks = json.loads(args.tasks.read_text())
    by_repo: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for task in tasks:
        if (args.store / store_name(task["repo"])).is_dir():
            by_repo[task["repo"]].append(task)
    repos = sorted(by_repo)
    args.out.mkdir(parents=True, exist_ok=True)
    summary: dict[str, Any] = {}
    t0 = time.perf_counter()
    with (args.out / "queries.part").open("w") as f:
        for i, repo in enumerate(repos):
            # This repository's tasks in its own memory, then the previous repository's tasks
            # in it (nothing related there).
            memory, user_id, names, commits = open_memory(args.store, store_name(repo))
            other = repos[i - 1] if len(repos) > 1 else None
            try:
                found = 0
                for task in by_repo[repo]:
                    gold = set(task["gold_commits"])
                    labels = {names[k]: 2 for k, shas in commits.items() if shas & gold}
                    found += bool(labels)
                    f.write(json.dumps({"query": task["instance_id"], "repo": repo, "text": task["problem_statement"],
                                        "memory": user_id, "labels": labels,
                                        "signals": signals_record(search(memory, user_id, task["problem_statement"]),
                                                                  names)}) + "\n")
                for task in by_repo.get(other, []) if other else []:
                    f.write(json.dumps({"query": f"{task['instance_id']}@{repo}", "repo": other,
                                        "text": task["problem_statement"], "memory": user_id, "labels": {},
                                        "signals": signals_record(search(memory, user_id, task["problem_statement"]),
                                                                  names)}) + "\n")
                f.flush()
            finally:
                memory.close()
            summary[repo] = {"tasks": len(by_repo[repo]), "gold_in_memory": found, "changes": len(names),
                             "asked_of_it_from": other, "off_topic": len(by_repo.get(other, [])) if other else 0}
            print(f"{repo}: {len(by_repo[repo])} tasks ({found} with gold in memory), {len(names)} changes", flush=True)
    (args.out / "queries.part").rename(args.out / "queries.jsonl")
    summary["wall_s"] = round(time.perf_counter() - t0, 1)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
