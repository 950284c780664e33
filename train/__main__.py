"""`make train`: rebuild every shipped model at HEAD from public sources, each step cached.

    python -m train [--cache DIR] [--mirrors DIR] [--shared DIR] [--steps a,b] [--check]
                    [--allow-dirty] [--no-install] [--encoder minilm|tuned]

Steps, in order (`train.steps`): the encoder's ONNX form (`encoder`), the agent replays (`replay-mini`, `replay-vorflux`,
`replay-openhands`, `replay-mixed`), the past-fix histories (`pastfix`) and their searches
(`commits`), the dated projects only where the model reads time features, the relevance model
(`ranker`) and the decision reader (`decisions`). `--encoder tuned` builds every one of them on
the vectors of MiniLM fine-tuned by the run itself (`pairs`, `encoder-tuned`); the default is the
encoder that ships (`codemem.config.SHIPPED_ENCODER`). `--steps` runs those named and the steps they
read. Each step's output is kept in `--cache` under a key of its code, data, sources and
parameters (`train.pipeline`): an unchanged step is not run again. Then the models and their
cards are copied into the package (`--no-install`: left in the cache).

Before any work it refuses training text that copies validation text (`train.content_check`,
exit 1, the pairs named), and checks what the steps it must run read: every mirror (a public repository
the session's `fetch` puts in `--mirrors`, at the commit it is read at) and the shared data.
Where one is missing it lists them, each with what to fetch, and exits 2. A tree with
uncommitted changes to tracked files is refused (exit 1) unless `--allow-dirty`: a card names
the commit it was trained at, and a dirty tree's card says so.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from codemem.config import SHIPPED_ENCODER
from eval._paths import SHARED_DATA
from train.content_check import repository_matches
from train.mirrors import DEFAULT_MIRRORS
from train.pipeline import Step, execute, plan
from train.provenance import REPO_ROOT, changed_paths, tree_state
from train.steps import ENCODERS, shipped

DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "codemem-train"
MISSING = 2
COPIES = 1
REFUSED = 1


def selected(steps: list[Step], names: list[str]) -> list[Step]:
    """The steps named and every step they read, in run order."""
    by_name = {s.name: s for s in steps}
    if unknown := [n for n in names if n not in by_name]:
        raise SystemExit(f"unknown step(s) {', '.join(unknown)}; the steps: {', '.join(by_name)}")
    wanted: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name not in wanted:
            wanted.add(name)
            todo += by_name[name].after
    return [s for s in steps if s.name in wanted]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m train", description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help=f"where every step's output is kept ({DEFAULT_CACHE})")
    ap.add_argument("--mirrors", type=Path, default=DEFAULT_MIRRORS, help="where the fetch tool puts repositories")
    ap.add_argument("--shared", type=Path, default=SHARED_DATA, help="the shared data folder (swe-verified-reuse, ...)")
    ap.add_argument("--steps", default="", help="comma-separated steps to run, with the steps they read (default: all)")
    ap.add_argument("--check", action="store_true", help="say what would run and what is missing; run nothing")
    ap.add_argument("--allow-dirty", action="store_true", help="train from a tree with uncommitted changes")
    ap.add_argument("--no-install", action="store_true", help="leave the models in the cache")
    ap.add_argument("--encoder", choices=ENCODERS, default=SHIPPED_ENCODER,
                    help=f"the encoder every model is built on ({SHIPPED_ENCODER}: the one that ships)")
    args = ap.parse_args(argv)
    cache = args.cache.expanduser().resolve()
    print(f"training cache: {cache}", flush=True)
    tree = tree_state()
    print(f"code: commit {tree['commit']}, tree {'clean' if tree['clean_tree'] else 'with uncommitted changes'}", flush=True)
    if not tree["clean_tree"] and not args.allow_dirty and not args.check:
        print("refusing to train: these tracked files differ from HEAD (commit them, or give --allow-dirty and the "
              "cards say the tree was dirty):\n  " + "\n  ".join(changed_paths()), flush=True)
        return 1
    # Fresh by content: no training text may copy a validation text (train/content_check.py).
    if matches := repository_matches(REPO_ROOT, args.shared):
        print(f"refusing to train: {len(matches)} training file(s) match validation text (train/content_check.py; "
              "take the file out or rewrite it):\n  " + "\n  ".join(m.line() for m in matches), flush=True)
        return COPIES
    if args.encoder != SHIPPED_ENCODER and not args.no_install and not args.check:
        print(f"refusing to install models built on --encoder {args.encoder}: the service embeds with "
              f"{SHIPPED_ENCODER} (codemem.config.SHIPPED_ENCODER), and its models must read that encoder's vectors. "
              "A build on another encoder is for comparison (train.encoder.ship): give --no-install.", flush=True)
        return REFUSED
    steps = shipped(args.shared, args.allow_dirty, None if args.no_install else REPO_ROOT, args.encoder)
    if args.steps:
        steps = selected(steps, [s for s in args.steps.split(",") if s])
    planned = plan(steps, cache, args.mirrors, tree)
    for p in planned:
        print(f"  {p.step.name}: {'cached' if p.cached else 'to run' if p.key else 'missing sources'}"
              + (f" ({p.out})" if p.out else ""), flush=True)
    lacking = list(dict.fromkeys(line for p in planned if not p.cached for line in p.missing))
    if lacking:
        print(f"missing: {len(lacking)} source(s) the steps to run read; nothing was run. Fetch each with the "
              f"session's fetch tool (it puts github:<owner>/<name> in {args.mirrors}/<owner>+<name>/repo), "
              "then run again:\n  " + "\n  ".join(lacking), flush=True)
        return MISSING
    if args.check:
        return 0
    execute(planned, cache, args.mirrors, install=not args.no_install)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
