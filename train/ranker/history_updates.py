"""Dated projects mined from real public git histories: subjects whose value a later commit
replaces (a dependency's version, a CI or tool setting, a revert bringing a value back), so that
the relevance model learns time from real dates rather than from invented ones.

    python -m train.ranker.history_updates --mirrors /work/.mirror --out DIR

Each training repository (bare mirror `<mirrors>/<owner>+<name>/repo`) becomes one project in
the format of `train/ranker/projects/FORMAT.md` ("style": "commits", "split": "train"), which
`train.ranker.project_data` reads: its sessions are the commits that set a chosen subject's value
plus about as many commits of the same period that mention the subject's words without changing
it (distractors, so that word overlap alone does not find the answer), in author-time order, one
"user" message each (the commit's header, message and only the relevant hunks). The questions
(update, when, before, asof, multi) are labelled from the parsed diffs of the sessions actually
in the project, so a label is true of the text the model sees. Writes `DIR/projects/<owner>+<name>.json`
(the folder `project_data --projects` reads) and `DIR/summary.json`; nothing is cached anywhere else. Output is deterministic (seeded per
repository).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from train.data import is_never_repo

# The training histories this builder reads (never a held-out or dev repository: asserted).
REPOS = ("astropy/astropy", "catchorg/Catch2", "facebook/zstd", "fmtlib/fmt", "grpc/grpc-go",
         "nlohmann/json", "pydata/xarray", "pylint-dev/pylint", "pytest-dev/pytest", "sharkdp/fd",
         "simdjson/simdjson", "sphinx-doc/sphinx", "sympy/sympy", "tokio-rs/bytes", "tokio-rs/tracing",
         "zeromicro/go-zero", "anuraghazra/github-readme-stats")

# Files whose lines state a dependency's version or a tool's setting.
PATHSPECS = (":(glob)**/Cargo.toml", ":(glob)**/package.json", ":(glob)**/go.mod",
             ":(glob)**/pyproject.toml", ":(glob)**/setup.cfg", ":(glob)**/tox.ini",
             ":(glob)**/.pre-commit-config.yaml", ":(glob)**/*requirements*.txt",
             ":(glob).github/workflows/*")
# Paths whose manifests are not the project's own (vendored code, test fixtures).
FOREIGN = re.compile(r"(^|/)(node_modules|vendor|third_party|thirdparty|fixtures?|testdata|test_data)/")

MAX_SUBJECTS = 8          # subjects per repository
MAX_EVENTS = 5            # newest value-setting commits kept per subject
MAX_CHANGE_SESSIONS = 30  # value-setting commits per project (distractors fill up to MAX_SESSIONS)
MAX_SESSIONS = 60
DIFF_BUDGET = 3000        # characters of diff per session
SEP_COMMIT, SEP_FIELD = "\x1e", "\x1f"


@dataclass(frozen=True)
class Subject:
    """What a value belongs to: `key` identifies it across files, `short` and `noun` name it as a
    developer would ("numpy", "the numpy requirement"), `words` are what a message about it says."""

    key: str
    category: str  # "dep" or "setting"
    short: str
    noun: str
    words: tuple[str, ...]


@dataclass
class Hunk:
    """One hunk of a commit's diff, kept to render the session's relevant part."""

    path: str
    header: str
    lines: list[str]


@dataclass
class Commit:
    """A commit of the history: its header, message and (for manifest commits) parsed hunks."""

    sha: str
    author: str
    email: str
    time: int
    date: str
    subject: str
    body: str
    hunks: list[Hunk] = field(default_factory=list)
    # subject key -> (values removed, values added) over the whole commit
    edits: dict[str, tuple[set[str], set[str]]] = field(default_factory=dict)
    hunk_keys: list[set[str]] = field(default_factory=list)

    @property
    def reverts(self) -> str | None:
        """The sha this commit reverts, where its message says so."""
        m = re.search(r"This reverts commit ([0-9a-f]{7,40})", self.body)
        return m.group(1) if m else None


@dataclass
class Event:
    """A commit setting a subject's value: `old` is None for the value's first statement."""

    commit: Commit
    old: str | None
    new: str


def git(git_dir: Path, *args: str) -> str:
    """Run git on a bare repository and return its output (errors replaced, never raised on bytes)."""
    out = subprocess.run(["git", "--git-dir", str(git_dir), *args], capture_output=True, check=True)
    return out.stdout.decode("utf-8", "replace")


LOG_FORMAT = f"--format={SEP_COMMIT}%H{SEP_FIELD}%an{SEP_FIELD}%ae{SEP_FIELD}%at{SEP_FIELD}%ad{SEP_FIELD}%s{SEP_FIELD}%b{SEP_FIELD}"


def parse_log(text: str) -> list[Commit]:
    """Commits of `git log LOG_FORMAT [-p]` output, each with its diff split into hunks."""
    commits = []
    for chunk in text.split(SEP_COMMIT)[1:]:
        parts = chunk.split(SEP_FIELD)
        sha, author, email, t, date, subject, body, diff = (parts + [""] * 8)[:8]
        c = Commit(sha, author, email, int(t), date, subject, body.strip())
        path, hunk = "", None
        for line in diff.split("\n"):
            if line.startswith("diff --git "):
                path, hunk = line.rsplit(" b/", 1)[-1], None
            elif line.startswith("@@"):
                hunk = Hunk(path, line, [])
                c.hunks.append(hunk)
            elif hunk is not None and line[:1] in (" ", "-", "+") and not line.startswith(("--- ", "+++ ")):
                hunk.lines.append(line)
        commits.append(c)
    return commits


# ---------------------------------------------------------------------------------------------
# What a line states: (subject, value) pairs per file kind.

VERSIONISH = re.compile(r"^[\^~=<>!*]*\s*v?\d")
CARGO_DEP = re.compile(r'^\s*([A-Za-z0-9_-]+)\s*=\s*(?:"([^"]+)"|\{(.*)\})\s*(#.*)?$')
CARGO_VERSION = re.compile(r'\bversion\s*=\s*"([^"]+)"')
PIP_REQ = re.compile(r'^\s*["\']?([A-Za-z][A-Za-z0-9_.\-]*)(\[[^\]]*\])?\s*((?:===|==|>=|<=|!=|~=|<|>)\s*[^"\';#]+?)\s*["\']?,?\s*(#.*)?$')
JSON_DEP = re.compile(r'^\s*"(@?[A-Za-z0-9_./-]+)"\s*:\s*"([\^~<>=]*\d[^"]*)",?\s*$')
GO_REQ = re.compile(r"^\s*(?:require\s+)?([a-z0-9.\-]+\.[a-z]+/[A-Za-z0-9_./\-]+)\s+(v\d[^\s/]*)(\s*//.*)?$")
GO_DIRECTIVE = re.compile(r"^go\s+(\d+\.\d+(?:\.\d+)?)\s*$")
RUST_VERSION = re.compile(r'^\s*rust-version\s*=\s*"([^"]+)"')
PY_REQUIRES = re.compile(r'^\s*(?:python_requires|requires-python)\s*=\s*["\']?([^"\'#]+?)["\']?\s*$')
PRECOMMIT_REPO = re.compile(r"^\s*-\s*repo:\s*(\S+)")
PRECOMMIT_REV = re.compile(r"^\s*rev:\s*['\"]?([^'\"\s#]+)")
ACTION_USES = re.compile(r"^\s*(?:-\s*)?uses:\s*([A-Za-z0-9_.\-]+/[A-Za-z0-9_.\-/]+)@([^\s#]+)\s*(?:#\s*(\S+))?")
WF_SETTING = re.compile(r"^\s*(?:-\s*)?(python-version|go-version|node-version|rust-version|toolchain|runs-on)\s*:\s*(.+?)\s*(#.*)?$")
NOT_DEPS = {"version", "name", "edition", "description", "license", "python", "node", "npm", "rust-version",
            "authors", "readme", "repository", "homepage", "documentation", "keywords", "categories"}


def dep(name: str) -> Subject:
    """A dependency subject: named by its package, as a developer names it."""
    n = name.lower()
    return Subject(f"dep:{n}", "dep", name, f"the {name} requirement", (name,))


def setting(key: str, short: str, noun: str, *words: str) -> Subject:
    """A tool or CI setting subject."""
    return Subject(key, "setting", short, noun, words)


def states(path: str, line: str, context: dict[str, str]) -> tuple[Subject, str] | None:
    """The (subject, value) a manifest or config line states, if any. `context` carries the
    pre-commit hook repository seen last above the line (its `rev:` line does not name it)."""
    name = path.rsplit("/", 1)[-1]
    text = line.rstrip()
    if name == "Cargo.toml":
        if m := RUST_VERSION.match(text):
            return setting("msrv", "MSRV", "the minimum supported Rust version (MSRV)", "MSRV", "rust-version"), m.group(1)
        if (m := CARGO_DEP.match(text)) and m.group(1) not in NOT_DEPS:
            if m.group(2) is not None:
                value = m.group(2)
            else:
                inner = m.group(3) or ""
                if "path" in inner or not (v := CARGO_VERSION.search(inner)):
                    return None
                value = v.group(1)
            return (dep(m.group(1)), value) if VERSIONISH.match(value) else None
        return None
    if name == "package.json":
        if (m := JSON_DEP.match(text)) and m.group(1) not in NOT_DEPS:
            return dep(m.group(1)), m.group(2)
        return None
    if name == "go.mod":
        if m := GO_DIRECTIVE.match(text):
            return setting("go-directive", "Go version in go.mod", "the Go version go.mod declares", "go.mod", "Go"), m.group(1)
        if m := GO_REQ.match(text):
            return dep(m.group(1)), m.group(2)
        return None
    if name == ".pre-commit-config.yaml":
        if m := PRECOMMIT_REPO.match(text):
            context["repo"] = m.group(1)
            return None
        if (m := PRECOMMIT_REV.match(text)) and context.get("repo"):
            hook = context["repo"].rstrip("/").removesuffix(".git").rsplit("/", 1)[-1]
            hook = hook.removeprefix("mirrors-").removeprefix("pre-commit-").removesuffix("-pre-commit")
            return setting(f"pre-commit:{hook.lower()}", f"{hook} hook", f"the {hook} pre-commit hook's rev",
                           hook, "pre-commit"), m.group(1)
        return None
    if "/.github/workflows/" in f"/{path}":
        if m := ACTION_USES.match(text):
            # A sub-action (github/codeql-action/init, actions/cache/save) moves with its repository.
            action, value = "/".join(m.group(1).split("/")[:2]), m.group(2)
            if re.fullmatch(r"[0-9a-f]{40}", value):  # pinned by hash: its comment names the version
                if not (m.group(3) and VERSIONISH.match(m.group(3))):
                    return None
                value = m.group(3)
            return setting(f"action:{action.lower()}", action, f"the {action} action version", action.split("/")[-1]), value
        if m := WF_SETTING.match(text):
            key, value = m.group(1), m.group(2).strip().strip("'\"")
            if "${{" in value:
                return None
            if key == "runs-on":
                if not value.startswith("ubuntu-"):
                    return None
                return setting("runs-on:ubuntu", "Ubuntu runner", "the Ubuntu image CI runs on", "ubuntu", "runs-on"), value
            lang = {"python-version": "Python", "go-version": "Go", "node-version": "Node", "rust-version": "Rust",
                    "toolchain": "Rust"}[key]
            return setting(f"ci:{key}", f"{lang} version in CI", f"the {lang} version CI tests on", lang, key), value
        return None
    if name in ("pyproject.toml", "setup.cfg", "tox.ini") or (name.endswith(".txt") and "requirements" in name):
        if m := PY_REQUIRES.match(text):
            return setting("python-requires", "minimum Python", "the minimum supported Python version",
                           "python_requires", "Python"), m.group(1).strip()
        if (m := PIP_REQ.match(text)) and m.group(1).lower() not in NOT_DEPS and "=" not in m.group(1):
            value = re.sub(r"\s+", "", m.group(3))
            if re.search(r"\d", value):
                return dep(m.group(1)), value
    return None


def parse_edits(c: Commit, subjects: dict[str, Subject]) -> None:
    """Fill `c.edits` (per subject: values on removed and on added lines) and `c.hunk_keys`."""
    for h in c.hunks:
        keys: set[str] = set()
        if FOREIGN.search(h.path):
            c.hunk_keys.append(keys)
            continue
        ctx_old: dict[str, str] = {}
        ctx_new: dict[str, str] = {}
        for line in h.lines:
            sign, body = line[0], line[1:]
            found = None
            if sign in (" ", "-"):
                found = states(h.path, body, ctx_old)
            if sign in (" ", "+"):
                found = states(h.path, body, ctx_new) or found
            if found is None or sign == " ":
                continue
            subj, value = found
            subjects.setdefault(subj.key, subj)
            removed, added = c.edits.setdefault(subj.key, (set(), set()))
            (removed if sign == "-" else added).add(value)
            keys.add(subj.key)
        c.hunk_keys.append(keys)


def events_of(commits: list[Commit], key: str) -> list[Event] | None:
    """The subject's value-setting commits, oldest first, as the longest consistent run ending
    with the newest: each change's old value is the value the previous one set. None where the
    subject is not present at the end (removed) or its newest change is ambiguous (one commit
    setting several values)."""
    events: list[Event] = []
    for c in commits:
        if key not in c.edits:
            continue
        removed, added = c.edits[key]
        if removed == added:
            continue  # moved or reformatted, value unchanged
        if not added:
            events = []  # removed: a later statement starts a new run
            continue
        if len(added) != 1 or len(removed) > 1:
            events = [] if len(added) != 1 else [Event(c, None, next(iter(added)))]
            continue
        new = next(iter(added))
        old = next(iter(removed)) if removed else None
        if events and (old is None or old != events[-1].new):
            events = []  # inconsistent history (another file, a branch): restart here
        events.append(Event(c, old, new))
    last = next((c for c in reversed(commits) if key in c.edits and c.edits[key][0] != c.edits[key][1]), None)
    if not events or last is None or last is not events[-1].commit:
        return None
    return events


# ---------------------------------------------------------------------------------------------
# Questions: many phrasings per kind, chosen with the repository's seeded generator.

UPDATE_DEP = [
    "which version of {short} does {repo} depend on?",
    "what {short} version do we pin?",
    "{short} version in {file}?",
    "what's the {short} constraint in {repo}'s {file}?",
    "which {short} release is {repo} built against?",
    "remind me what {short} requirement we have",
    "what does {file} say for {short}?",
    "are we still on {short} {old}?",
    "is {repo} still pinned to {short} {old}?",
    "what {short} version is required these days?",
    "what's the latest {short} bump we did?",
    "which {short} do we require at the moment?",
    "{short}: which version?",
    "what version range of {short} does {repo} accept?",
]
UPDATE_SETTING = [
    "what is {noun} in {repo}?",
    "what's {noun}?",
    "remind me of {noun}",
    "which value do we use for the {short}?",
    "{short} for {repo}?",
    "are we still on {old} for the {short}?",
    "is {noun} still {old}?",
    "what did we set {noun} to?",
    "what's {noun} at this point?",
    "which {short} does {repo} use?",
    "what {short} are we on?",
    "has the {short} moved past {old}?",
    "what does the config say for the {short}?",
]
WHEN = [
    "when did {repo} move {noun} to {new}?",
    "when was {short} bumped to {new}?",
    "what date did {noun} become {new}?",
    "when did we switch the {short} to {new}?",
    "on which day did {short} go to {new}?",
    "when did {new} become {noun}?",
    "date of the change that set {noun} to {new}?",
    "how long ago did we update {short} to {new}?",
    "when did the {short} change to {new} land?",
    "which day was {short} changed from {old} to {new}?",
    "when did {repo} adopt {new} for the {short}?",
    "when was {noun} raised to {new}?",
]
BEFORE = [
    "what was {noun} before it became {new}?",
    "which {short} did we have before {new}?",
    "before the {new} change, what was the {short}?",
    "what did {new} replace for the {short}?",
    "what was the previous {short}, the one before {new}?",
    "what {short} did {repo} use prior to {new}?",
    "which value of {noun} did the move to {new} replace?",
    "what did the {short} say right before {new}?",
    "what were we on for {short} before switching to {new}?",
    "old {short} value before {new}?",
    "which {short} came before {new}?",
    "what had {noun} been until it was set to {new}?",
]
ASOF = [
    "what was {noun} on {date}?",
    "which {short} were we on in {month}?",
    "as of {date}, what was the {short}?",
    "back on {date}, which {short} did {repo} use?",
    "what {short} did we have around {date}?",
    "in {month}, what was {noun}?",
    "what was the {short} at the time, {date}?",
    "on {date} which value did {noun} have?",
    "which {short} applied on {date}?",
    "around {month} what did the config say for {short}?",
    "what was {repo}'s {short} as of {month}?",
    "what {short} was in effect on {date}?",
]
MULTI = [
    "list every {short} value {repo} has had",
    "what values has {noun} gone through?",
    "history of the {short} in {repo}?",
    "all the {short} versions we've used, in order?",
    "how has {noun} changed over time?",
    "which {short} values did we go through?",
    "every change to {noun}, please",
    "what were all the {short} settings over the project's life?",
    "trace the {short} across its bumps",
    "what sequence of values did {noun} take?",
    "how many times did the {short} change, and to what?",
    "give me the full {short} timeline",
]


def fill(template: str, subj: Subject, repo: str, **kw: str) -> str:
    """A question from a template; the first letter is upper-cased as a developer types it."""
    text = template.format(short=subj.short, noun=subj.noun, repo=repo.split("/")[1], **kw)
    return text[0].upper() + text[1:]


def day(t: int) -> str:
    """The UTC day of a Unix time, as FORMAT.md's "date" holds it."""
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d")


