"""Definitions, calls and enclosing scopes from tree-sitter tags queries.

The query files are the contract; this module only dispatches on capture names:

- ``@name.definition.<kind>`` / ``@definition.<kind>``: a definition's name and whole node
- ``@name.reference.call`` / ``@reference.call``: a call's callee name and whole call
- ``@name.scope`` / ``@scope``: a container that qualifies names but is not itself
  reported (Rust ``impl`` blocks)
- ``@qualifier``: an explicit owner written in the definition (Go receivers,
  C++ ``Foo::bar``)

Qualified names join every enclosing definition or scope with ``.`` in all
languages: ``QuerySet.filter``, ``Outer.Inner.run``, Rust ``Type.method``,
Go ``T.Method``, C++ ``ns.Foo.bar``, nested functions ``outer.inner``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from parsers.heuristics import regex_definitions
from parsers.scopes import Definition, innermost
from parsers.treesitter import Node, node_text, run_query, to_bytes
from parsers.types import Symbol

_DEF_PREFIX = "name.definition."
_REF_PREFIX = "name.reference."
_OWNER_KINDS = frozenset({"class", "interface", "enum", "scope"})
_GENERICS = re.compile(r"<[^<>]*>")
_CALLEE = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|::|->)[A-Za-z_$][\w$]*)*")
_SELF = re.compile(r"^(?:self|this|Self|cls)\.")


@dataclass(slots=True)
class _Container:
    name: str
    kind: str
    start: int
    end: int
    qualifier: str
    name_node: Node
    node: Node


def _clean_name(text: str) -> str:
    text = _GENERICS.sub("", _GENERICS.sub("", text))
    return text.replace("::", ".").replace("->", ".").strip().strip("\"'`")


def _containers(matches: Iterable[tuple[int, dict[str, list[Node]]]]) -> tuple[
    list[_Container], list[tuple[Node, Node]]
]:
    defs: dict[tuple[int, str], _Container] = {}
    calls: dict[int, tuple[Node, Node]] = {}
    for _, caps in matches:
        for key, nodes in caps.items():
            if not nodes:
                continue
            name_node = nodes[0]
            if key.startswith(_DEF_PREFIX) or key == "name.scope":
                kind = key[len(_DEF_PREFIX):] if key != "name.scope" else "scope"
                whole = caps.get("definition." + kind if kind != "scope" else "scope")
                node = whole[0] if whole else (name_node.parent or name_node)
                qual = caps.get("qualifier")
                slot = (name_node.start_byte, "scope" if kind == "scope" else "def")
                old = defs.get(slot)
                if old is not None and old.end - old.start >= node.end_byte - node.start_byte:
                    continue
                defs[slot] = _Container(
                    name=_clean_name(node_text(name_node)),
                    kind=kind,
                    start=node.start_byte,
                    end=node.end_byte,
                    qualifier=_clean_name(node_text(qual[0])) if qual else "",
                    name_node=name_node,
                    node=node,
                )
            elif key.startswith(_REF_PREFIX):
                whole = caps.get("reference." + key[len(_REF_PREFIX):])
                call = whole[0] if whole else name_node
                calls.setdefault(name_node.start_byte, (name_node, call))
    return sorted(defs.values(), key=lambda c: (c.start, -c.end)), list(calls.values())


def _qualify(containers: list[_Container]) -> list[Definition]:
    """Sweep containers in start order with a stack of the ones still open."""
    out: list[Definition] = []
    stack: list[tuple[_Container, str]] = []
    for c in containers:
        while stack and stack[-1][0].end <= c.start:
            stack.pop()
        parent, prefix = stack[-1] if stack and stack[-1][0].end >= c.end else (None, "")
        base = f"{c.qualifier}.{c.name}" if c.qualifier else c.name
        qualified = f"{prefix}.{base}" if prefix else base
        stack.append((c, qualified))
        if c.kind == "scope" or not c.name:
            continue
        kind = c.kind
        owned = parent is not None and parent.kind in _OWNER_KINDS
        if kind == "function" and (c.qualifier or owned):
            kind = "method"
        out.append(
            Definition(
                name=c.name,
                qualified_name=qualified,
                kind=kind,
                line=c.name_node.start_point[0] + 1,
                start_line=c.node.start_point[0] + 1,
                end_line=c.node.end_point[0] + 1,
            )
        )
    return out


def _callee(name_node: Node, call_node: Node, source: bytes) -> str:
    name = node_text(name_node)
    if call_node is name_node or call_node.start_byte > name_node.start_byte:
        return name
    text = source[call_node.start_byte:name_node.end_byte].decode("utf-8", errors="replace")
    text = re.sub(r"\s+", "", text)
    if text.startswith("new") and text[3:4].isupper():
        text = text[3:]
    if len(text) > 120 or not _CALLEE.fullmatch(text):
        return name
    return _SELF.sub("", text.replace("::", ".").replace("->", "."))


def _analyze(source: str, language: str | None) -> tuple[list[Definition], list[Symbol]] | None:
    """Definitions and calls, or ``None`` when tree-sitter could not run on it."""
    if not isinstance(source, str) or not source or not language:
        return [], []
    data = to_bytes(source)
    matches = run_query(data, language)
    if matches is None:
        return None
    containers, call_nodes = _containers(matches)
    calls = [
        Symbol(name=node_text(n), qualified_name=_callee(n, c, data), kind="call",
               line=n.start_point[0] + 1)
        for n, c in sorted(call_nodes, key=lambda pair: pair[0].start_byte)
    ]
    return _qualify(containers), calls


def definitions(source: str, language: str | None) -> list[Definition]:
    """Definitions with line ranges; keyword/indentation heuristics where tree-sitter
    cannot run (no grammar or query for the language, input too big)."""
    analysis = _analyze(source, language)
    if analysis is None or not language:
        return regex_definitions(source, language)
    return analysis[0]


def extract_symbols(source: str, language: str) -> list[Symbol]:
    """Definitions and calls (``kind="call"``) in source order; ``[]`` for unknown languages."""
    analysis = _analyze(source, language)
    if analysis is None:
        return []
    defs, calls = analysis
    symbols = [Symbol(d.name, d.qualified_name, d.kind, d.line) for d in defs] + calls
    return sorted(symbols, key=lambda s: (s.line, s.kind == "call"))


def enclosing_symbols(source: str, language: str, lines: Iterable[int]) -> dict[int, str]:
    """1-based line -> qualified name of the innermost enclosing definition.

    Lines outside every definition are left out. Unknown languages (or sources
    tree-sitter cannot make sense of) use indentation/keyword heuristics.
    """
    try:
        wanted = list(lines)
    except TypeError:
        return {}
    if not isinstance(source, str) or not source or not wanted:
        return {}
    found = innermost(definitions(source, language), wanted)
    return {line: d.qualified_name for line, d in found.items()}
