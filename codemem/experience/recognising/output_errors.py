"""Errors met in command output: the exception line that ends a Python traceback, pytest's
``E   Name: message`` lines, and bare ``SomeError: message`` lines a script printed.

Interpreter start-up noise (``Error processing line N of ...pth`` blocks that a broken site
package prints before every run) is removed first, or it would be the error of every run.
"""

from __future__ import annotations

import re

from codemem.clip import clip

_PTH_START = "Error processing line "
_PTH_END = "Remainder of file ignored"
_TRACEBACK = "Traceback (most recent call last):"
_EXC = r"[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Failure|Fault|DoesNotExist|Warning)"
_EXC_AT_COL0 = re.compile(rf"^({_EXC})(?::[ \t]*(.*))?$")
_PYTEST_E = re.compile(rf"^E\s+(?:({_EXC})(?::\s*(.*))?|(assert .+))$", re.M)
_FAILED_LINE = re.compile(rf"^(?:FAILED|ERROR) \S+ - ({_EXC}|assert\b)(?::\s*(.*)|(\s.*))?$", re.M)
_PRINTED = re.compile(rf"^(?:ERROR:\s*|Error:\s*)?({_EXC}): (.+)$", re.M)
_MAX_MESSAGE = 200
_MAX_TRACEBACKS = 200
_SCAN_LIMIT = 400_000  # characters of one output read for errors: head and tail


def strip_noise(text: str) -> str:
    """Drop ``.pth`` start-up error blocks from interpreter output: the ``Error processing
    line`` line, its indented traceback, and the closing ``Remainder of file ignored``."""
    if _PTH_START not in text:
        return text
    out: list[str] = []
    skipping = False
    for line in text.split("\n"):
        if line.startswith(_PTH_START):
            skipping = True
            continue
        if skipping:
            if not line.strip() or line[0] in " \t":
                continue
            skipping = False
            if line.startswith(_PTH_END):
                continue
        out.append(line)
    return "\n".join(out)


def _format(name: str, message: str | None) -> str:
    message = (message or "").strip()
    message = clip(message, _MAX_MESSAGE)
    return f"{name}: {message}" if message else name


def _traceback_ends(text: str) -> list[str]:
    found: list[str] = []
    pos = 0
    seen = 0
    while seen < _MAX_TRACEBACKS and (start := text.find(_TRACEBACK, pos)) >= 0:
        seen += 1
        pos = start + len(_TRACEBACK)
        following = text.find(_TRACEBACK, pos)
        stop = min(pos + 20_000, following if following >= 0 else len(text))
        # The exception line is the first line after the frames that is not indented.
        for line in text[pos:stop].split("\n")[1:]:
            if not line or line[0] in " \t" or line.startswith("..."):
                continue
            m = _EXC_AT_COL0.match(line.rstrip())
            if m:
                found.append(_format(m.group(1), m.group(2)))
            break
    return found


def errors_in(output: str, limit: int = 6) -> list[str]:
    """Distinct ``Name: message`` errors in a command's (noise-stripped) output."""
    if len(output) > _SCAN_LIMIT:
        half = _SCAN_LIMIT // 2
        output = output[:half] + "\n" + output[-half:]
    found = _traceback_ends(output)
    for m in _PYTEST_E.finditer(output):
        found.append(
            _format("AssertionError", m.group(3)) if m.group(3) else _format(m.group(1), m.group(2))
        )
    for m in _FAILED_LINE.finditer(output):
        if m.group(1) == "assert":
            found.append(_format("AssertionError", "assert" + (m.group(3) or "")))
        else:
            found.append(_format(m.group(1), m.group(2)))
    for m in _PRINTED.finditer(output):
        found.append(_format(m.group(1), m.group(2)))
    out: list[str] = []
    for error in found:
        if error not in out and not error.endswith("Warning") and "Warning:" not in error:
            out.append(error)
        if len(out) >= limit:
            break
    return out
