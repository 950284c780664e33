"""CPU time of reading references out of a text (`parsers.extract_text_refs`), in-process.

    python -m eval.load.parse_cost [--kb 100,200,400] [--runs 5] [--out eval/results/tmp/parse_cost.json]

Two kinds of text: transcripts of each `--kb` size made of the parser test fixtures
(tracebacks, diffs, test output, prose) repeated, and hostile shapes that a backtracking
pattern could choke on, each as lines of the longest length read (`MAX_LINE_CHARS`) filling
200 KB (runs of `at (`, `a.`, backticks, `$ `, slashes, fences, hunk headers). Each text is
read once untimed (tree-sitter queries compile on first use), then `--runs` times; the
figure is the least CPU time of this process over the runs (`time.process_time`: other
processes on a busy machine do not add to it) in ms, with the throughput in MB/s. The tests
check that the work grows in proportion to the text, counted rather than timed
(`tests/parsers/test_robustness.py`); this is what it costs.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from eval._paths import REPO_ROOT
from eval._provenance import provenance, write_result
from parsers import extract_text_refs
from parsers.text import MAX_LINE_CHARS

FIXTURES = REPO_ROOT / "tests" / "fixtures" / "parsers"


def transcript(chars: int) -> str:
    """`chars` characters of the parser fixtures, repeated."""
    parts = [p.read_text() for p in sorted(FIXTURES.glob("t*/*"))]
    parts += [p.read_text() for p in sorted(FIXTURES.glob("diffs/*.diff"))]
    base = "\n\n".join(parts)
    return (base * (chars // len(base) + 1))[:chars]


# Units repeated to fill a line; fences and hunk headers are short lines of their own.
LINE_UNITS = {"at (": "at (", "a.": "a.", "backticks": "`", "dollar": "$ ", "slashes": "/",
              "quotes": '"', "file-colon": 'File "a.py", line '}
SHORT_LINES = {"fences": "```\n", "hunk-headers": "@@ -1,2 +1,2 @@\n"}


def hostile(chars: int = 200_000) -> dict[str, str]:
    """About `chars` characters of each hostile shape, by name."""
    named = {}
    for name, unit in LINE_UNITS.items():
        line = (unit * (MAX_LINE_CHARS // len(unit)))[:MAX_LINE_CHARS] + "\n"
        named[name] = line * (chars // len(line))
    named.update({name: line * (chars // len(line)) for name, line in SHORT_LINES.items()})
    return named


def cpu_ms(text: str, runs: int) -> float:
    """The least CPU time of `runs` reads of `text`, after one untimed read, in ms."""
    extract_text_refs(text)
    best = float("inf")
    for _ in range(runs):
        started = time.process_time()
        extract_text_refs(text)
        best = min(best, time.process_time() - started)
    return round(best * 1000, 2)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kb", default="100,200,400", help="sizes of the transcripts in KB, comma-separated")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--out", type=Path, default=Path("eval/results/tmp/parse_cost.json"))
    args = p.parse_args(argv)
    prov = provenance("eval.load.parse_cost", argv)
    texts = {f"transcript-{kb}kb": transcript(int(kb) * 1000) for kb in args.kb.split(",")}
    texts.update(hostile())
    figures: dict[str, dict[str, Any]] = {}
    for name, text in texts.items():
        ms = cpu_ms(text, args.runs)
        figures[name] = {"chars": len(text), "cpu_ms": ms, "mb_per_s": round(len(text) / 1e3 / max(ms, 0.01), 2)}
        print(f"{name:>20}: {len(text):>9,} chars  {ms:>8.1f} ms CPU  {figures[name]['mb_per_s']:>6.2f} MB/s")
    result: dict[str, Any] = {"runs": args.runs, "texts": figures}
    write_result(args.out, result, prov)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
