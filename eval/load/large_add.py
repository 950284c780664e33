"""What large content costs: the time one Add of one large message takes, by size and kind.

An agent may paste a whole log, a generated file or a long diff into one message. Each Add
reads its messages for tool calls, code references and errors, and rebuilds its session's
experience, so its time grows with the content. Here one message of each kind (a log, a diff,
prose) and size is added, each as a session of its own, in-process, after a small Add has
loaded the model; the README says what it costs from this file (the scale issue owns the speed).

    python -m eval.load.large_add
    python -m eval.load.large_add --sizes-mb 0.1,2 --out /tmp/large_add.json
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from codemem.config import Settings
from codemem.contract.types import AddRequest, Message
from codemem.memory import Memory
from eval._paths import RESULTS
from eval._provenance import provenance, write_result


def _log(i: int) -> str:
    return f"2026-01-01 12:{i // 60 % 60:02d}:{i % 60:02d} ERROR worker.py:{200 + i % 50} TimeoutError: GET /api/v1/items/{i} took {i % 40}.2s (retry {i % 4})\n"


def _diff(i: int) -> str:
    if i % 40 == 0:
        return f"diff --git a/pkg/module_{i}.py b/pkg/module_{i}.py\n--- a/pkg/module_{i}.py\n+++ b/pkg/module_{i}.py\n@@ -1,6 +1,7 @@\n"
    return f"+def handler_{i}(request, retries={i % 5}):\n" if i % 3 else f"-    return fetch_item(request.item_{i})\n"


def _prose(i: int) -> str:
    return (f"Step {i}: I read the scheduler again and the retry loop still sleeps before checking the "
            f"deadline, so the {i % 7}th attempt can run after the caller has given up.\n")


KINDS: dict[str, Callable[[int], str]] = {"log": _log, "diff": _diff, "prose": _prose}


def content(kind: str, size_bytes: int) -> str:
    """A message of about `size_bytes` of one kind of content, its lines all different."""
    lines, total, i = [], 0, 0
    while total < size_bytes:
        line = KINDS[kind](i)
        lines.append(line)
        total += len(line)
        i += 1
    return "".join(lines)


def run(sizes_mb: list[float]) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="codemem-large-") as data:
        memory = Memory(Settings().replace({"storage.data_dir": data, "maintenance.interval_s": 0}))
        try:
            memory.add(AddRequest("warm", "u", "warm", [Message("user", "Fix the flaky test in tests/test_io.py")]))
            adds: list[dict[str, object]] = []
            at_2mb: list[float] = []
            for kind in KINDS:
                for mb in sizes_mb:
                    text = content(kind, int(mb * 2**20))
                    started = time.perf_counter()
                    memory.add(AddRequest(f"{kind}-{mb}", "u", f"{kind}-{mb}", [Message("user", text)]))
                    seconds = time.perf_counter() - started
                    adds.append({"kind": kind, "mb": mb, "chars": len(text), "add_s": round(seconds, 2)})
                    if mb == 2.0:
                        at_2mb.append(round(seconds, 2))
                    print(f"{kind} {mb} MB: {seconds:.1f} s", flush=True)
        finally:
            memory.close()
    return {"adds": adds, "slowest_2mb_s": max(at_2mb, default=None)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes-mb", default="0.1,0.5,2", help="message sizes, MB (2**20 characters)")
    ap.add_argument("--out", type=Path, default=RESULTS / "large_add.json")
    args = ap.parse_args(argv)
    prov = provenance("eval.load.large_add", argv)
    result = run([float(x) for x in args.sizes_mb.split(",")])
    write_result(args.out, result, prov)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
