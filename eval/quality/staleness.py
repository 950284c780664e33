"""Staleness precision and recall on a real history: is "changed since" right?

An import flags a change when a later change of the first-parent line edited the same code
(a file's symbol named by the diff's hunks, ``codemem.git.staleness``). The ground truth here is
git's own line tracking: for each (file, function) a sampled change edited, ``git log -L
:<function>:<file> <sha>..<tip>`` lists the later commits that touched that function's
lines (as the function stands at the tip, in the file it was renamed to if it was); the
change's code was changed since when any of its functions has such a commit, or is gone (its
file or function no longer found at the tip: git cannot track it; counted as changed, and
the figures without these changes reported apart).

    python -m eval.quality.staleness --repo /work/pastfixes-repos/ripgrep [--sample 80] [--seed 0]

The walk and the flags are exactly an import's (``iter_changes``, ``commit_to_experience``,
``Staleness.mark``), with nothing stored or embedded. Sampled: changes that edited at least one
named function in a file that is not a test, up to ``MAX_KEYS`` of their functions each.
Writes ``eval/results/tmp/staleness.json``.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from codemem.git.cards import commit_to_experience
from codemem.git.facts import is_test_path
from codemem.git.log import iter_changes
from codemem.git.records import ATTRIBUTES, JS_FUNCNAME
from codemem.git.staleness import Staleness
from eval._paths import RESULTS
from eval._provenance import provenance, write_result

MAX_KEYS = 4
_NAME = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")


def function_name(symbol: str) -> str | None:
    """The last name of a symbol (``Printer::replace`` -> ``replace``), for ``-L :name:``."""
    names = _NAME.findall(symbol)
    return names[-1] if names else None


def paths_at_head(repo: str, sha: str) -> dict[str, str]:
    """Files renamed between ``sha`` and HEAD: old path -> path at HEAD (git's rename
    detection over the two trees), so a function is tracked where its file went."""
    out = subprocess.run(["git", "-C", repo, "diff", "-M", "--name-status", "--no-color", sha, "HEAD"],
                         capture_output=True, text=True, timeout=300, check=True).stdout
    moved = {}
    for line in out.splitlines():
        fields = line.split("\t")
        if fields[0].startswith("R") and len(fields) == 3:
            moved[fields[1]] = fields[2]
    return moved


def changed_after(repo: str, sha: str, path: str, name: str, attributes: str) -> bool | None:
    """Whether a commit after ``sha`` (up to HEAD) touched ``name`` in ``path`` by git's line
    tracking; None when git cannot find the function at HEAD."""
    head = subprocess.run(["git", "-C", repo, "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    if head.stdout.strip() == sha:  # nothing came after it (git -L refuses an empty range)
        return False
    command = ["git", "-C", repo, "-c", f"core.attributesFile={attributes}",
               "-c", f"diff.codemem-js.xfuncname={JS_FUNCNAME}",
               "log", "--format=%H", "--no-patch", "-L", f":\\b{name}\\b:{path}", f"{sha}..HEAD"]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    if proc.returncode != 0:
        return None
    return any(re.fullmatch(r"[0-9a-f]{40}", line) for line in proc.stdout.split())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", required=True)
    ap.add_argument("--sample", type=int, default=80)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=RESULTS / "tmp" / "staleness.json")
    args = ap.parse_args(argv)
    prov = provenance("eval.quality.staleness", argv)

    staleness = Staleness()
    changes: list[tuple[str, bool, list[tuple[str, str]]]] = []  # sha, flagged, (path, function)
    for rec in iter_changes(args.repo):
        exp = staleness.mark(commit_to_experience(rec))
        keys = [(step.files[0], name) for step in exp.steps if step.files and not is_test_path(step.files[0])
                for name in dict.fromkeys(filter(None, map(function_name, step.symbols)))]
        if keys:
            changes.append((rec.sha, bool(exp.card.changed_since), keys[:MAX_KEYS]))
    sample = random.Random(args.seed).sample(changes, min(args.sample, len(changes)))

    rows: list[dict[str, Any]] = []
    with tempfile.NamedTemporaryFile("w", suffix=".gitattributes") as fh:
        fh.write(ATTRIBUTES)
        fh.flush()
        for sha, flagged, keys in sample:
            moved = paths_at_head(args.repo, sha)
            found = [changed_after(args.repo, sha, moved.get(path, path), name, fh.name) for path, name in keys]
            gone = all(f is None for f in found)
            truth = gone or any(f for f in found)
            rows.append({"sha": sha, "flagged": flagged, "changed": truth, "gone": gone,
                         "functions": [f"{p}:{n}" for p, n in keys]})
    tp = sum(r["flagged"] and r["changed"] for r in rows)
    fp = sum(r["flagged"] and not r["changed"] for r in rows)
    fn = sum(not r["flagged"] and r["changed"] for r in rows)
    tracked = [r for r in rows if not r["gone"]]
    tp_t = sum(r["flagged"] and r["changed"] for r in tracked)
    summary = {
        "changes_walked": len(changes), "sampled": len(rows),
        "flagged": tp + fp, "changed": tp + fn, "gone": len(rows) - len(tracked),
        "precision": round(tp / max(tp + fp, 1), 3), "recall": round(tp / max(tp + fn, 1), 3),
        "tracked_only": {
            "sampled": len(tracked),
            "precision": round(tp_t / max(sum(r["flagged"] for r in tracked), 1), 3),
            "recall": round(tp_t / max(sum(r["changed"] for r in tracked), 1), 3),
        },
    }
    print(json.dumps(summary, indent=1))
    write_result(args.out, {"repo": args.repo, "seed": args.seed, "summary": summary, "rows": rows}, prov)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
