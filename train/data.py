"""The rules every training-data builder keeps: an evaluation set is never training data, and
no evaluation task or repository enters a training set under another name."""

from __future__ import annotations

import json
from pathlib import Path

# The validation sets, refused as inputs whatever the command line says: those in
# ../shared/data, and this repository's fresh sets (a name refuses every path that holds it:
# "timeline-fresh" also timeline-fresh2, "decisions/suite" also suite2.jsonl).
EXCLUDED = ("swe-contextbench-lite", "past-fixes-dev", "locomo-dev", "timeline-fresh", "decisions/suite")
# Repositories no training set draws on: the held-out checks' histories, and the past-fixes
# dev set's (validation only).
HELD_OUT_REPOS = ("gin-gonic/gin", "sharkdp/bat", "jqlang/jq", "axios/axios", "psf/requests", "pallets/flask")
DEV_REPOS = ("BurntSushi/ripgrep", "caddyserver/caddy", "projectlombok/lombok", "preactjs/preact", "tokio-rs/tokio")
NEVER_REPOS = frozenset(r.lower() for r in (*HELD_OUT_REPOS, *DEV_REPOS))


def refuse_evaluation_data(path: Path) -> None:
    """Stop (SystemExit) where `path` names one of the validation sets."""
    if any(name in str(path) for name in EXCLUDED):
        raise SystemExit(f"refusing {path}: an evaluation set is never training data")


def task_key(instance_id: str) -> str:
    """An instance id as a key that ignores case ("BurntSushi__ripgrep-1" is "burntsushi__ripgrep-1")."""
    return instance_id.strip().lower()


def task_key_of(repo: str, number: int) -> str:
    """The key of the task closed by pull request `number` of `repo` ("owner/name")."""
    owner, _, name = repo.partition("/")
    return task_key(f"{owner}__{name}-{number}")


def evaluation_task_keys(shared: Path) -> frozenset[str]:
    """The keys of every evaluation task in `shared` (the ../shared/data folder): SWE-ContextBench
    Lite's (its trajectories' index and its related tasks) and past-fixes dev's. Only their
    `instance_id` fields are read: these sets are never training input. A missing set is an
    error, not an empty exclusion."""
    lite = shared / "swe-contextbench-lite"
    ids = [str(row["instance_id"]) for row in json.loads((lite / "trajectories_index.json").read_text())]
    with (lite / "related_tasks.jsonl").open() as rows:
        ids += [str(json.loads(line)["instance_id"]) for line in rows if line.strip()]
    ids += [str(task["instance_id"]) for task in json.loads((shared / "past-fixes-dev" / "tasks.json").read_text())]
    return frozenset(task_key(i) for i in ids)


def is_never_repo(repo: str) -> bool:
    """Whether `repo` ("owner/name") is a held-out or dev repository, kept out of all training."""
    return repo.strip().lower() in NEVER_REPOS

