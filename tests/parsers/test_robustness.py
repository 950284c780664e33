from __future__ import annotations

import random
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parsers import (
    CodeRefs,
    Frame,
    enclosing_symbols,
    extract_symbols,
    extract_text_refs,
    language_for_path,
    merge_refs,
    parse_diff,
)
from parsers.languages import GRAMMARS
from parsers.text import MAX_LINE_CHARS
from tests.parsers.conftest import FIXTURES
from tests.parsers.scan_work import count_pattern_work, work_of


def _random_text(seed: int, size: int, encoding: str) -> str:
    rnd = random.Random(seed)
    return bytes(rnd.randrange(256) for _ in range(size)).decode(encoding, errors="replace")


# Junk: nothing in it is a reference, so nothing may come back from any parser.
JUNK = [
    "",
    " \n\t\r\n",
    "\x00" * 100,
    "a" * 1_000_000,
    ("x" * 6000 + "\n") * 20,
    "```",
    "```python\n",
    "```\n" * 101,
    "@@ -1,2 +1,2 @@\n" * 1000,  # hunk headers without a file
    "`" * 5000,
    "a." * 50_000,
    "/" * 50_000 + ".py",
    "at (" * 10_000,
    "$ " * 10_000,
]
# Random bytes decoded two ways: whatever is found must be in the text.
RANDOM = [_random_text(1, 50_000, "utf-8"), _random_text(2, 50_000, "latin-1")]
TRACEBACK = "Traceback (most recent call last):\n" + "  File \"x.py\", line 1, in f\n" * 2000
SURROGATES = "\ud800 lone surrogate \udfff in File \"a.py\", line 3, in f"
FILE_HEADERS = "diff --git a/x b/x\n" * 500


@pytest.mark.parametrize("text", JUNK, ids=[f"junk{i}" for i in range(len(JUNK))])
def test_junk_yields_no_references(text: str) -> None:
    """Hostile junk neither raises nor comes back as references: every parser finds nothing."""
    assert extract_text_refs(text) == CodeRefs()
    assert parse_diff(text) == []
    assert extract_symbols(text[:20_000], "python") == []
    assert enclosing_symbols(text[:20_000], "cpp", [1, 5]) == {}
    assert language_for_path(text[:300]) is None


def test_nasty_inputs_keep_the_reference_they_hold() -> None:
    """A reference survives the nastiness around it: a frame repeated 2,000 times is one
    frame, a path beside lone surrogates is found, and 500 diff headers with no hunk are 500
    files (as parsed) but no edit."""
    assert extract_text_refs(TRACEBACK).frames == [Frame("x.py", 1, "f", "python")]
    assert extract_text_refs(SURROGATES).files == ["a.py"]
    diff = parse_diff(FILE_HEADERS)
    assert len(diff) == 500 and {(f.path, f.added, f.removed, len(f.hunks)) for f in diff} == {("x", 0, 0, 0)}
    for text in (TRACEBACK, SURROGATES, FILE_HEADERS):
        assert language_for_path(text[:300]) is None
        assert enclosing_symbols(text[:20_000], "cpp", [1, 5]) == {}


@pytest.mark.parametrize("text", RANDOM, ids=["utf-8", "latin-1"])
def test_random_bytes_yield_only_what_is_in_them(text: str) -> None:
    """Nothing is made up from random text: every file and name found is in it, and every
    symbol sits on a line of it."""
    refs = extract_text_refs(text)
    for found in (*refs.files, *refs.symbols, *refs.exceptions, *refs.test_ids, *refs.commands):
        assert found in text, found
    assert parse_diff(text) == []
    code = text[:20_000]
    for symbol in extract_symbols(code, "python"):
        assert symbol.name in code and 1 <= symbol.line <= code.count("\n") + 1, symbol
    assert enclosing_symbols(code, "cpp", [1, 5]) == {}
    assert language_for_path(text[:300]) is None


