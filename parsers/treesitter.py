"""The only module that touches the tree-sitter API, so version differences
(0.21's ``Language(path, name)``, 0.23's ``query.captures``, 0.25's
``QueryCursor``) stay in one place. Every function degrades to ``None``/``[]``
instead of raising: callers fall back to text heuristics.
"""

from __future__ import annotations

import importlib
import re
import threading
from functools import cache
from importlib import resources

from tree_sitter import Language, Node, Parser, Query, QueryCursor, QueryError, Tree

from parsers.languages import GRAMMARS, QUERY_FILES

# Bigger inputs are not source files an agent edits; skipping them bounds latency.
MAX_SOURCE_BYTES = 4_000_000
# A pathological query/source pair must not stall the caller.
MATCH_LIMIT = 50_000

Match = tuple[int, dict[str, list[Node]]]

__all__ = ["MATCH_LIMIT", "MAX_SOURCE_BYTES", "Match", "Node", "get_language", "get_query",
           "node_text", "parse", "run_query", "to_bytes"]

_local = threading.local()
_INCLUDE = re.compile(r"^;\s*include:\s*[\w-]+\s*$")


@cache
def get_language(language: str) -> Language | None:
    """The compiled grammar for ``language``, or ``None`` if unknown or not installed."""
    spec = GRAMMARS.get(language)
    if spec is None:
        return None
    module_name, attr = spec
    try:
        module = importlib.import_module(module_name)
        return Language(getattr(module, attr)())
    except (ImportError, AttributeError, TypeError, ValueError):
        return None


@cache
def get_query(language: str) -> Query | None:
    """The tags query shipped as ``parsers/queries/<lang>-tags.scm``, compiled once. A line
    ``; include: NAME`` there stands for the patterns of ``queries/NAME.scm``, which
    languages with alike grammars share."""
    lang = get_language(language)
    stem = QUERY_FILES.get(language)
    if lang is None or stem is None:
        return None
    try:
        source = _with_includes(_query_text(f"{stem}-tags"))
    except (FileNotFoundError, OSError):
        return None
    try:
        return Query(lang, source)
    except (QueryError, ValueError):
        return None


def _query_text(name: str) -> str:
    return (resources.files("parsers") / "queries" / f"{name}.scm").read_text("utf-8")


def _with_includes(source: str) -> str:
    """The query text with each ``; include: NAME`` line replaced by ``queries/NAME.scm``."""
    return "".join(_query_text(line.split(":", 1)[1].strip()) if _INCLUDE.match(line) else line
                   for line in source.splitlines(keepends=True))


def _parser(language: str) -> Parser | None:
    # Parsers hold mutable state, so each thread gets its own.
    cache: dict[str, Parser] | None = getattr(_local, "parsers", None)
    if cache is None:
        cache = _local.parsers = {}
    parser = cache.get(language)
    if parser is None:
        lang = get_language(language)
        if lang is None:
            return None
        parser = cache[language] = Parser(lang)
    return parser


def to_bytes(source: str) -> bytes:
    return source.encode("utf-8", errors="replace")


def parse(source: bytes, language: str) -> Tree | None:
    """Parse ``source``; ``None`` when the language is unavailable or the input too big."""
    if len(source) > MAX_SOURCE_BYTES:
        return None
    parser = _parser(language)
    if parser is None:
        return None
    try:
        return parser.parse(source)
    except (ValueError, TypeError, RuntimeError):
        return None


def run_query(source: bytes, language: str) -> list[Match] | None:
    """All matches of the language's tags query over ``source``; ``None`` when the
    query could not run at all (no grammar or query file, input too big)."""
    query = get_query(language)
    if query is None:
        return None
    tree = parse(source, language)
    if tree is None:
        return None
    try:
        return QueryCursor(query, match_limit=MATCH_LIMIT).matches(tree.root_node)
    except (ValueError, TypeError, RuntimeError):
        return None


def node_text(node: Node) -> str:
    raw = node.text
    return raw.decode("utf-8", errors="replace") if raw is not None else ""
