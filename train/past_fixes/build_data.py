"""Training data for commit relevance: public bug reports turned into past-fix tasks over their
repositories' real histories, as `../shared/data/past-fixes-dev` is built.

    nice -n 10 python -m train.past_fixes.build_data --out DIR/pastfix       # ~70 min here

(`make train` runs it as its `pastfix` step, into the training cache: `train/README.md`.)

The tasks (`train.past_fixes.sources`): SWE-bench Verified's (Python) and Multi-SWE-bench's
(Go, Rust, C, C++, JavaScript), none of a held-out or dev repository and none that is an
evaluation task. Each task's gold is the change of its repository's first-parent line that
fixed it (`train.past_fixes.gold`: the change naming its pull request, else the oldest change
after its base holding most of the pull request's added lines). Tasks with no gold, or whose
gold the import could not store (its diff needs an object the fetched history lacks), are
left out.

Each repository's memory is a window of its first-parent line: from `MARGIN` changes above its
newest gold change down to `MARGIN` below its oldest, imported with `ingest_git` into its own
data directory and user id (`pastfixes-<name>`, what `train.ranker.commit_data` searches). A
window of 1,000 to 5,000 changes is the size of the histories a past-fixes query meets (the
dev set's 2,200-4,100, the held-out repositories'). As in the dev set, the memory holds the
changes after the fix too.

Written to `--out`: `tasks.json` (`instance_id`, `repo`, `language`, `pull_number`,
`problem_statement`, `gold_commits`, `gold_rule`: the past-fixes dev set's shape, plus the
language and how the gold was found), `windows.json` (each repository's tip, window, task
counts and import time) and `store/`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from codemem.importers.git import ingest_git
from codemem.memory import Memory
from codemem.store.schema import key_of
from eval._paths import SHARED_DATA
from train.data import evaluation_task_keys, is_never_repo
from train.encoder import step_settings
from train.past_fixes.gold import Change, find_gold, mainline
from train.past_fixes.sources import MSB_REPO, Task, keep, multi_swe_bench, swe_verified

DATA = SHARED_DATA / "swe-verified-reuse" / "tasks.jsonl"
# The histories imported, each fetched with the search tool's `fetch` into
# <mirrors>/<owner>+<name>/repo and walked from its default branch. Left out: django,
# matplotlib and scikit-learn (over the fetch size limit), seaborn (two tasks); iamkun/dayjs,
# whose first-parent line is release merges of dozens of pull requests each (2 of its 56
# pull requests are named on it); the Multi-SWE-bench repositories with three tasks or fewer
# here (expressjs/express's fixes reach its default branch only in release merges) and its
# Java ones (five or six tasks each; jackson-core cannot be fetched).
HISTORIES = (
    "facebook/zstd", "grpc/grpc-go", "zeromicro/go-zero", "tokio-rs/tracing", "sharkdp/fd", "tokio-rs/bytes",
    "anuraghazra/github-readme-stats", "fmtlib/fmt", "nlohmann/json", "simdjson/simdjson", "catchorg/Catch2",
    "sphinx-doc/sphinx", "pytest-dev/pytest", "pydata/xarray", "pylint-dev/pylint", "astropy/astropy", "sympy/sympy",
)
MARGIN = 300  # changes above the newest and below the oldest gold change


def mirror(mirrors: Path, repo: str) -> Path:
    """Where the search tool's `fetch` put `repo`'s git directory."""
    return mirrors / repo.replace("/", "+") / "repo"


def window_clone(git_dir: Path, tip: str, dest: Path) -> Path:
    """A clone sharing `git_dir`'s objects whose HEAD is `tip` (what the import walks from)."""
    if not dest.exists():
        subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", str(git_dir), str(dest)], check=True)
    subprocess.run(["git", "-C", str(dest), "update-ref", "refs/heads/window", tip], check=True)
    subprocess.run(["git", "-C", str(dest), "symbolic-ref", "HEAD", "refs/heads/window"], check=True)
    return dest


def gold_tasks(git_dir: Path, tasks: list[Task]) -> tuple[list[Change], list[dict[str, Any]]]:
    """The repository's line and its tasks that have a gold, in the written shape (with the gold's
    position under `_position`, dropped before writing)."""
    line = mainline(git_dir)
    gold = find_gold(git_dir, tasks, line)
    out = [{"instance_id": t["instance_id"], "repo": t["repo"], "language": t["language"],
            "pull_number": int(t["number"]), "problem_statement": t["problem_statement"],
            "gold_commits": [line[gold[t["instance_id"]].position].sha],
            "gold_rule": gold[t["instance_id"]].rule, "_position": gold[t["instance_id"]].position}
           for t in tasks if t["instance_id"] in gold]
    return line, out