def questions_for(subj: Subject, events: list[Event], sid: dict[str, str], repo: str, file: str,
                  rng: random.Random) -> list[dict[str, Any]]:
    """The questions of one subject, labelled by the project's sessions that set its values."""
    ids = [sid[e.commit.sha] for e in events]
    values = [e.new for e in events]
    first_old = events[0].old
    old = values[-2] if len(values) > 1 else (first_old or values[0])
    out: list[dict[str, Any]] = []
    pool = UPDATE_DEP if subj.category == "dep" else UPDATE_SETTING
    for t in rng.sample(pool, 3):
        out.append({"question": fill(t, subj, repo, old=old, file=file), "kind": "update",
                    "sessions": [ids[-1]], "related": ids, "values": values})
    for i in rng.sample(range(len(events)), min(2, len(events))):
        e = events[i]
        prev = e.old or (values[i - 1] if i else "")
        pool_w = [t for t in WHEN if e.old or "{old}" not in t]
        out.append({"question": fill(rng.choice(pool_w), subj, repo, new=e.new, old=prev), "kind": "when",
                    "sessions": [ids[i]], "date": day(e.commit.time)})
    changes = [i for i in range(1, len(events)) if events[i].old is not None]
    if changes:
        i = rng.choice(changes)
        out.append({"question": fill(rng.choice(BEFORE), subj, repo, new=events[i].new), "kind": "before",
                    "sessions": [ids[i - 1], ids[i]], "values": [events[i].old, events[i].new]})
    gaps = [i for i in range(1, len(events)) if events[i].commit.time - events[i - 1].commit.time > 3 * 86400]
    if gaps:
        i = rng.choice(gaps)
        mid = (events[i - 1].commit.time + events[i].commit.time) // 2
        stamp = datetime.fromtimestamp(mid, UTC)
        # A month names one value only when neither change falls inside it.
        month_ok = day(events[i - 1].commit.time)[:7] < stamp.strftime("%Y-%m") < day(events[i].commit.time)[:7]
        pool_a = [t for t in ASOF if month_ok or "{month}" not in t]
        out.append({"question": fill(rng.choice(pool_a), subj, repo, date=stamp.strftime("%Y-%m-%d"),
                                     month=stamp.strftime("%B %Y")),
                    "kind": "asof", "sessions": [ids[i - 1]], "related": ids, "date": stamp.strftime("%Y-%m-%d"),
                    "values": [values[i - 1]]})
    out.append({"question": fill(rng.choice(MULTI), subj, repo), "kind": "multi", "sessions": ids, "values": values})
    return out


