"""Test runs: which commands run tests, and what their output says (pytest, unittest and
Django's runtests, SymPy's bin/test, go/cargo/jest/mocha summaries). A run's status is
None when no summary can be read (output cut by ``head``, a crash before collection that
is not a test failure we can attribute).
"""

from __future__ import annotations

import re

import msgspec

_TEST_COMMAND = re.compile(
    r"(?:\bpytest\b|\bpy\.test\b|\bruntests(?:\.py)?\b|\bmanage\.py\s+test\b|\bbin/test\b|"
    r"-m\s+unittest\b|\btox\b|\bnosetests\b|\bnose2\b|\bgo\s+test\b|\bcargo\s+test\b|"
    r"\b(?:npm|yarn|pnpm)\s+(?:run\s+)?test\b|\bjest\b|\bmocha\b|\bvitest\b|\bmvn\s+test\b|"
    r"\bgradle\w*\s+test\b|\bmake\s+(?:test|check)\b|\bctest\b|\brspec\b|"
    r"sympy\.test\(|\bdoctest\b)"
)
_SCRIPT_TEST = re.compile(r"\bpython[\d.]*\s+(?:-\w+\s+)*\S*\btest\w*\.py\b")
_PYTEST_SUMMARY = re.compile(
    r"^=*[ \t]*((?:\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?|"
    r"rerun)(?:, )?)+)\s+in\s+[\d.]+\s*s(?:econds)?\b.*$|^=+ (no tests ran)\b.*$",
    re.M,
)
_COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected)")
_UNITTEST_RAN = re.compile(r"^Ran (\d+) tests? in [\d.]+s\s*\n\s*\n?(OK|FAILED)\b(.*)$", re.M)
_SYMPY = re.compile(r"tests finished: (\d+) passed(?:, (\d+) failed)?(.*?), in [\d.]+ seconds")
_GO = re.compile(r"^(ok|FAIL|---\s+FAIL:)\s", re.M)
_CARGO = re.compile(r"^test result: (ok|FAILED)\.", re.M)
_JEST = re.compile(r"^Tests:\s+(?:(\d+) failed, )?(?:\d+ \w+, )*(\d+) passed", re.M)
_MOCHA = re.compile(r"^[ \t]+(\d+) (passing|failing)\b", re.M)
_FAILED_TEST = re.compile(
    r"^(?:FAILED|ERROR)\s+(\S+::\S+|\S+)(?:\s+-\s+(.*))?$|^(?:FAIL|ERROR): (\w+) \(([\w.]+)\)", re.M
)
_SCRIPT_FAIL = re.compile(
    r"Traceback \(most recent call last\)|^AssertionError|^\w+Error: |\bFAIL(?:ED|URE)?\b|✗|❌",
    re.M,
)
_DID_NOT_RUN = re.compile(
    r"No such file or directory|can't open file|command not found|not recognized as"
)
_SCRIPT_PASS = re.compile(
    r"\ball (?:\w+ )?tests? (?:passed|pass|succeeded)\b|\bALL TESTS PASSED\b|"
    r"\bsuccess(?:fully)?\b|✓|✅|\bPASS(?:ED)?\b",
    re.I,
)


class TestRun(msgspec.Struct, frozen=True):
    """One run of tests: ``passed`` is None when its outcome could not be read."""

    __test__ = False  # not a pytest class

    command: str
    passed: bool | None
    summary: str = ""
    failing: list[str] = []


_URL = re.compile(r"\S+://\S+")
_SEGMENT = re.compile(r"&&|\|\||[;|\n]")
_NOT_RUNNERS = frozenset(
    {
        "pip",
        "pip3",
        "conda",
        "git",
        "apt",
        "apt-get",
        "brew",
        "find",
        "grep",
        "rg",
        "ls",
        "cat",
        "echo",
        "which",
        "head",
        "tail",
        "sed",
        "awk",
        "cd",
        "mkdir",
        "rm",
        "cp",
        "mv",
        "wc",
        "touch",
        "curl",
        "wget",
        "uv",
    }
)


def _runs(pattern: re.Pattern[str], command: str) -> bool:
    """Whether a simple command of the line (not an install, a search, a clone) matches."""
    for segment in _SEGMENT.split(_URL.sub(" ", command)):
        words = segment.split()
        while words and "=" in words[0]:
            words = words[1:]  # environment assignments
        if (
            words
            and words[0].rsplit("/", 1)[-1] not in _NOT_RUNNERS
            and pattern.search(" ".join(words))
        ):
            return True
    return False


