"""Code references from coding-agent trajectories: diffs, code, tracebacks, prose.

Pure functions over strings: no storage, no network, deterministic. Unknown
languages fall back to text heuristics and no input raises.

Qualified names join enclosing definitions with ``.`` in every language:
``QuerySet.filter``, Rust ``impl Foo { fn bar }`` -> ``Foo.bar``, Go
``func (s *T) M()`` -> ``T.M``, C++ ``void ns::Foo::bar()`` -> ``Foo.bar``
(inside ``namespace ns {}`` -> ``ns.Foo.bar``), nested functions ``outer.inner``.
"""

from __future__ import annotations

from parsers.diffs import parse_diff
from parsers.exact import exact_terms
from parsers.languages import language_for_path
from parsers.refs import merge_refs
from parsers.symbols import enclosing_symbols, extract_symbols
from parsers.text import extract_text_refs
from parsers.types import CodeRefs, DiffFile, Frame, Hunk, Symbol

__all__ = [
    "CodeRefs",
    "DiffFile",
    "Frame",
    "Hunk",
    "Symbol",
    "enclosing_symbols",
    "exact_terms",
    "extract_symbols",
    "extract_text_refs",
    "language_for_path",
    "merge_refs",
    "parse_diff",
]
