"""One large message per Add, in the shapes agents' tool results take, through HTTP: how long
the Add takes and whether a Search then finds it.

    python -m eval.load.large_messages [--mb 2] [--runs 3] [--out eval/results/large_messages.json]

Each shape is one message of `--mb` MB in an Add of its own (a session of its own) to a real
`codemem serve` on a new data directory: a build log of ~30k short lines, one line of minified
JSON, one line of text of a few distinct words, a long diff, and prose (an agent's notes). The message ends with a mark of its
own, which a Search (top_k 5) must then find: the whole message was indexed. Each shape is
sent `--runs` times (new sessions), the Add time as the client sees it; target (issue 42):
each at most 3 s. The texts are generated, seeded, by `shapes` (the tests use the same).
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from eval._paths import RESULTS
from eval._provenance import provenance, write_result
from eval._server import running_server

TARGET_S = 3.0


def build_log(chars: int, seed: int = 1) -> str:
    """A compiler's log: progress lines, warnings with file:line:col, Java-style frames."""
    r = random.Random(seed)
    lines: list[str] = []
    size = 0
    while size < chars:
        k = r.random()
        if k < 0.6:
            line = f"[{len(lines) % 100:3d}%] Building CXX object src/mod_{r.randint(0, 400)}/unit_{r.randint(0, 9999)}.cpp.o"
        elif k < 0.8:
            line = (f"src/mod_{r.randint(0, 400)}/unit_{r.randint(0, 9999)}.cpp:{r.randint(1, 900)}:{r.randint(1, 80)}: "
                    f"warning: unused variable 'v{r.randint(0, 99)}' [-Wunused-variable]")
        else:
            line = f"    at org.sample.pkg{r.randint(0, 50)}.Worker{r.randint(0, 300)}.run(Worker.java:{r.randint(1, 500)})"
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


def minified_json(chars: int, seed: int = 2) -> str:
    """One line of JSON with no spaces: an array of records."""
    r = random.Random(seed)
    items: list[str] = []
    size = 0
    while size < chars:
        record = {"id": r.randint(0, 10**9), "name": f"item_{r.randint(0, 99999)}",
                  "tags": [f"t{r.randint(0, 500)}" for _ in range(3)], "path": f"/api/v1/items/{r.randint(0, 9999)}",
                  "ok": r.random() < 0.5, "score": round(r.random(), 4)}
        item = json.dumps(record, separators=(",", ":"))
        items.append(item)
        size += len(item) + 1
    return "[" + ",".join(items) + "]"


def few_words(chars: int, seed: int = 3) -> str:
    """One line of a few distinct words repeated, no punctuation."""
    r = random.Random(seed)
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]
    out: list[str] = []
    size = 0
    while size < chars:
        out.append(r.choice(words))
        size += len(out[-1]) + 1
    return " ".join(out)


def _lines(chars: int, line: Callable[[int], str]) -> str:
    out: list[str] = []
    size = 0
    while size < chars:
        out.append(line(len(out)))
        size += len(out[-1])
    return "".join(out)


def diff(chars: int) -> str:
    """A long unified diff: file headers and hunks of added and removed lines, all different."""
    def line(i: int) -> str:
        if i % 40 == 0:
            return f"diff --git a/pkg/module_{i}.py b/pkg/module_{i}.py\n--- a/pkg/module_{i}.py\n+++ b/pkg/module_{i}.py\n@@ -1,6 +1,7 @@\n"
        return f"+def handler_{i}(request, retries={i % 5}):\n" if i % 3 else f"-    return fetch_item(request.item_{i})\n"
    return _lines(chars, line)


def prose(chars: int) -> str:
    """An agent's notes: sentences of ordinary words, one a line, all different."""
    return _lines(chars, lambda i: (f"Step {i}: I read the scheduler again and the retry loop still sleeps before "
                                    f"checking the deadline, so the {i % 7}th attempt can run after the caller has given up.\n"))


SHAPES: dict[str, Callable[[int], str]] = {"build_log": build_log, "minified_json": minified_json,
                                           "few_words": few_words, "diff": diff, "prose": prose}


def marked(text: str, mark: str) -> str:
    """The text with a mark of its own at its end (a Search for the mark finds the message)."""
    return f"{text}\nend of output {mark}"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=2.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", type=Path, default=RESULTS / "large_messages.json")
    args = ap.parse_args(argv)
    prov = provenance("eval.load.large_messages", argv)
    chars = int(args.mb * 1_000_000)
    texts = {name: make(chars) for name, make in SHAPES.items()}
    shapes: dict[str, dict[str, object]] = {}
    with running_server() as srv, httpx.Client(base_url=srv.url, timeout=600, trust_env=False) as client:
        warm = {"request_id": "warm", "user_id": "big", "session_id": "warm",
                "messages": [{"role": "user", "content": "Fix the TypeError in utils/parse.py"}]}
        client.post("/add", json=warm).raise_for_status()
        for name, text in texts.items():
            seconds: list[float] = []
            found: list[bool] = []
            for run in range(args.runs):
                mark = f"mark{name.replace('_', '')}{run}x"
                body = {"request_id": f"{name}-{run}", "user_id": "big", "session_id": f"{name}-{run}",
                        "messages": [{"role": "assistant", "content": marked(text, mark)}]}
                t0 = time.perf_counter()
                client.post("/add", json=body).raise_for_status()
                seconds.append(round(time.perf_counter() - t0, 2))
                r = client.post("/search", json={"user_id": "big", "query": mark, "top_k": 5})
                r.raise_for_status()
                found.append(any(h["session_id"] == f"{name}-{run}" for h in r.json()["data"]))
            shapes[name] = {"chars": len(text), "lines": text.count("\n") + 1, "add_s": seconds,
                            "add_s_max": max(seconds), "found": sum(found), "runs": args.runs}
            print(name, json.dumps(shapes[name]), flush=True)
    result = {"mb": args.mb, "target_s": TARGET_S, "shapes": shapes,
              "all_within_target": all(float(s["add_s_max"]) <= TARGET_S for s in shapes.values()),  # type: ignore[arg-type]
              "all_found": all(s["found"] == s["runs"] for s in shapes.values())}
    write_result(args.out, result, prov)
    print(json.dumps({k: v for k, v in result.items() if k != "shapes"}))


if __name__ == "__main__":
    main()
