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

__all__ = ["ChangeFacts", "change_facts", "is_doc_path", "is_test_path", "pr_number"]

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
# What a statement that reports an error says in its code, outside its string literals: the
# messages it passes are what a user sees (`raise ValueError("...")`, `t.Fatalf("...")`,
# `errors.New("...")`, `panic!("...")`, `throw new Error("...")`, `log.error("...")`).
_ERROR_CODE = re.compile(
    r"(?i:\b(?:err|errs|errors?|errorf|panic!?|panicf|raise|throw|fail(?:ed|ure|f)?|fatal(?:f|ln)?|"
    r"bail!|anyhow!|expect|unwrap_or_else|abort|assert)\b)|\w(?:Error|Exception)\b"
)
_WARNING_CODE = re.compile(r"(?i:\bwarn(?:ings?|f)?\b|\bdeprecat\w*)|\wWarning\b")
# Words that make a literal an error message wherever it stands ("invalid value for x").
_ERROR_WORDS = re.compile(
    r"\b(?:invalid|cannot|can't|unable to|unexpected|unsupported|failed)\b", re.IGNORECASE)
# A string literal, with the prefix letters of Python's f/r/b strings.
_LITERAL = re.compile(r"[rRbBfFuU]{0,2}(?:\"((?:[^\"\\\n]|\\.)*)\"|'((?:[^'\\\n]|\\.)*)'|`([^`\n]*)`)")
_COMMENT = ("#", "//", "/*", "* ", "--", ";")
_STATEMENT_LINES = 8  # lines one statement's message may run over
_MIN_MESSAGE, _MAX_MESSAGE = 8, 200
# Prose, not code: changelogs, documentation, READMEs. Their quoted and marked-up spans
# (reST's :class:`~io.StringIO`, Markdown's `code`) are no messages a program gives.
_DOC_SUFFIXES = (".rst", ".md", ".markdown", ".mdx", ".txt", ".adoc", ".asciidoc", ".rdoc", ".org",
                 ".textile", ".tex", ".pod", ".wiki")
_DOC_NAMES = re.compile(r"(?i)^(?:change(?:s|log)|history|news|readme|authors|contributing|releases?|"
                        r"upgrading|migration|todo|thanks|license|copying|notice)(?:[._-].*)?$")
_WORDS = re.compile(r"[A-Za-z]{2,}")


@dataclass(frozen=True)
class ChangeFacts:
    pr: int | None = None  # the pull request this change landed with
    closes: list[int] = field(default_factory=list)  # issues it says it fixes/closes/resolves
    mentions: list[int] = field(default_factory=list)  # other issue/PR numbers it names
    tests: list[str] = field(default_factory=list)  # test files and test names added or changed
    error_strings: list[str] = field(default_factory=list)  # error messages the changed code gives
    warning_strings: list[str] = field(default_factory=list)  # ... and its warnings (matched, not "errors")


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
    errors, warnings = _error_strings(diff_files)
    return ChangeFacts(pr=pr, closes=closes, mentions=mentions[:20], tests=_tests(diff_files),
                       error_strings=errors, warning_strings=warnings)


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


def is_doc_path(path: str) -> bool:
    """A file of prose (a changelog, documentation), whose diff holds no program's messages."""
    name = path.rsplit("/", 1)[-1]
    return name.lower().endswith(_DOC_SUFFIXES) or bool(_DOC_NAMES.match(name))


def _error_strings(diff_files: list[DiffFile]) -> tuple[list[str], list[str]]:
    """The error messages and the warning messages the code of a diff's changed lines gives
    (its prose files aside): the string literals of a statement whose code reports an error
    or a warning, a statement's adjacent literals joined ("..." "..." over several lines), and
    a literal that reads as an error ("cannot open x") wherever it stands."""
    errors: list[str] = []
    warnings: list[str] = []
    for df in diff_files:
        if is_doc_path(df.path):
            continue
        for hunk in df.hunks:
            for lines in (hunk.removed, hunk.added):
                for message, kind in _messages(lines):
                    (errors if kind == "error" else warnings).append(message)
        if len(errors) >= 4 * MAX_ERROR_STRINGS:
            break
    return unique(errors)[:MAX_ERROR_STRINGS], unique(warnings)[:MAX_ERROR_STRINGS]


def _messages(lines: list[str]) -> list[tuple[str, str]]:
    """("message", "error" | "warning") of the statements in ``lines`` (consecutive changed
    lines): a statement runs while its brackets are open, at most ``_STATEMENT_LINES``."""
    out: list[tuple[str, str]] = []
    statement = _Statement()
    for line in lines:
        stripped = line.strip()
        if stripped.startswith(_COMMENT) or '"""' in line or "\'\'\'" in line:
            continue  # a comment or a docstring says what the code does, in prose
        statement.take(line)
        if statement.depth <= 0 or statement.lines >= _STATEMENT_LINES:
            out.extend(statement.messages())
            statement = _Statement()
    out.extend(statement.messages())
    return out


@dataclass
class _Statement:
    """One statement's code (its literals blanked) and its literals, adjacent ones joined."""

    code: list[str] = field(default_factory=list)
    runs: list[list[str]] = field(default_factory=list)
    since_literal: str = ""  # the code after the last literal, over line ends
    depth: int = 0  # brackets open
    lines: int = 0

    def take(self, line: str) -> None:
        pos = 0
        for m in _LITERAL.finditer(line):
            between = line[pos:m.start()]
            self.code.append(between)
            body = next(g for g in m.groups() if g is not None)
            if self.runs and not (self.since_literal + between).strip():
                self.runs[-1].append(body)  # "..." "..." is one string
            else:
                self.runs.append([body])
            self.since_literal, pos = "", m.end()
        rest = line[pos:]
        self.code.append(rest)
        self.since_literal += rest
        outside = "".join(self.code)
        self.depth = max(0, sum(map(outside.count, "([{")) - sum(map(outside.count, ")]}")))
        self.lines += 1

    def messages(self) -> list[tuple[str, str]]:
        code = " ".join(self.code)
        kind = "error" if _ERROR_CODE.search(code) else "warning" if _WARNING_CODE.search(code) else ""
        out: list[tuple[str, str]] = []
        for run in self.runs:
            message = " ".join("".join(run).split())
            if not _reads_as_message(message):
                continue
            if kind:
                out.append((message[:_MAX_MESSAGE], kind))
            elif _ERROR_WORDS.search(message):
                out.append((message[:_MAX_MESSAGE], "error"))
        return out


def _reads_as_message(text: str) -> bool:
    """Words a person reads, not an identifier, a type or a format: at least two words
    apart (``ErrorHandlerCallable[Exception]``, ``~io.StringIO`` and ``%s: %s`` are not)."""
    return len(text) >= _MIN_MESSAGE and len(text.split()) >= 2 and len(_WORDS.findall(text)) >= 2