def import_window(git_dir: Path, line: list[Change], top: int, bottom: int, out: Path, name: str
                  ) -> tuple[int, float, set[str]]:
    """Import the changes from position `top` down to `bottom` into `out/store/<name>` as user
    `pastfixes-<name>`; returns the changes added, the seconds it took and the commits the
    stored experiences hold (a change whose diff needs an object the fetched history lacks is
    not stored)."""
    clone = window_clone(git_dir, line[top].sha, out / "repos" / name)
    memory = Memory(step_settings(out / "store" / name))
    try:
        t0 = time.perf_counter()
        user_id = f"pastfixes-{name}"
        report = ingest_git(memory, str(clone), user_id, max_commits=bottom - top + 1, progress=False)
        took = time.perf_counter() - t0
        cards = memory.store.user_rows(key_of(user_id), "card", ["metadata"])
        stored = {sha for card in cards for sha in json.loads(str(card["metadata"])).get("commits", [])}
        return report.added, took, stored
    finally:
        memory.close()


def load_tasks(data: Path, mirrors: Path) -> list[Task]:
    """Every source's tasks, the evaluation's kept out."""
    tasks = [*swe_verified(data), *multi_swe_bench(mirror(mirrors, MSB_REPO))]
    return keep(tasks, evaluation_task_keys(SHARED_DATA))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"), help="the fetched git directories")
    ap.add_argument("--data", type=Path, default=DATA, help="the SWE-bench Verified training tasks")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--only", default="", help="comma-separated repository names to build (default: all); "
                    "the other repositories' tasks already in --out stay")
    ap.add_argument("--names", action="store_true",
                    help="print the names of the repositories built in --out (for past_fixes_cv --only) and stop")
    args = ap.parse_args(argv)
    if args.names:
        print(",".join(repo.split("/")[1] for repo in json.loads((args.out / "windows.json").read_text())))
        return 0
    assert not any(is_never_repo(repo) for repo in HISTORIES)
    tasks = load_tasks(args.data, args.mirrors)
    only = {s for s in args.only.split(",") if s}
    args.out.mkdir(parents=True, exist_ok=True)
    windows: dict[str, Any] = {}
    for repo in HISTORIES:
        name = repo.split("/")[1]
        if only and name not in only:
            continue
        mine = [t for t in tasks if t["repo"] == repo]
        git_dir = mirror(args.mirrors, repo)
        line, found = gold_tasks(git_dir, mine)
        if not found:
            continue
        positions = [t.pop("_position") for t in found]
        top, bottom = max(min(positions) - MARGIN, 0), min(max(positions) + MARGIN, len(line) - 1)
        added, took, stored = import_window(git_dir, line, top, bottom, args.out, name)
        found = [t for t in found if set(t["gold_commits"]) & stored]
        windows[repo] = {"language": mine[0]["language"], "tip": line[top].sha, "changes": bottom - top + 1,
                         "added": added, "tasks": len(mine), "with_gold": len(found),
                         "gold_by_pr": sum(t["gold_rule"] == "pr" for t in found), "import_s": round(took, 1)}
        print(f"{repo}: {len(found)} of {len(mine)} tasks, {added} changes in {took:.0f} s", flush=True)
        write(args.out, repo, found, windows[repo])
    return 0


def write(out: Path, repo: str, tasks: list[dict[str, Any]], window: dict[str, Any]) -> None:
    """Put `repo`'s tasks and window into `out`'s tasks.json and windows.json, in place of any
    it had there and beside the other repositories' (so that builds of some repositories, one
    after another or at once, add up to one data set)."""
    tasks_path, windows_path = out / "tasks.json", out / "windows.json"
    old_tasks = json.loads(tasks_path.read_text()) if tasks_path.exists() else []
    old_windows = json.loads(windows_path.read_text()) if windows_path.exists() else {}
    _replace(tasks_path, [t for t in old_tasks if t["repo"] != repo] + tasks)
    _replace(windows_path, {**{r: w for r, w in old_windows.items() if r != repo}, repo: window})


def _replace(path: Path, data: Any) -> None:
    """Write `path` whole or not at all (a reader never sees half a file)."""
    part = path.with_suffix(f".{os.getpid()}.part")
    part.write_text(json.dumps(data, indent=1))
    part.replace(path)


if __name__ == "__main__":
    raise SystemExit(main())