# ---------------------------------------------------------------------------------------------
# Rendering a commit as a session.

def render(c: Commit, hunks: list[Hunk]) -> str:
    """`git show`-like text: header, indented message, then the given hunks (a few KB at most)."""
    msg = "\n".join(f"    {line}" if line else "" for line in [c.subject, "", *c.body.split("\n")]).rstrip()
    parts = [f"commit {c.sha}\nAuthor: {c.author} <{c.email}>\nDate:   {c.date}\n\n{msg}\n"]
    size, path = 0, None
    for h in hunks:
        text = "\n".join([h.header, *h.lines[:40]])
        if size and size + len(text) > DIFF_BUDGET:
            break
        if h.path != path:
            parts.append(f"diff --git a/{h.path} b/{h.path}\n--- a/{h.path}\n+++ b/{h.path}")
            path = h.path
        parts.append(text[:DIFF_BUDGET])
        size += len(text)
    return "\n".join(parts).rstrip() + "\n"


def relevant_hunks(c: Commit, keys: set[str]) -> list[Hunk]:
    """The hunks of `c` that touch a chosen subject, first; then none other."""
    return [h for h, k in zip(c.hunks, c.hunk_keys, strict=False) if k & keys]


def mention_hunks(c: Commit, words: list[str]) -> list[Hunk]:
    """Hunks that mention one of `words` (else the first two), for a distractor's text."""
    pat = re.compile("|".join(re.escape(w) for w in words), re.I) if words else None
    hit = [h for h in c.hunks if pat and any(pat.search(line) for line in h.lines)]
    return hit or c.hunks[:2]