@pytest.mark.parametrize("value", [None, 42, b"bytes", ["list"]])
def test_non_string_inputs_return_empty(value: object) -> None:
    assert extract_text_refs(value).is_empty()  # type: ignore[arg-type]
    assert parse_diff(value) == []  # type: ignore[arg-type]
    assert extract_symbols(value, "python") == []  # type: ignore[arg-type]
    assert enclosing_symbols(value, "python", [1]) == {}  # type: ignore[arg-type]
    assert merge_refs([value]) == CodeRefs()  # type: ignore[list-item]


def test_a_line_over_a_megabyte_is_skipped() -> None:
    """Lines past MAX_LINE_CHARS are blanked before any scan, which is what keeps the cost
    of a text linear: nothing on such a line is found (were it scanned, its frame and both
    its paths would be), and the lines around it are read as usual."""
    text = ("Traceback (most recent call last):\n  File \"src/short_mod.py\", line 9, in caller\n"
            "  File \"src/long_mod.py\", line 3, in handler " + "x" * 1_000_000 + " see src/hidden_mod.py\n"
            "ValueError: bad\n")
    refs = extract_text_refs(text)
    assert refs.frames == [Frame("src/short_mod.py", 9, "caller", "python")]
    assert refs.files == ["src/short_mod.py"]
    assert refs.exceptions == ["ValueError"]


def _transcript(chars: int) -> str:
    """`chars` characters of the parser fixtures (tracebacks, diffs, test output, prose), repeated."""
    parts = [p.read_text() for p in sorted(FIXTURES.glob("t*/*"))]
    parts += [p.read_text() for p in sorted(FIXTURES.glob("diffs/*.diff"))]
    base = "\n\n".join(parts)
    return (base * (chars // len(base) + 1))[:chars]


def _long_lines(unit: str, lines: int) -> str:
    """`lines` lines of `unit` repeated to the longest line that is read."""
    return ((unit * (MAX_LINE_CHARS // len(unit)))[:MAX_LINE_CHARS] + "\n") * lines


# Texts whose reading must cost work in proportion to their size: a transcript, and hostile
# shapes made as large as the parsers read them (lines at the length limit, short lines by
# the thousand, random bytes).
GROWING = {
    "transcript": _transcript(50_000),
    "dotted": _long_lines("a.", 10),
    "frames": _long_lines('File "a.py", line ', 10),
    "backticks": _long_lines("`", 10),
    "calls": _long_lines("at (", 10),
    "prompts": _long_lines("$ ", 10),
    "fences": "```\n" * 5_000,
    "hunk-headers": "@@ -1,2 +1,2 @@\n" * 3_000,
    "random": RANDOM[0],
}


def _calls(run: Callable[[], object]) -> int:
    """Python and C function calls made while `run()` runs."""
    made = 0

    def profile(frame: object, event: str, arg: object) -> None:
        nonlocal made
        made += event in ("call", "c_call")

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return made


@pytest.mark.parametrize("name", GROWING)
def test_work_grows_in_proportion_to_the_text(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """No quadratic scan, the blow-up a long transcript could meet: reading a text twice over
    costs at most twice the work of reading it once, and a few dozen passes over it at most.
    Work is counted two ways that a busy machine does not change: the characters the parsers'
    patterns go over (`tests/parsers/scan_work.py`), and the function calls made. What it
    costs in CPU time is `eval.load.parse_cost`'s figure."""
    text = GROWING[name]
    twice = text + "\n" + text
    work = count_pattern_work(monkeypatch)
    extract_text_refs(twice)  # caches (compiled queries, memoised names) warm for both reads
    once_work, once_calls = work_of(work, lambda: extract_text_refs(text)), _calls(lambda: extract_text_refs(text))
    twice_work, twice_calls = work_of(work, lambda: extract_text_refs(twice)), _calls(lambda: extract_text_refs(twice))
    assert once_work.chars <= 64 * len(text), once_work
    assert once_calls <= 16 * len(text), once_calls
    # Twice the text, at most twice the work (and a little for what is done once per text).
    assert twice_work.chars <= 2.1 * once_work.chars + 1_000, (once_work, twice_work)
    assert twice_work.calls <= 2.1 * once_work.calls + 100, (once_work, twice_work)
    assert twice_calls <= 2.1 * once_calls + 1_000, (once_calls, twice_calls)


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
