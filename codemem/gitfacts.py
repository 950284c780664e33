"""What a change says about itself, read from its messages and its diff: the pull request it
came from, the issues it closes or mentions, the tests it adds or changes and the error strings
it touches.

A bug report and the change that fixed it rarely share their prose; what links them is the
code: the issue number, the test named after the bug, the error message the report quotes.
These facts go on the experience card (for the reader) and into the references index (for
code-location matching). Pure functions over text, so they are cheap and testable alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from parsers.types import DiffFile, unique

__all__ = ["ChangeFacts", "change_facts", "is_test_path", "pr_number"]

MAX_TESTS = 24
MAX_ERROR_STRINGS = 12

# "Merge pull request #12 from user/branch" (GitHub), "Merge branch 'x'" (no number).
_MERGE_PR = re.compile(r"^Merge pull request #(\d+)\b")
# A squash subject ends with the PR number: "Fix the lexer (#5930)".
_SQUASH_PR = re.compile(r"\(#(\d+)\)\s*$")
# Fixes #1, fixed: #2, Closes owner/repo#3, Resolves #4, Refs #5, "Fixed #N --" (lombok's style).
_CLOSING = re.compile(
    r"\b(?:fix(?:e[sd])?|close[sd]?|resolve[sd]?)\b[\s:]*(?:issue\s*)?(?:[\w.-]+/[\w.-]+)?#(\d+)", re.IGNORECASE
)
_MENTION = re.compile(r"\b(?:refs?|see|related(?: to)?|part of|for)\b[\s:]*(?:issue\s*)?(?:[\w.-]+/[\w.-]+)?#(\d+)",
                      re.IGNORECASE)
_ISSUE_URL = re.compile(r"https?://github\.com/[\w.-]+/[\w.-]+/(?:issues|pull)/(\d+)")
_ANY_ISSUE = re.compile(r"(?<![\w&/])#(\d{1,7})\b")

_TEST_PATH = re.compile(
    r"(^|/)(tests?|__tests__|spec|specs|testdata|test[-_]?files|testing)/"
    r"|(^|/)test_[^/]+\.py$|_test\.(go|py|rs|c|cc|cpp)$|\.(test|spec)\.[cm]?[jt]sx?$"
    r"|(^|/)[^/]*Tests?\.(java|kt|cs|scala)$",
    re.IGNORECASE,
)
# Test definitions on added lines: Rust/Python/Go/Java/JS forms.
_TEST_DEF = re.compile(
    r"^\s*(?:pub\s+)?(?:async\s+)?fn\s+(\w+)"
    r"|^\s*(?:async\s+)?def\s+(test\w*)"
    r"|^\s*func\s+(Test\w+|Benchmark\w+|Example\w+)"
    r"|^\s*(?:public\s+)?(?:static\s+)?void\s+(test\w*)\s*\("
    r"|^\s*(?:it|test|describe)(?:\.\w+)?\(\s*(['\"`])(.{3,100}?)\5"
)
# A line that reports an error; its string literals are the messages a user would see.
_ERROR_LINE = re.compile(
    r"\b(?:err(?:or)?s?|panic!?|raise|throw|exception|fail(?:ed|ure)?|warn(?:ing)?|bail!|anyhow!|"
    r"expect|unwrap_or_else|invalid|cannot|can't|unable|unexpected|unsupported)\b",
    re.IGNORECASE,
)
_STRING = re.compile(r"\"((?:[^\"\\\n]|\\.){8,200})\"|'((?:[^'\\\n]|\\.){8,200})'|`([^`\n]{8,200})`")
_WORDS = re.compile(r"[A-Za-z]{2,}")


@dataclass(frozen=True)
class ChangeFacts:
    pr: int | None = None  # the pull request this change landed with
    closes: list[int] = field(default_factory=list)  # issues it says it fixes/closes/resolves
    mentions: list[int] = field(default_factory=list)  # other issue/PR numbers it names
    tests: list[str] = field(default_factory=list)  # test files and test names added or changed
    error_strings: list[str] = field(default_factory=list)  # error messages on changed lines


def pr_number(subject: str) -> int | None:
    """The PR number a merge or squash subject names, else None."""
    m = _MERGE_PR.match(subject) or _SQUASH_PR.search(subject)
    return int(m.group(1)) if m else None


def is_test_path(path: str) -> bool:
    return bool(_TEST_PATH.search(path))


def change_facts(messages: list[str], diff_files: list[DiffFile]) -> ChangeFacts:
    """Facts of one change: ``messages`` (its own first, then its branch's commits), its diff."""
    subject = messages[0].partition("\n")[0] if messages else ""
    pr = pr_number(subject)
    text = "\n".join(messages)
    closes = unique(int(n) for n in _CLOSING.findall(text))
    named = [int(n) for n in (*_MENTION.findall(text), *_ISSUE_URL.findall(text), *_ANY_ISSUE.findall(text))]
    mentions = unique(n for n in named if n not in closes and n != pr)
    return ChangeFacts(pr=pr, closes=closes, mentions=mentions[:20], tests=_tests(diff_files),
                       error_strings=_error_strings(diff_files))


def _tests(diff_files: list[DiffFile]) -> list[str]:
    out: list[str] = []
    for df in diff_files:
        if not is_test_path(df.path) or df.is_deleted:
            continue
        out.append(df.path)
        for hunk in df.hunks:
            for line in hunk.added:
                m = _TEST_DEF.match(line)
                if m:
                    name = next(g for i, g in enumerate(m.groups()) if g and i != 4)
                    out.append(" ".join(name.split()))
        if len(out) >= MAX_TESTS:
            break
    return unique(out)[:MAX_TESTS]


def _error_strings(diff_files: list[DiffFile]) -> list[str]:
    out: list[str] = []
    for df in diff_files:
        for hunk in df.hunks:
            for line in (*hunk.removed, *hunk.added):
                if not _ERROR_LINE.search(line):
                    continue
                for m in _STRING.finditer(line):
                    s = next(g for g in m.groups() if g)
                    if len(_WORDS.findall(s)) >= 2:
                        out.append(s.strip())
        if len(out) >= 4 * MAX_ERROR_STRINGS:
            break
    return unique(out)[:MAX_ERROR_STRINGS]
