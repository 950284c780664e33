"""Where the past-fix training tasks come from: public bug reports, each linked to the pull
request that fixed it, read into one shape.

A task is ``{instance_id, repo, language, number, problem_statement, patch, base_sha}``:
``number`` is the fixing pull request, ``patch`` its diff (what the content match of
``train.past_fixes.gold`` compares with), ``base_sha`` the commit it was written against.

- **SWE-bench Verified** (``../shared/data/swe-verified-reuse``, Python, MIT): the task's
  report is its ``problem_statement``.
- **Multi-SWE-bench** (ByteDance, CC0; Go, Rust, C, C++, JavaScript, TypeScript, Java): each
  row is a merged pull request with the issues it resolved. The report is those issues' titles
  and bodies, written before the fix; never the pull request's own title or body, which
  describe the fix. An issue numbered above its pull request was opened after the pull
  request and is not read; a row left with no issue is left out. The dataset's files are read
  from a public copy in git (``MSB_REPO`` at ``MSB_COMMIT``, fetched with the search tool's
  ``fetch``); files stored there as Git LFS pointers (cli/cli, clap, nushell, svelte, vuejs,
  material-ui, ponyc) or over the fetch tool's 4 MiB file limit are not in it.

Every source goes through ``keep``: a task of a held-out or dev repository, or whose instance
id is an evaluation task's (SWE-ContextBench Lite, past-fixes dev), never enters the data.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from train.data import is_never_repo, refuse_evaluation_data, task_key, task_key_of

Task = dict[str, Any]

MSB_REPO = "kuppireddypravalika/MSWE-validation-dataset"  # a copy of Multi-SWE-bench's files in git
MSB_COMMIT = "f3788671b1be72292be1b3dfc61063f97dd474a0"
MSB_DIR = "MSWE-agent/data"
# Multi-SWE-bench's language folders, by the language a task's repository is written in.
MSB_LANGUAGES = {"c": "C", "cpp": "C++", "go": "Go", "rust": "Rust", "js": "JavaScript", "ts": "TypeScript",
                 "java": "Java"}


def swe_verified(path: Path) -> Iterator[Task]:
    """The SWE-bench Verified training tasks (`swe-verified-reuse/tasks.jsonl`)."""
    refuse_evaluation_data(path)
    for line in path.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            yield {"instance_id": row["instance_id"], "repo": row["repo"], "language": "Python",
                   "number": int(row["number"]), "problem_statement": row["problem_statement"],
                   "patch": row.get("patch", ""), "base_sha": row.get("base_commit", "")}


def issue_report(pull: int, issues: list[dict[str, Any]]) -> str:
    """The bug report of a pull request: the titles and bodies of the issues it resolved that
    were opened before it (a lower number), as an issue page shows them."""
    parts = []
    for issue in issues:
        if int(issue.get("number") or 0) >= pull:
            continue
        text = f"{(issue.get('title') or '').strip()}\n\n{(issue.get('body') or '').strip()}".strip()
        if text:
            parts.append(text.replace("\r\n", "\n"))
    return "\n\n".join(parts)


def multi_swe_bench_row(row: dict[str, Any], language: str) -> Task | None:
    """One Multi-SWE-bench row as a task, or None where no issue opened before the pull request
    says what was wrong."""
    number = int(row["number"])
    report = issue_report(number, row.get("resolved_issues") or [])
    if not report:
        return None
    patch = "\n".join(p for p in (row.get("fix_patch") or "", row.get("test_patch") or "") if p)
    return {"instance_id": row["instance_id"], "repo": f"{row['org']}/{row['repo']}", "language": language,
            "number": number, "problem_statement": report, "patch": patch,
            "base_sha": (row.get("base") or {}).get("sha", "")}


def multi_swe_bench(git_dir: Path, commit: str = MSB_COMMIT) -> Iterator[Task]:
    """Every task of the Multi-SWE-bench files in the fetched copy `git_dir` (at `commit`)."""
    listing = subprocess.run(["git", "-C", str(git_dir), "ls-tree", "-r", "--name-only", commit, MSB_DIR],
                             capture_output=True, text=True, check=True).stdout.split()
    for path in listing:
        folder, _, name = path.removeprefix(MSB_DIR + "/").partition("/")
        if folder not in MSB_LANGUAGES or not name.endswith("_dataset.jsonl"):
            continue
        shown = subprocess.run(["git", "-C", str(git_dir), "show", f"{commit}:{path}"], capture_output=True, text=True)
        if shown.returncode != 0 or shown.stdout.startswith("version https://git-lfs"):
            continue  # over the fetch tool's file size limit, or a Git LFS pointer: no rows in the copy
        text = shown.stdout
        for line in text.splitlines():
            if line.strip():
                task = multi_swe_bench_row(json.loads(line), MSB_LANGUAGES[folder])
                if task is not None:
                    yield task


def keep(tasks: Iterable[Task], evaluation_keys: frozenset[str]) -> list[Task]:
    """The tasks that may be training data: none of a held-out or dev repository, none that is
    an evaluation task (by instance id or by repository and pull request, whatever their case),
    each pull request once."""
    out: list[Task] = []
    seen: set[str] = set()
    for task in tasks:
        keys = {task_key(task["instance_id"]), task_key_of(task["repo"], task["number"])}
        if is_never_repo(task["repo"]) or keys & evaluation_keys or keys & seen:
            continue
        seen |= keys
        out.append(task)
    return out
