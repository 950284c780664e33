"""Training data for the commit-only search knobs: SWE-bench Verified tasks turned into past-fix
tasks over their repositories' real histories, as `../shared/data/past-fixes-dev` is built.

    python -m train.past_fixes.build_data --mirrors /work/.mirror --out /work/svr      # ~15 min
    python -m eval.quality.past_fixes_cv --store /work/svr/store --tasks /work/svr/tasks.json \
        --only sphinx,pytest,xarray,pylint,astropy,sympy --out /work/svr/cv.json

Each task of `swe-verified-reuse` (tasks only, never an evaluation set) was closed by a pull
request whose number is the task's `number`. Its gold change is the change of the repository's
first-parent line whose subject names that pull request ("Merge pull request #N ..." or a
squash's "... (#N)", `codemem.git.facts.pr_number`): the change `codemem ingest-git` stores as
one experience, with the merged branch's commits. Tasks whose pull request no mainline subject
names are left out (django's history, which names tickets, is also too large to fetch here).

Each repository's memory is a window of its first-parent line: from 300 changes above its newest
gold change down to 300 below its oldest, imported with `ingest_git` into its own data directory
and user id (`pastfixes-<name>`, what `eval.quality.past_fixes_cv` reads). A window of 1,000 to
5,000 changes is the size of the histories a past-fixes query meets (the dev set's 2,200-4,100,
the held-out repositories'); the whole sympy or astropy line would take an hour to import here.
As in the dev set, the memory holds the changes after the fix too.

Written: `tasks.json` (`instance_id`, `repo`, `problem_statement`, `gold_commits`: the past-fixes
dev set's shape), `windows.json` (each repository's tip, window and task count) and `store/`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from pathlib import Path
from typing import Any

from codemem.config import Settings
from codemem.git.facts import pr_number
from codemem.importers.git import ingest_git
from codemem.memory import Memory
from eval._paths import SHARED_DATA
from train.data import refuse_evaluation_data

DATA = SHARED_DATA / "swe-verified-reuse" / "tasks.jsonl"
# The repositories of the data whose history the search tool could fetch (django, matplotlib
# and scikit-learn are over its size limit; seaborn has two tasks), by their fetched name.
MIRRORS = {"sphinx-doc/sphinx": "sphinx-doc+sphinx", "pytest-dev/pytest": "pytest-dev+pytest",
           "pydata/xarray": "pydata+xarray", "pylint-dev/pylint": "pylint-dev+pylint",
           "astropy/astropy": "astropy+astropy", "sympy/sympy": "sympy+sympy"}
MARGIN = 300  # changes above the newest and below the oldest gold change
# Never fetched: the held-out checks' repositories.
HELD_OUT = ("gin-gonic/gin", "sharkdp/bat", "jqlang/jq", "axios/axios", "psf/requests", "pallets/flask")


def mainline(git_dir: Path) -> list[tuple[str, str]]:
    """The first-parent line from HEAD, newest first: (sha, subject)."""
    out = subprocess.run(["git", "-C", str(git_dir), "log", "--first-parent", "--format=%H%x00%s", "HEAD"],
                         capture_output=True, text=True, errors="replace", check=True).stdout
    return [tuple(line.split("\0", 1)) for line in out.splitlines()]  # type: ignore[misc]


def gold_changes(tasks: list[dict[str, Any]], line: list[tuple[str, str]]) -> dict[str, int]:
    """Each task's gold change as its position on `line`, for the tasks whose PR a subject names."""
    by_pr: dict[int, int] = {}
    for i, (_, subject) in enumerate(line):
        n = pr_number(subject)
        if n is not None:
            by_pr.setdefault(n, i)
    return {t["instance_id"]: by_pr[t["number"]] for t in tasks if t["number"] in by_pr}


def window_clone(git_dir: Path, tip: str, dest: Path) -> Path:
    """A clone sharing `git_dir`'s objects whose HEAD is `tip` (what the import walks from)."""
    if not dest.exists():
        subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", str(git_dir), str(dest)], check=True)
    subprocess.run(["git", "-C", str(dest), "update-ref", "refs/heads/window", tip], check=True)
    subprocess.run(["git", "-C", str(dest), "symbolic-ref", "HEAD", "refs/heads/window"], check=True)
    return dest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"), help="the fetched git directories")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    refuse_evaluation_data(args.data)
    tasks = [json.loads(line) for line in args.data.read_text().splitlines() if line.strip()]
    args.out.mkdir(parents=True, exist_ok=True)
    out_tasks: list[dict[str, Any]] = []
    windows: dict[str, Any] = {}
    for repo, mirror in MIRRORS.items():
        assert repo not in HELD_OUT
        name = repo.split("/")[1]
        git_dir = args.mirrors / mirror / "repo"
        line = mainline(git_dir)
        mine = [t for t in tasks if t["repo"] == repo]
        gold = gold_changes(mine, line)
        if not gold:
            continue
        top, bottom = max(min(gold.values()) - MARGIN, 0), min(max(gold.values()) + MARGIN, len(line) - 1)
        clone = window_clone(git_dir, line[top][0], args.out / "repos" / name)
        memory = Memory(Settings.from_env({}, overrides={"storage.data_dir": str(args.out / "store" / name),
                                                          "maintenance.interval_s": 0}))
        try:
            t0 = time.perf_counter()
            report = ingest_git(memory, str(clone), f"pastfixes-{name}", max_commits=bottom - top + 1, progress=False)
            took = time.perf_counter() - t0
        finally:
            memory.close()
        windows[repo] = {"tip": line[top][0], "changes": bottom - top + 1, "added": report.added,
                         "tasks": len(mine), "with_gold": len(gold), "import_s": round(took, 1)}
        print(f"{repo}: {len(gold)} of {len(mine)} tasks, {report.added} changes in {took:.0f} s", flush=True)
        out_tasks += [{"instance_id": t["instance_id"], "repo": repo, "problem_statement": t["problem_statement"],
                       "gold_commits": [line[gold[t["instance_id"]]][0]]} for t in mine if t["instance_id"] in gold]
    (args.out / "tasks.json").write_text(json.dumps(out_tasks, indent=1))
    (args.out / "windows.json").write_text(json.dumps(windows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
