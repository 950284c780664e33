"""Language-agnostic definition finding from keywords and indentation.

Used where tree-sitter cannot help: languages without a grammar, sources it
finds no definitions in, and git's one-line hunk headers (``@@ ... @@ def foo(``),
which are often cut at 80 columns and so are not parseable code.
"""

from __future__ import annotations

import re

from parsers.scopes import Definition

_MODS = (
    r"(?:(?:export|default|public|private|protected|internal|abstract|final|static|sealed|"
    r"partial|data|open|async|unsafe|const|extern|inline|override|suspend|virtual|"
    r"synchronized|native|pub(?:\([^)]*\))?)\s+)*"
)
_IDENT = r"[A-Za-z_$][\w$]*"

# (kind, pattern) tried in order on the left-stripped line; group "name" is the
# defined name, optional group "owner" qualifies it.
_LINE_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("method", re.compile(rf"^func\s*\(\s*(?:{_IDENT}\s+)?\*?\s*(?P<owner>{_IDENT})"
                          rf"(?:\[[^\]]*\])?\s*\)\s*(?P<name>{_IDENT})")),
    ("scope", re.compile(rf"^{_MODS}impl(?:<[^>]*>)?\s+(?:[\w:<>, &']+?\s+for\s+)?"
                         rf"(?:[\w]+::)*(?P<name>{_IDENT})")),
    ("class", re.compile(rf"^{_MODS}(?:class|interface|struct|enum|trait|record|object|union)"
                         rf"\s+(?P<name>{_IDENT})")),
    ("module", re.compile(rf"^{_MODS}(?:module|namespace|mod)\s+(?P<name>{_IDENT})\s*[{{:]?\s*$")),
    ("function", re.compile(rf"^{_MODS}(?:def|fn|func|function\*?|fun|sub|proc)\s+"
                            rf"(?:self\.)?(?P<name>{_IDENT}[?!]?)")),
    ("function", re.compile(rf"^{_MODS}(?:const|let|var)\s+(?P<name>{_IDENT})\s*(?::[^=]*)?=\s*"
                            rf"(?:async\s*)?(?:function\b|\([^)]*\)\s*(?::[^=]*)?=>|{_IDENT}\s*=>)")),
    ("function", re.compile(rf"^(?:{_IDENT}\s*[:=]\s*)?(?:async\s+)?function\b\s*\*?\s*"
                            rf"(?P<name>{_IDENT})?")),
    # C-family: `Type name(args` / `Type Owner::name(args`, not a statement.
    ("c-function", re.compile(rf"^(?:[\w<>\[\],*&:]+\s+)+[*&]*"
                              rf"(?:(?P<owner>{_IDENT}(?:<[^>]*>)?)::)?"
                            rf"(?P<name>~?{_IDENT})\s*\([^;]*$")),
    # JS/TS/Java class members: `name(args) {` / `async name(args) {`.
    ("c-method", re.compile(rf"^{_MODS}(?:get\s+|set\s+|\*\s*)?(?P<name>{_IDENT})\s*\([^;]*\)\s*"
                          rf"(?::\s*[^{{;]+)?\{{\s*$")),
]

_NOT_NAMES = frozenset(
    "if for while switch return catch else new sizeof do case throw await yield typeof delete "
    "elif except with assert print super not and or in is lambda try finally match loop raise "
    "echo go defer unless until when foreach using goto".split()
)


def match_definition_line(line: str, language: str | None = None) -> tuple[str, str, str] | None:
    """``(kind, name, owner)`` if this single line opens a definition, else ``None``.

    Brace-language signatures (``Type name(args``) are only tried outside Python,
    where they would mostly match calls."""
    text = line.strip()
    if not text or len(text) > 400 or text[0] in "#/*@}\"'":
        return None
    if text.split(None, 1)[0] in _NOT_NAMES:
        return None
    for kind, pattern in _LINE_PATTERNS:
        if kind.startswith("c-"):
            if language == "python":
                continue
            kind = kind[2:]
        m = pattern.match(text)
        if m is None or not m.group("name"):
            continue
        name = m.group("name")
        if name in _NOT_NAMES:
            return None
        owner = m.groupdict().get("owner") or ""
        if kind == "function" and owner:
            kind = "method"
        return kind, name, owner
    return None


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _span_end(lines: list[str], start: int, indent: int) -> int:
    """Last line (0-based) of the block opened at ``start``: up to the next line
    indented no deeper, including it when it merely closes the block."""
    last = start
    for j in range(start + 1, len(lines)):
        text = lines[j].strip()
        if not text:
            continue
        if _indent(lines[j]) <= indent:
            if text[0] in "})]" or text in {"end", "end;"}:
                return j
            if lines[start].rstrip().endswith((",", "(")) and text.startswith(")"):
                continue
            return last
        last = j
    return last


def regex_definitions(source: str, language: str | None = None, max_lines: int = 20_000
                      ) -> list[Definition]:
    """Definitions found by keyword patterns, spans and nesting by indentation."""
    if not isinstance(source, str) or not source:
        return []
    lines = source.split("\n")[:max_lines]
    found: list[tuple[int, int, str, str, str]] = []
    for i, line in enumerate(lines):
        hit = match_definition_line(line, language)
        if hit is not None:
            kind, name, owner = hit
            found.append((i, _span_end(lines, i, _indent(line)), kind, name, owner))
    out: list[Definition] = []
    stack: list[tuple[int, str, str]] = []  # (end, qualified, kind)
    for start, end, kind, name, owner in found:
        while stack and stack[-1][0] < start:
            stack.pop()
        parent = stack[-1] if stack else None
        base = f"{owner}.{name}" if owner else name
        qualified = f"{parent[1]}.{base}" if parent else base
        stack.append((end, qualified, kind))
        if kind == "scope":
            continue
        if kind == "function" and parent is not None and parent[2] in {"class", "scope"}:
            kind = "method"
        out.append(Definition(name, qualified, kind, start + 1, start + 1, end + 1))
    return out
