"""Report-like queries for the encoder: for public changes that fixed something, the report a
user would have filed before the fix, written by helpers given only a brief
(`BRIEF-reports.md`) and the change (issue 55, item 1: "reports paired with what fixed them").

A commit message speaks the fixer's language; a report speaks the user's (symptoms, not code),
and that is the gap the first route (`adapter_trial.py`) could not close with messages alone.
Only the changes of `ENCODER_HISTORIES` are used: none of their repositories is one the relevance
model trains on (the SWE-bench Verified replays, the past-fix histories) or an evaluation one, so
an encoder trained on them never saw a training query's repository.

    python -m train.encoder.written_reports select --pairs PAIRS.jsonl --out DIR [--per-repo 34] [--batch 102]
        [--skip train/encoder/reports.jsonl] [--seed 0]
    python -m train.encoder.written_reports merge --batches DIR [DIR ...] --out train/encoder/reports.jsonl

`select` writes `DIR/batch-K.jsonl` (each change's id, repository, message and code window, cut
to what a helper can read) for the helpers; `merge` joins their `DIR/out-K.jsonl` (id, report)
of every round's folder into the committed file (repository, commit, report: the code windows are rebuilt from the
mirrors by `train.encoder.pairs`, never committed).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections import defaultdict
from pathlib import Path

from train.encoder.pairs import ENCODER_HISTORIES

# A change that says it fixed something (the selection of what to write reports for; a
# report is written for whatever the change did, so a miss here costs only a weaker pair).
FIXED = re.compile(r"\b(fix(e[sd])?|bug|crash(es|ed)?|error|panic(s|ked)?|regression|incorrect(ly)?|wrong|"
                   r"broken|fail(s|ed|ure)?|issue|exception|leak)\b", re.IGNORECASE)
MESSAGE_CHARS = 600
CODE_CHARS = 1500


def select(pairs: list[dict], per_repo: int, seed: int = 0, skip: frozenset[tuple[str, str]] = frozenset()) -> list[dict]:
    """Up to `per_repo` changes of each encoder history whose message says it fixed something,
    none of `skip` (repository, commit: those that have a report already), drawn at random
    (`seed`), in a shuffled order (a batch mixes repositories)."""
    by_repo: dict[str, list[dict]] = defaultdict(list)
    for p in pairs:
        if (p["repo"], p["sha"][:12]) in skip:
            continue
        if p["repo"] in ENCODER_HISTORIES and FIXED.search(p["message"]) and len(p["message"].split()) >= 4:
            by_repo[p["repo"]].append(p)
    rng = random.Random(seed)
    chosen = [p for repo in sorted(by_repo) for p in rng.sample(by_repo[repo], min(per_repo, len(by_repo[repo])))]
    rng.shuffle(chosen)
    return [{"id": f"{p['repo']}@{p['sha'][:12]}", "repo": p["repo"], "message": p["message"][:MESSAGE_CHARS],
             "change": p["code"][:CODE_CHARS]} for p in chosen]


def merge(batches: Path) -> list[dict]:
    """Each written report with the change it was written for, in the batches' order; a
    report for an id no batch holds, or an empty one, is refused."""
    given = {row["id"]: row for path in sorted(batches.glob("batch-*.jsonl")) for row in map(json.loads, path.open())}
    out: list[dict] = []
    for path in sorted(batches.glob("out-*.jsonl")):
        for n, line in enumerate(path.open(), 1):
            if not line.strip():
                continue
            row = json.loads(line)
            if row.get("id") not in given or not str(row.get("report", "")).strip():
                raise SystemExit(f"{path}:{n}: no such change, or no report")
            repo, _, sha = row["id"].partition("@")
            out.append({"repo": repo, "sha": sha, "report": row["report"].strip()})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m train.encoder.written_reports", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    s = sub.add_parser("select")
    s.add_argument("--pairs", type=Path, required=True, help="train.encoder.pairs output")
    s.add_argument("--out", type=Path, required=True)
    s.add_argument("--per-repo", type=int, default=34)
    s.add_argument("--batch", type=int, default=102)
    s.add_argument("--skip", type=Path, help="a reports file whose changes are not chosen again")
    s.add_argument("--seed", type=int, default=0)
    m = sub.add_parser("merge")
    m.add_argument("--batches", type=Path, nargs="+", required=True, help="each round's folder, in order")
    m.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    if args.command == "select":
        skip = frozenset((r["repo"], r["sha"][:12]) for r in map(json.loads, args.skip.open())) if args.skip else frozenset()
        rows = select([json.loads(line) for line in args.pairs.open()], args.per_repo, args.seed, skip)
        args.out.mkdir(parents=True, exist_ok=True)
        for k in range(0, len(rows), args.batch):
            with (args.out / f"batch-{k // args.batch}.jsonl").open("w") as f:
                f.writelines(json.dumps(r) + "\n" for r in rows[k: k + args.batch])
        print(f"{len(rows)} changes of {len({r['repo'] for r in rows})} histories in {-(-len(rows) // args.batch)} batches",
              file=sys.stderr)
    else:
        rows = [row for folder in args.batches for row in merge(folder)]
        args.out.write_text("".join(json.dumps(r) + "\n" for r in rows))
        print(f"{len(rows)} reports", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