def distractors(git_dir: Path, chosen: list[tuple[Subject, list[Event]]], manifest: list[Commit],
                exclude: set[str], since: int, n: int, rng: random.Random) -> list[tuple[Commit, list[str]]]:
    """About `n` commits between `since` and the end that mention a chosen subject's words (in
    their message or in a manifest diff) without setting any chosen subject's value."""
    out: dict[str, tuple[Commit, list[str]]] = {}
    per = max(1, n // max(1, len(chosen)))
    for subj, _ in chosen:
        words = [w for w in subj.words if len(w) >= 2]
        cands: list[tuple[Commit, list[str]]] = []
        pat = re.compile("|".join(re.escape(w) for w in words), re.I)
        for c in manifest:
            if c.time >= since and c.sha not in exclude and any(pat.search(line) for h in c.hunks for line in h.lines):
                cands.append((c, words))
        args = ["log", "--no-merges", "-i", "--fixed-strings", f"--since={day(since)}", "-n", "200", LOG_FORMAT]
        for w in words:
            args.append(f"--grep={w}")
        for c in parse_log(git(git_dir, *args, "HEAD")):
            if c.sha not in exclude and c.time >= since:
                cands.append((c, words))
        uniq = sorted({c.sha: (c, ws) for c, ws in cands if c.sha not in out}.values(), key=lambda x: x[0].sha)
        for c, ws in rng.sample(uniq, min(per, len(uniq))):
            out[c.sha] = (c, ws)
    picked = sorted(out.values(), key=lambda x: x[0].sha)
    return rng.sample(picked, min(n, len(picked)))


def with_diff(git_dir: Path, c: Commit) -> Commit:
    """`c` with its own diff parsed (a distractor found by its message carries none yet)."""
    if c.hunks:
        return c
    text = git(git_dir, "show", "--no-color", "-U2", LOG_FORMAT, "--no-ext-diff", c.sha)
    full = parse_log(text)
    return full[0] if full else c


# ---------------------------------------------------------------------------------------------

def build_project(git_dir: Path, repo: str, seed: int | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """One repository's project (FORMAT.md) and its summary row."""
    assert not is_never_repo(repo), f"{repo} is held out of training"
    rng = random.Random(zlib.crc32(repo.encode()) if seed is None else seed)
    text = git(git_dir, "log", "--no-merges", "-p", "-U3", "--no-color", "--no-ext-diff", "--no-renames",
               LOG_FORMAT, "HEAD", "--", *PATHSPECS)
    commits = sorted(parse_log(text), key=lambda c: (c.time, c.sha))
    subjects: dict[str, Subject] = {}
    for c in commits:
        parse_edits(c, subjects)
    files: dict[str, str] = {}
    for c in commits:
        for h, keys in zip(c.hunks, c.hunk_keys, strict=False):
            for k in keys:
                files.setdefault(k, h.path.rsplit("/", 1)[-1])
    cands: list[tuple[Subject, list[Event]]] = []
    for key, subj in subjects.items():
        ev = events_of(commits, key)
        if ev and len(ev) >= 2:
            cands.append((subj, ev[-MAX_EVENTS:]))
    # Prefer subjects with 3+ values, then recent activity, taking kinds in turn (a dependency,
    # a pre-commit hook, an action, a CI setting, the MSRV...) so that no kind of bump fills a project.
    cands.sort(key=lambda x: (-(len(x[1]) >= 3), -x[1][-1].commit.time, x[0].key))
    groups: dict[str, list[tuple[Subject, list[Event]]]] = {}
    for x in cands:
        groups.setdefault(x[0].key.split(":")[0], []).append(x)
    order = [g[i] for i in range(max((len(g) for g in groups.values()), default=0))
             for g in sorted(groups.values(), key=lambda g: (-(len(g[0][1]) >= 3), g[0][0].key)) if i < len(g)]
    chosen: list[tuple[Subject, list[Event]]] = []
    shas: set[str] = set()
    for subj, ev in order:
        if len(chosen) >= MAX_SUBJECTS:
            break
        new = shas | {e.commit.sha for e in ev}
        if len(new) > MAX_CHANGE_SESSIONS:
            continue
        chosen.append((subj, ev))
        shas = new
    keys = {s.key for s, _ in chosen}
    by_sha = {c.sha: c for c in commits}
    # Every commit that touches a chosen subject's lines is kept out of the distractors.
    touching = {c.sha for c in commits if keys & set(c.edits)}
    since = min((e.commit.time for _, ev in chosen for e in ev), default=0)
    n_dis = min(len(shas), MAX_SESSIONS - len(shas))
    extra = distractors(git_dir, chosen, commits, touching, since, n_dis, rng) if chosen else []
    sessions_c = sorted([by_sha[s] for s in shas] + [with_diff(git_dir, c) for c, _ in extra], key=lambda c: (c.time, c.sha))
    sid = {c.sha: f"s{i + 1:02d}" for i, c in enumerate(sessions_c)}
    words = {c.sha: w for c, w in extra}
    sessions = []
    for c in sessions_c:
        hunks = relevant_hunks(c, keys) if c.sha in shas else mention_hunks(c, words.get(c.sha, []))
        sessions.append({"id": sid[c.sha], "date": datetime.fromtimestamp(c.time, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                         "messages": [{"role": "user", "content": render(c, hunks), "timestamp": c.time * 1000}]})
    # Labels from the project's own sessions: a subject's events are its value-setting commits
    # that are sessions (another subject's commit may set it too: it was kept by `events_of`).
    questions: list[dict[str, Any]] = []
    rows = []
    for subj, _ in chosen:
        # The newest run of value-setting commits that are all sessions: a "before" names the
        # commit that really set the replaced value, never one further back.
        ev_in: list[Event] = []
        for e in reversed(events_of(commits, subj.key) or []):
            if e.commit.sha not in sid:
                break
            ev_in.insert(0, e)
        questions += questions_for(subj, ev_in, sid, repo, files.get(subj.key, "the manifest"), rng)
        rows.append({"subject": subj.short, "key": subj.key, "values": [e.new for e in ev_in],
                     "sessions": [sid[e.commit.sha] for e in ev_in],
                     "reverts": sum(1 for e in ev_in if e.commit.reverts)})
    project = {"project": repo.split("/")[1].lower(), "split": "train", "style": "commits", "source": repo,
               "sessions": sessions, "questions": questions}
    summary = {"subjects": rows, "changes": len(shas), "sessions": len(sessions), "questions": len(questions),
               "distractors": len(extra)}
    return project, summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mirrors", type=Path, required=True, help="folder of bare mirrors <owner>+<name>/repo")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--repo", action="append", help="only these repositories (owner/name); default all")
    args = ap.parse_args(argv)
    repos = args.repo or list(REPOS)
    for repo in repos:
        assert not is_never_repo(repo), f"{repo} is held out of training"
        if repo not in REPOS:
            raise SystemExit(f"{repo} is not one of this builder's training histories")
        if not (args.mirrors / repo.replace("/", "+") / "repo").is_dir():
            print(f"missing mirror: {args.mirrors / repo.replace('/', '+') / 'repo'}", file=sys.stderr)
            return 2
    projects = args.out / "projects"
    projects.mkdir(parents=True, exist_ok=True)
    summary: dict[str, Any] = {}
    for repo in repos:
        project, row = build_project(args.mirrors / repo.replace("/", "+") / "repo", repo)
        if project["sessions"]:  # a history with no subject that changed twice gives no project
            (projects / f"{repo.replace('/', '+')}.json").write_text(json.dumps(project, indent=1))
        summary[repo] = row
        print(f"{repo}: {len(row['subjects'])} subjects, {row['changes']} changes, {row['sessions']} sessions, "
              f"{row['questions']} questions", flush=True)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
