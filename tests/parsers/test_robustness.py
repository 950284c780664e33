from __future__ import annotations

import random
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parsers import (
    CodeRefs,
    enclosing_symbols,
    extract_symbols,
    extract_text_refs,
    language_for_path,
    merge_refs,
    parse_diff,
)
from parsers.languages import GRAMMARS
from tests.parsers.conftest import FIXTURES


def _random_text(seed: int, size: int, encoding: str) -> str:
    rnd = random.Random(seed)
    return bytes(rnd.randrange(256) for _ in range(size)).decode(encoding, errors="replace")


NASTY = [
    "",
    " \n\t\r\n",
    "\x00" * 100,
    "a" * 1_000_000,
    ("x" * 6000 + "\n") * 20,
    "```",
    "```python\n",
    "```\n" * 101,
    "Traceback (most recent call last):\n" + "  File \"x.py\", line 1, in f\n" * 2000,
    "@@ -1,2 +1,2 @@\n" * 1000,
    "diff --git a/x b/x\n" * 500,
    "\ud800 lone surrogate \udfff in File \"a.py\", line 3, in f",
    "`" * 5000,
    "a." * 50_000,
    "/" * 50_000 + ".py",
    "at (" * 10_000,
    "$ " * 10_000,
    _random_text(1, 50_000, "utf-8"),
    _random_text(2, 50_000, "latin-1"),
]


@pytest.mark.parametrize("text", NASTY, ids=[f"nasty{i}" for i in range(len(NASTY))])
def test_nasty_inputs_do_not_raise(text: str) -> None:
    assert isinstance(extract_text_refs(text), CodeRefs)
    assert isinstance(parse_diff(text), list)
    assert isinstance(extract_symbols(text[:20_000], "python"), list)
    assert isinstance(enclosing_symbols(text[:20_000], "cpp", [1, 5]), dict)
    assert language_for_path(text[:300]) in {None, *GRAMMARS}


@pytest.mark.parametrize("value", [None, 42, b"bytes", ["list"]])
def test_non_string_inputs_return_empty(value: object) -> None:
    assert extract_text_refs(value).is_empty()  # type: ignore[arg-type]
    assert parse_diff(value) == []  # type: ignore[arg-type]
    assert extract_symbols(value, "python") == []  # type: ignore[arg-type]
    assert enclosing_symbols(value, "python", [1]) == {}  # type: ignore[arg-type]
    assert merge_refs([value]) == CodeRefs()  # type: ignore[list-item]


def test_one_megabyte_line_is_skipped_quickly() -> None:
    text = "File \"a.py\", line 1 " + "x" * 1_000_000 + "\nValueError: bad\n"
    started = time.perf_counter()
    refs = extract_text_refs(text)
    assert time.perf_counter() - started < 1.0
    assert refs.exceptions == ["ValueError"]
    assert refs.frames == []


def test_200kb_transcript_is_fast() -> None:
    parts = [p.read_text() for p in sorted(FIXTURES.glob("t*/*"))]
    parts += [p.read_text() for p in sorted(FIXTURES.glob("diffs/*.diff"))]
    base = "\n\n".join(parts)
    text = (base * (200_000 // len(base) + 1))[:200_000]
    extract_text_refs(text)  # warm caches (query compilation)
    best = min(_timed(text) for _ in range(3))
    # ~50 ms on an idle machine; the bound only catches pathological regressions
    # (catastrophic backtracking, quadratic scans) on a loaded CI box.
    assert best < 1.0


def _timed(text: str) -> float:
    started = time.perf_counter()
    extract_text_refs(text)
    return time.perf_counter() - started


@settings(max_examples=150, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=st.sampled_from(list("ab.:/\\`$@-+ \n\t()[]'\"{}#>E_0")) | st.characters(),
               max_size=400))
def test_fuzzed_text_never_raises(text: str) -> None:
    refs = extract_text_refs(text)
    assert isinstance(refs.terms(), list)
    assert isinstance(parse_diff("--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,3 @@ def f(\n" + text), list)


@settings(max_examples=60, deadline=None, database=None)
@given(st.text(max_size=300), st.sampled_from([*sorted(GRAMMARS), "ruby", ""]))
def test_fuzzed_code_never_raises(source: str, language: str) -> None:
    assert isinstance(extract_symbols(source, language), list)
    assert isinstance(enclosing_symbols(source, language, range(1, 5)), dict)


def test_fixture_tree_is_small() -> None:
    total = sum(p.stat().st_size for p in Path(FIXTURES).rglob("*") if p.is_file())
    assert total < 100_000
