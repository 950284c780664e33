"""How large the shipped Search's answers are on a noisy memory of training sessions: a check of
the answer's shape (`codemem/ranking/answer.py`) on public data, never on evaluation data.

    nice -n 10 python -m train.ranker.answer_size --sessions /work/data/sessions/vorflux --limit 150

The first `--limit` tasks of `swe-verified-reuse` (in `build_data`'s order) whose session the
folder holds (`build_data --export`: `<instance_id>.jsonl`, one message a line) are added one by
one in 34-message chunks; before each is added, its problem statement is searched (top_k 100).
Per query: tokens (characters / 4 of every item's content), whether the first experience is a
related task (`links.json`), whether the answer is quiet. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import msgspec
import numpy as np

from codemem.config import Settings
from codemem.contract.types import AddRequest, Message, SearchRequest
from codemem.memory import Memory
from train.ranker.build_data import CHUNK, DATA, interleaved, load


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=Path, required=True, help="one agent's exported sessions")
    ap.add_argument("--limit", type=int, default=150)
    args = ap.parse_args(argv)
    by_repo, labels = load(DATA)
    tasks = [t for t in interleaved(by_repo) if (args.sessions / f"{t['instance_id']}.jsonl").exists()][: args.limit]
    rows: list[dict[str, float | bool]] = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, \
            Memory(Settings().replace({"storage.data_dir": tmp, "maintenance.interval_s": 0})) as memory:
        added: set[str] = set()
        for task in tasks:
            iid = task["instance_id"]
            if added:
                hits = memory.search(SearchRequest(user_id="u", query=task["problem_statement"], top_k=100))
                near = {k for k in labels.get(iid, {}) if k in added}
                first = hits[0].session_id if hits else None
                rows.append({"tokens": sum(len(msgspec.json.encode(h.content)) for h in hits) / 4,
                             "related": bool(near), "hit1": first in near,
                             "quiet": bool(hits and hits[0].metadata.get("quiet"))})
            lines = (args.sessions / f"{iid}.jsonl").read_text().splitlines()
            messages = [msgspec.json.decode(line, type=Message) for line in lines if line.strip()]
            for n, start in enumerate(range(0, len(messages), CHUNK)):
                memory.add(AddRequest(request_id=f"{iid}:{n}", user_id="u", session_id=iid,
                                      messages=messages[start:start + CHUNK]))
            added.add(iid)

    def summary(kept: list[dict[str, float | bool]]) -> dict[str, float | int]:
        tokens = [float(r["tokens"]) for r in kept]
        return {"queries": len(kept), "tokens_p50": round(float(np.median(tokens)), 1) if kept else 0.0,
                "tokens_p90": round(float(np.quantile(tokens, 0.9)), 1) if kept else 0.0,
                "quiet": round(float(np.mean([r["quiet"] for r in kept])), 3) if kept else 0.0}

    with_related = [r for r in rows if r["related"]]
    print(json.dumps({"sessions": len(tasks), "related": summary(with_related) | {
        "hit@1": round(float(np.mean([r["hit1"] for r in with_related])), 3) if with_related else 0.0},
        "nothing_related": summary([r for r in rows if not r["related"]]),
        "wall_s": round(time.perf_counter() - t0)}))


if __name__ == "__main__":
    main()
