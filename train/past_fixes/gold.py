"""A past-fix task's gold: the change of its repository's first-parent line that fixed it, the
change `codemem ingest-git` stores as one experience (a merged pull request is one change).

Two rules, in this order (the past-fixes dev set's, on the first-parent line):

1. **The pull request's name.** The change whose subject names the task's pull request
   ("Merge pull request #N ...", a squash's "... (#N)", `codemem.git.facts.pr_number`).
2. **The content.** Where no subject names it (a pull request rebased or squashed onto the
   line without its number): the oldest of the `LOOKAHEAD` changes after the pull request's
   base commit whose added lines hold at least `COVER` of the lines the pull request adds (a
   later one that holds them too moves them: a refactor). Merges are not searched: a merge
   whose subject names no pull request brings in a branch (a release line, a developer's
   sync) and with it dozens of fixes, no one report's answer. A pull request that adds fewer
   than `MIN_LINES` such lines is too small to recognise by content.

A line counts when it says something: stripped, at least `MIN_CHARS` long, with a letter or a
digit ("}" or "end" match anything).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codemem.git.facts import pr_number

COVER = 0.6  # the share of a pull request's added lines a change must hold (past-fixes dev's)
LOOKAHEAD = 300  # changes after the base commit searched by content
MIN_LINES = 3
MIN_CHARS = 4
_SAYS = re.compile(r"\w")
_DIFF = ("-U0", "--no-color", "--no-ext-diff")


@dataclass(frozen=True)
class Change:
    sha: str
    subject: str
    time: int  # committer time, seconds
    merge: bool = False


@dataclass(frozen=True)
class Gold:
    position: int  # on the line, newest first
    rule: str  # "pr" or "content"


def mainline(git_dir: Path, ref: str = "HEAD") -> list[Change]:
    """The first-parent line from `ref`, newest first."""
    out = subprocess.run(["git", "-C", str(git_dir), "log", "--first-parent", "--format=%H%x00%ct%x00%P%x00%s", ref],
                         capture_output=True, text=True, errors="replace", check=True).stdout
    changes = []
    for line in out.splitlines():
        sha, time, parents, subject = line.split("\0", 3)
        changes.append(Change(sha, subject, int(time), merge=len(parents.split()) > 1))
    return changes


def by_pull_request(tasks: Iterable[dict[str, Any]], line: list[Change]) -> dict[str, int]:
    """Rule 1: each task's change whose subject names its pull request (the newest such)."""
    by_pr: dict[int, int] = {}
    for i, change in enumerate(line):
        n = pr_number(change.subject)
        if n is not None:
            by_pr.setdefault(n, i)
    return {t["instance_id"]: by_pr[int(t["number"])] for t in tasks if int(t["number"]) in by_pr}


def added_lines(diff: str) -> set[str]:
    """The lines a unified diff adds that say something."""
    out = set()
    for line in diff.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            text = line[1:].strip()
            if len(text) >= MIN_CHARS and _SAYS.search(text):
                out.add(text)
    return out


def change_diffs(git_dir: Path, line: list[Change], top: int, bottom: int) -> dict[int, set[str]]:
    """The added lines of each change from position `top` down to `bottom` (a merge's against
    its first parent), by position. A change whose diff needs an object the fetched history
    lacks (the fetch tool leaves out files of 4 MiB and more) has none."""
    done = subprocess.run(["git", "-C", str(git_dir), "log", "--first-parent", "--diff-merges=first-parent", "-p",
                           *_DIFF, "--format=%x00%H", f"-n{bottom - top + 1}", line[top].sha],
                          capture_output=True, text=True, errors="replace")
    if done.returncode != 0:  # an object is missing: one change at a time
        return {i: added_lines(_diff(git_dir, line[i].sha)) for i in range(top, bottom + 1)}
    position = {line[i].sha: i for i in range(top, bottom + 1)}
    diffs: dict[int, set[str]] = {}
    for record in done.stdout.split("\0")[1:]:
        sha, _, diff = record.partition("\n")
        if sha.strip() in position:
            diffs[position[sha.strip()]] = added_lines(diff)
    return diffs


def _diff(git_dir: Path, sha: str) -> str:
    """One change's diff against its first parent ("" where git cannot make it)."""
    done = subprocess.run(["git", "-C", str(git_dir), "diff", *_DIFF, f"{sha}^1", sha],
                          capture_output=True, text=True, errors="replace")
    return done.stdout if done.returncode == 0 else ""


def base_position(git_dir: Path, line: list[Change], base_sha: str) -> int | None:
    """Where the pull request's base commit sits in time on the line: the position of the newest
    change committed no later than it (len(line) where none is), None where the history lacks it."""
    if not base_sha:
        return None
    done = subprocess.run(["git", "-C", str(git_dir), "show", "-s", "--format=%ct", base_sha + "^{commit}"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        return None
    base_time = int(done.stdout.strip())
    return next((i for i, change in enumerate(line) if change.time <= base_time), len(line))


def by_content(git_dir: Path, tasks: list[dict[str, Any]], line: list[Change]) -> dict[str, int]:
    """Rule 2: each task's oldest change, not a merge, holding at least COVER of its pull
    request's added lines, among the LOOKAHEAD changes after its base commit."""
    wanted: dict[str, tuple[set[str], int, int]] = {}
    for task in tasks:
        lines = added_lines(task.get("patch") or "")
        base = base_position(git_dir, line, task.get("base_sha") or "")
        if len(lines) >= MIN_LINES and base is not None and base > 0:
            wanted[task["instance_id"]] = (lines, max(base - LOOKAHEAD, 0), base - 1)
    if not wanted:
        return {}
    diffs = change_diffs(git_dir, line, min(w[1] for w in wanted.values()), max(w[2] for w in wanted.values()))
    gold = {}
    for instance_id, (lines, top, bottom) in wanted.items():
        hits = [i for i in range(top, bottom + 1)
                if not line[i].merge and len(lines & diffs.get(i, set())) >= COVER * len(lines)]
        if hits:
            gold[instance_id] = max(hits)
    return gold


def find_gold(git_dir: Path, tasks: list[dict[str, Any]], line: list[Change]) -> dict[str, Gold]:
    """Each task's gold on `line`: rule 1, else rule 2; tasks neither finds are not in it."""
    named = by_pull_request(tasks, line)
    gold = {i: Gold(p, "pr") for i, p in named.items()}
    rest = [t for t in tasks if t["instance_id"] not in named]
    gold.update({i: Gold(p, "content") for i, p in by_content(git_dir, rest, line).items()})
    return gold
