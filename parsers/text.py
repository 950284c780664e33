"""Code references in free text: agent messages, tool outputs, issue bodies.

One pass splits the text into prose and fenced blocks; whole-text regex scans
(traces, paths, test ids, prompts, diffs) run once over a copy with overlong
lines blanked, so cost stays linear and bounded; prose gets the noisier
scans (backticks, dotted names); code blocks go through tree-sitter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from parsers.commands import (
    PROMPT_HINT,
    clean_command,
    line_commands,
    looks_like_command,
    prompt_commands,
    shell_block_commands,
    tool_call_commands,
)
from parsers.diffs import parse_diff
from parsers.languages import DIFF_TAGS, SHELL_TAGS, guess_language, language_for_tag
from parsers.paths import (
    PATH_HINT,
    find_paths,
    is_file_extension,
    is_path,
    normalize_path,
    strip_urls,
)
from parsers.scan import TextIndex, run_start, strip_ansi
from parsers.symbols import extract_symbols
from parsers.traces import is_exception_name, scan_traces
from parsers.types import CodeRefs

MAX_TEXT_CHARS = 5_000_000
MAX_LINE_CHARS = 5_000
# Parsing code blocks with tree-sitter is the dearest step of a text: this budget bounds
# its cost per text.
MAX_CODE_CHARS = 40_000
MAX_BLOCK_CHARS = 20_000
MAX_CODE_BLOCKS = 32

_FENCE = re.compile(r"^[ \t]{0,3}(?P<fence>`{3,}|~{3,})[ \t]*(?P<tag>[^`\n]*)$")
_PYTEST_ID = re.compile(
    r"(?<![\w/.-])(?P<id>(?P<path>[\w./\\-]*\w\.py)(?:::[A-Za-z_]\w*)+(?:\[[^\]\n]{0,200}\])?)")
_DJANGO_ID = re.compile(r"\b(?P<name>test\w*) \((?P<owner>[A-Za-z_][\w.]*)\)")
_GO_TEST = re.compile(
    r"^[ \t]*(?:--- (?:FAIL|PASS|SKIP):|=== (?:RUN|PAUSE|CONT))[ \t]+(?P<id>Test\S+)", re.M)
_RUST_TEST = re.compile(r"^test (?P<id>[\w:]+) \.\.\. (?:ok|FAILED|ignored)", re.M)
_HINT_PYTEST = re.compile(r"\.py::")
_HINT_DJANGO = re.compile(r"test\w* \(")
_HINT_GO = re.compile(r"--- (?:FAIL|PASS|SKIP):|=== (?:RUN|PAUSE|CONT)")
_HINT_RUST = re.compile(r" \.\.\. (?:ok|FAILED|ignored)")
_HINT_DOTTED = re.compile(r"\.[A-Za-z_]")
_HINT_BACKTICK = re.compile(r"`")
_BACKTICK = re.compile(r"(`{1,2})(?P<body>[^`\n]{1,200}?)\1(?!`)")
_NAME_CHARS = re.compile(r"[\w.]*")
_IDENT_REF = re.compile(
    r"[~!]?(?P<name>[A-Za-z_$][\w$]*(?:(?:\.|::|#|->)[A-Za-z_$][\w$]*)*)(?:\([^()]*\))?")
_DOTTED = re.compile(
    r"(?<![\w./\\:@$-])(?P<name>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?![\w/\\$-]|\.[A-Za-z_])")
_DOTTED_TEST = re.compile(r"^(?:\w+\.)*\w*tests?\w*\.(?:\w+\.)?test\w*$", re.I)
_REPL = re.compile(r"^(?:>>>|\.\.\.)(?: |$)")
_TLDS = frozenset(
    "com org net io dev ai edu gov co uk de fr jp cn ru info biz me app html htm".split())
_NOT_SYMBOLS = frozenset(
    "true false none null nil self this cls undefined nan inf e.g i.e etc vs ok todo".split()
)
_TRIVIAL_CALLS = frozenset(
    "print len str int float bool list dict set tuple range isinstance issubclass super open "
    "type repr getattr setattr hasattr enumerate zip map sorted min max sum any all format "
    "append extend get items keys values join split strip log println printf Println Printf "
    "Sprintf Errorf require push pop toString String new make panic assert Exception Error "
    "BaseException Object".split()
)


@dataclass(slots=True)
class _FoundRefs:
    """The references found so far in one text (their lists grow in place), and what is left
    of its code budget."""

    found: CodeRefs = field(default_factory=CodeRefs)
    code_budget: int = MAX_CODE_CHARS
    blocks: int = 0


@dataclass(slots=True)
class _Block:
    tag: str
    lines: list[str]


def _split_fences(lines: list[str]) -> tuple[list[str], list[_Block]]:
    """Prose lines (fence contents blanked, so line numbers survive) and the blocks."""
    prose: list[str] = []
    blocks: list[_Block] = []
    open_fence: str | None = None
    current: _Block | None = None
    for line in lines:
        m = _FENCE.match(line) if "```" in line or "~~~" in line else None
        if open_fence is None:
            if m:
                open_fence, current = m["fence"], _Block(m["tag"].strip(), [])
                prose.append("")
            else:
                prose.append(line)
        elif m and m["fence"][0] == open_fence[0] and len(m["fence"]) >= len(open_fence) \
                and not m["tag"].strip():
            if current is not None:
                blocks.append(current)
            open_fence, current = None, None
            prose.append("")
        else:
            if current is not None:
                current.lines.append(line)
            prose.append("")
    if current is not None:
        blocks.append(current)
    return prose, blocks


def _test_ids(index: TextIndex, acc: _FoundRefs) -> None:
    text = index.text
    if ".py::" in text:
        for m in _PYTEST_ID.finditer(index.select(_HINT_PYTEST)):
            acc.found.test_ids.append(normalize_path(m["id"]))
            acc.found.files.append(normalize_path(m["path"]))
    if "test" in text:
        for m in _DJANGO_ID.finditer(index.select(_HINT_DJANGO)):
            owner, name = m["owner"], m["name"]
            if "." in owner:
                acc.found.test_ids.append(owner if owner.endswith("." + name) else f"{owner}.{name}")
    if "--- " in text or "=== " in text:
        acc.found.test_ids.extend(m["id"] for m in _GO_TEST.finditer(index.select(_HINT_GO)))
    if " ... " in text:
        acc.found.test_ids.extend(m["id"] for m in _RUST_TEST.finditer(index.select(_HINT_RUST)))


def _symbol_ref(body: str) -> str | None:
    m = _IDENT_REF.fullmatch(body.strip())
    if m is None:
        return None
    name = re.sub(r"::|#|->", ".", m["name"])
    name = re.sub(r"^(?:self|this|cls)\.", "", name)
    if len(name) < 2 or name.lower() in _NOT_SYMBOLS or name.isdigit():
        return None
    return name


def _dotted_names(text: str) -> list[str]:
    """``a.b.c`` names, found from their dots (a literal-led scan) rather than by
    trying the name pattern at every position of the text."""
    out: list[str] = []
    done = 0
    for hit in _HINT_DOTTED.finditer(text):
        if hit.start() < done:
            continue
        start = run_start(text, hit.start(), _NAME_CHARS, limit=200)
        m = _DOTTED.match(text, start)
        done = m.end() if m else hit.end()
        if m:
            out.append(m["name"])
    return out


def _prose(prose: TextIndex, acc: _FoundRefs) -> None:
    if "`" in prose.text:
        seen: set[str] = set()
        for m in _BACKTICK.finditer(prose.select(_HINT_BACKTICK)):
            body = m["body"].strip()
            if not body or body in seen:
                continue
            seen.add(body)
            if looks_like_command(body):
                acc.found.commands.append(clean_command(body))
            elif is_path(body):
                acc.found.files.append(normalize_path(body))
            elif is_exception_name(body):
                acc.found.exceptions.append(body)
            else:
                name = _symbol_ref(body)
                if name:
                    acc.found.symbols.append(name)
                    if _DOTTED_TEST.match(name):
                        acc.found.test_ids.append(name)
    for name in dict.fromkeys(_dotted_names(strip_urls(prose.select(_HINT_DOTTED)))):
        parts = name.split(".")
        last = parts[-1].lower()
        if last in _TLDS or parts[0].lower() in ("www", "self", "this", "cls"):
            continue
        if name.lower() in _NOT_SYMBOLS or max(len(p) for p in parts) < 3:
            continue
        if is_file_extension(last) or is_exception_name(name):
            continue  # a file name (or product name like Node.js), or an exception
        acc.found.symbols.append(name)


def _code_symbols(code: str, language: str, acc: _FoundRefs) -> None:
    if len(code) > MAX_BLOCK_CHARS:
        code = code[: code.rfind("\n", 0, MAX_BLOCK_CHARS) + 1]
    if acc.blocks >= MAX_CODE_BLOCKS or not code or len(code) > acc.code_budget:
        return
    acc.blocks += 1
    acc.code_budget -= len(code)
    for sym in extract_symbols(code, language):
        if sym.kind == "call" and ("." not in sym.qualified_name and (
                sym.name in _TRIVIAL_CALLS or sym.name.startswith("assert"))):
            continue
        acc.found.symbols.append(sym.qualified_name)


def _repl_code(lines: list[str]) -> str:
    return "\n".join(ln[4:] for ln in lines if _REPL.match(ln))


def _is_output(lines: list[str]) -> bool:
    """A block holding a transcript (prompts, tracebacks) is output, whatever its tag."""
    return any(ln.startswith(("$ ", "Traceback (most recent call last)")) for ln in lines[:200])


def _blocks(blocks: list[_Block], acc: _FoundRefs) -> list[str]:
    """Handle fenced blocks; returns lines of untagged non-code blocks (plain output)."""
    plain: list[str] = []
    for block in blocks:
        tag = block.tag.split(maxsplit=1)[0].lower() if block.tag else ""
        if tag in DIFF_TAGS:
            continue
        if tag in SHELL_TAGS:
            acc.found.commands.extend(shell_block_commands(block.lines))
            continue
        body = "\n".join(block.lines)
        if tag:
            language = language_for_tag(block.tag)
        else:  # sniffing costs regex scans: only while there is budget to parse
            language = guess_language(body) if acc.blocks < MAX_CODE_BLOCKS else None
        if language is None or _is_output(block.lines):
            plain.extend(block.lines)
            continue
        if language == "python" and any(_REPL.match(ln) for ln in block.lines[:50]):
            body = _repl_code(block.lines)
        _code_symbols(body, language, acc)
    return plain


def _diff_refs(text: str, acc: _FoundRefs) -> None:
    if "@@" not in text or not ("\n+++ " in text or "diff --git" in text):
        return
    for f in parse_diff(text):
        acc.found.files.append(f.path)
        if f.old_path:
            acc.found.files.append(f.old_path)
        acc.found.symbols.extend(f.symbols)


def extract_text_refs(text: str) -> CodeRefs:
    """Files, symbols, exceptions, messages, frames, test ids and commands in ``text``."""
    if not isinstance(text, str) or not text.strip():
        return CodeRefs()
    lines = strip_ansi(text[:MAX_TEXT_CHARS]).split("\n")
    lines = [(ln[:-1] if ln.endswith("\r") else ln) if len(ln) <= MAX_LINE_CHARS else ""
             for ln in lines]
    index = TextIndex("\n".join(lines))
    scan = index.text
    acc = _FoundRefs()
    prose_lines, blocks = _split_fences(lines)

    acc.found.files.extend(find_paths(strip_urls(index.select(PATH_HINT))))
    traces = scan_traces(index)
    acc.found.frames.extend(traces.frames)
    acc.found.exceptions.extend(traces.exceptions)
    acc.found.error_messages.extend(traces.messages)
    acc.found.files.extend(normalize_path(f.file) for f in traces.frames
                     if not f.file.startswith(("<", "node:")) and is_path(f.file))
    _test_ids(index, acc)
    _diff_refs(scan, acc)

    plain = _blocks(blocks, acc)
    acc.found.commands.extend(prompt_commands(index.select(PROMPT_HINT)))
    acc.found.commands.extend(tool_call_commands(scan))
    acc.found.commands.extend(line_commands(prose_lines + plain))
    _prose(TextIndex("\n".join(prose_lines)), acc)
    repl = [ln for ln in prose_lines if _REPL.match(ln)]
    if repl:
        _code_symbols(_repl_code(repl), "python", acc)
    exceptions = set(acc.found.exceptions)
    return replace(acc.found, symbols=[s for s in acc.found.symbols if s not in exceptions])