def _pytest(output: str) -> tuple[bool | None, str] | None:
    found = list(_PYTEST_SUMMARY.finditer(output))
    if not found:
        return None
    failed = False
    passed_any = False
    parts = []
    for m in found:
        if m.group(2):
            parts.append("no tests ran")
            continue
        counts = {
            kind.rstrip("s") if kind.startswith("error") else kind: int(n)
            for n, kind in _COUNT.findall(m.group(1))
        }
        failed = failed or counts.get("failed", 0) > 0 or counts.get("error", 0) > 0
        passed_any = passed_any or counts.get("passed", 0) > 0 or counts.get("xfailed", 0) > 0
        parts.append(m.group(1).strip(" ,"))
    status = False if failed else (True if passed_any else None)
    return status, "pytest: " + "; ".join(parts[-3:])


def _unittest(output: str) -> tuple[bool | None, str] | None:
    found = list(_UNITTEST_RAN.finditer(output))
    if not found:
        return None
    failed = any(m.group(2) == "FAILED" for m in found)
    ran = sum(int(m.group(1)) for m in found)
    last = found[-1]
    detail = (last.group(2) + last.group(3)).strip()
    status = False if failed else (True if ran > 0 else None)
    return status, f"unittest: ran {ran} tests, {detail}"


def _other(output: str) -> tuple[bool | None, str] | None:
    m = _SYMPY.search(output)
    if m:
        failed = (
            int(m.group(2) or 0) > 0 or "DO *NOT* COMMIT" in output or "exceptions" in m.group(3)
        )
        return not failed, f"sympy: {m.group(0)}"
    m = _CARGO.search(output)
    if m:
        return "test result: FAILED" not in output, "cargo: test result " + m.group(1)
    m = _JEST.search(output)
    if m:
        return not m.group(1), "jest: " + m.group(0).strip()
    mocha = _MOCHA.findall(output)
    if mocha:
        failing = any(kind == "failing" and int(n) > 0 for n, kind in mocha)
        return not failing, "mocha: " + ", ".join(f"{n} {k}" for n, k in mocha)
    go = _GO.findall(output)
    if go:
        return not any(g != "ok" for g in go), "go test: " + (
            "FAIL" if any(g != "ok" for g in go) else "ok"
        )
    return None


def read_outcome(output: str) -> tuple[bool | None, str] | None:
    """``(passed, summary)`` from a test framework summary in ``output``, or None if absent."""
    for reader in (_pytest, _unittest, _other):
        found = reader(output)
        if found is not None:
            return found
    return None


def failing_tests(output: str, limit: int = 8) -> list[str]:
    out: list[str] = []
    for m in _FAILED_TEST.finditer(output):
        name = m.group(1) or f"{m.group(4)}.{m.group(3)}"
        if name not in out:
            out.append(name)
        if len(out) >= limit:
            break
    return out


def _last_verdict(tail: str) -> bool | None:
    """What an ad-hoc script said last: success or failure markers, the later one wins."""
    fail = max((m.end() for m in _SCRIPT_FAIL.finditer(tail)), default=-1)
    passed = max((m.end() for m in _SCRIPT_PASS.finditer(tail)), default=-1)
    if fail < 0 and passed < 0:
        return None
    return passed > fail


def read_test_run(command: str, output: str, is_error: bool) -> TestRun | None:
    """The test run a command and its output amount to, or None if it was not one."""
    outcome = read_outcome(output)
    runner = _runs(_TEST_COMMAND, command)
    if outcome is None:
        if not runner and not _runs(_SCRIPT_TEST, command):
            return None
        if len(output) < 400 and _DID_NOT_RUN.search(output):
            return None  # the command never ran: a wrong path or a missing program
        verdict = _last_verdict(output[-3000:])
        if verdict is False or (verdict is None and is_error):
            outcome = (False, "failed before a summary" if runner else "script reported a failure")
        elif verdict is True and not runner:
            outcome = (True, "script reported success")
        elif runner:
            outcome = (None, "no summary")
        else:
            return None  # an ad-hoc script that says neither: not evidence of a test outcome
    passed, summary = outcome
    return TestRun(command=command, passed=passed, summary=summary, failing=failing_tests(output))
