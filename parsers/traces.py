"""Stack traces, exception names and error-message lines from raw text.

Each trace style (Python, IPython, pytest, JavaScript/Node, Java/JVM, Go,
Rust) gets one compiled, line-anchored regex, run only over the lines a cheap
literal hint selects (see ``scan.py``), so long tool outputs stay fast.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from parsers.scan import TextIndex
from parsers.types import Frame

_PY_FRAME = re.compile(
    r'^[ \t]*File "(?P<file>[^"\n]+)", line (?P<line>\d+)(?:, in (?P<func>[^\n]+?))?[ \t]*$', re.M)
_JAVA_FRAME = re.compile(
    r"^[ \t]*at (?P<func>[\w$./<>-]+)\((?P<file>[\w$.-]+\.(?:java|kt|scala|groovy|clj))"
    r"(?::(?P<line>\d+))?\)", re.M)
_JS_FRAME = re.compile(
    r"^[ \t]*at (?:(?P<func>[^\s(][^()\n]*?) \()?"
    r"(?P<file>(?:file://)?[^\s()]+?):(?P<line>\d+):\d+\)?[ \t]*$",
    re.M)
_GO_FRAME = re.compile(
    r"^(?:created by )?(?P<func>[^\s()][^\s]*?)(?:\((?:[^()\n]*)\))?(?: in goroutine \d+)?[ \t]*\n"
    r"[ \t]+(?P<file>[^\s:]+\.go):(?P<line>\d+)(?: \+0x[0-9a-fA-F]+)?[ \t]*$", re.M)
_RUST_PANIC = re.compile(
    r"^thread '[^'\n]*' panicked at (?:'(?P<msg>[^\n]*)', )?(?P<file>[^\s:'\n]+\.rs):(?P<line>\d+)"
    r"(?::\d+)?:?[ \t]*(?:\n(?P<next>[^\n]+))?", re.M)
# IPython: "path.py in func(args)" then numbered source lines, "---> 780" marking the line.
_IPY_FRAME = re.compile(
    r"^(?P<file>[^\s<>][^\n]*?\.py) in (?P<func>[\w<>.]+)\([^\n]*\)[ \t]*$"
    r"(?P<body>(?:\n[^\n]+){0,40})",
    re.M)
_IPY_ARROW = re.compile(r"^-*> ?(\d+)", re.M)
# pytest's short location line: "tests/test_x.py:41: AssertionError".
_PYTEST_LOC = re.compile(r"^(?P<file>[\w./-]+\.py):(?P<line>\d+): (?:[A-Z]\w*|in \w+)$", re.M)
_GO_PANIC = re.compile(r"^(?:panic|fatal error): (?P<msg>[^\n]+)", re.M)

_EXC_SUFFIX = r"(?:Error|Exception|Exit|Interrupt|Warning|Failure|Fault|Iteration|DoesNotExist)"
_EXC_NAME = rf"(?:[A-Za-z_][\w$]*\.)*[A-Z][\w$]*{_EXC_SUFFIX}"
# "Name: message", the last line of nearly every language's error report.
# Inside inline code the message ends at the closing backtick, not the line end.
_EXC_LINE = re.compile(
    rf"(?<=`)(?P<exc2>{_EXC_NAME}|Error): (?P<msg2>[^\n`]+)`|"
    rf"(?<![\w.$])(?P<exc>{_EXC_NAME}|Error|Exception)(?::[ \t]+(?P<msg>[^\n]+))?$", re.M)
_BARE = frozenset({"Error", "Exception"})
_EXC_WORD = re.compile(rf"(?<![\w.$])(?P<exc>{_EXC_NAME})(?![\w$])")
_PY_TB_END = re.compile(
    r"Traceback \(most recent call last\):[ \t]*\n(?:(?:[ \t][^\n]*|\.\.\.|)\n)*?"
    r"(?P<exc>[A-Za-z_][\w.]*)(?::[ \t]*(?P<msg>[^\n]*))?$", re.M)
_COMPILER_ERROR = re.compile(
    r"^(?:[^\s:]+:\d+(?::\d+)?: )?(?:fatal )?error(?:\[E\d{4}\])?: [^\n]+$", re.M)
_LINE_PREFIX = re.compile(
    r"^(?:E\s+|FAILED\s+\S+\s+-\s+|ERROR\s+\S+\s+-\s+|Caused by:\s+|Uncaught\s+|"
    r"Exception in thread \"[^\"]*\"\s+|\[[A-Z]+\]\s+|\s+)+")

_MAX_MESSAGE = 500

# Literal-led hints that pick the candidate lines for each pattern (see scan.py).
_HINT_PY = re.compile(r'File "')
_HINT_IPY = re.compile(r"\.py in [\w<]")
_HINT_PYTEST = re.compile(r"\.py:\d+: ")
_HINT_JAVA = re.compile(r"\.(?:java|kt|scala|groovy|clj)(?::\d+)?\)")
_HINT_JS = re.compile(r":\d+:\d+\)?[ \t]*$", re.M)
_HINT_GO = re.compile(r"\.go:\d")
_HINT_RUST = re.compile(r"panicked at ")
_HINT_PANIC = re.compile(r"panic: |fatal error: ")
_HINT_EXC = re.compile(_EXC_SUFFIX)
_HINT_COMPILER = re.compile(r"error(?:\[E\d{4}\])?: ")


@dataclass(slots=True)
class TraceRefs:
    frames: list[Frame] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)


def _go_function(raw: str) -> str:
    """``github.com/x/pkg.(*Server).Serve`` -> ``pkg.Server.Serve``."""
    name = raw.rsplit("/", 1)[-1]
    return re.sub(r"\(\*?([\w]+)\)", r"\1", name)


def _message(line: str) -> str:
    return _LINE_PREFIX.sub("", line.strip()).strip()[:_MAX_MESSAGE]


def _at_frames(index: TextIndex, out: TraceRefs) -> None:
    """JVM and JavaScript frames, both written ``at ...``."""
    for m in _JAVA_FRAME.finditer(index.select(_HINT_JAVA)):
        func = m["func"].rsplit("/", 1)[-1]  # drop a JPMS module prefix (java.base/)
        out.frames.append(Frame(m["file"], int(m["line"]) if m["line"] else None, func, "java"))
    for m in _JS_FRAME.finditer(index.select(_HINT_JS)):
        func = m["func"]
        if func:
            func = re.sub(r"^(?:async|new) | \[as [^\]]*\]$", "", func).strip() or None
        file = m["file"].removeprefix("file://")
        if file.endswith((".java", ".go", ".py")):
            continue
        out.frames.append(Frame(file, int(m["line"]), func, "javascript"))


def _frames(index: TextIndex, out: TraceRefs) -> None:
    text = index.text
    if 'File "' in text:
        for m in _PY_FRAME.finditer(index.select(_HINT_PY)):
            out.frames.append(Frame(m["file"], int(m["line"]), m["func"], "python"))
    if ".py in " in text:
        for m in _IPY_FRAME.finditer(index.select(_HINT_IPY, after=40)):
            arrow = _IPY_ARROW.search(m["body"])
            out.frames.append(Frame(m["file"], int(arrow.group(1)) if arrow else None, m["func"],
                                    "python"))
    if ".py:" in text:
        for m in _PYTEST_LOC.finditer(index.select(_HINT_PYTEST)):
            out.frames.append(Frame(m["file"], int(m["line"]), None, "python"))
    if "at " in text:
        _at_frames(index, out)
    if ".go:" in text:
        for m in _GO_FRAME.finditer(index.select(_HINT_GO, before=1)):
            out.frames.append(Frame(m["file"], int(m["line"]), _go_function(m["func"]), "go"))
    if "panicked at" in text:
        for m in _RUST_PANIC.finditer(index.select(_HINT_RUST, after=1)):
            out.frames.append(Frame(m["file"], int(m["line"]), None, "rust"))
            out.exceptions.append("panic")
            msg = m["msg"] or (m["next"] or "").strip()
            if msg and not msg.startswith(("note:", "stack backtrace")):
                out.messages.append(f"panicked at '{msg[:_MAX_MESSAGE]}'")


def _exception_lines(index: TextIndex, out: TraceRefs) -> None:
    text = index.select(_HINT_EXC)
    if not text:
        return
    for m in _EXC_LINE.finditer(text):
        exc = m["exc"] or m["exc2"]
        msg = m["msg"] if m["exc"] else m["msg2"]
        if exc in _BARE and (not msg or text[text.rfind("\n", 0, m.start()) + 1:m.start()].strip()
                             not in ("", "Uncaught")):
            continue  # a bare "Error" counts only as the head of a report line
        out.exceptions.append(exc)
        opener = text[m.start() - 1] if m.start() else ""
        if msg and opener and opener in "\"'" and opener in msg:
            msg = msg.split(opener, 1)[0]  # quoted mention: the message ends with the quote
        if msg and msg.strip():
            out.messages.append(f"{exc}: {msg.strip()}"[:_MAX_MESSAGE])
    out.exceptions.extend(m["exc"] for m in _EXC_WORD.finditer(text))


def scan_traces(index: TextIndex) -> TraceRefs:
    """Frames, exception names and ``Name: message`` lines found anywhere in the text."""
    out = TraceRefs()
    text = index.text
    _frames(index, out)
    if "Traceback" in text:
        for m in _PY_TB_END.finditer(text):
            out.exceptions.append(m["exc"])
            if m["msg"] is not None:
                out.messages.append(_message(m.group(0).rsplit("\n", 1)[-1]))
    if "panic: " in text or "fatal error: " in text:
        for m in _GO_PANIC.finditer(index.select(_HINT_PANIC)):
            out.exceptions.append("panic")
            out.messages.append(_message(m.group(0)))
    _exception_lines(index, out)
    if "error" in text:
        out.messages.extend(_message(m.group(0))
                            for m in _COMPILER_ERROR.finditer(index.select(_HINT_COMPILER)))
    return out


def is_exception_name(name: str) -> bool:
    return _EXC_WORD.fullmatch(name) is not None
