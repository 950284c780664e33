"""Training pairs for a coding encoder from public histories: what a change says (its
message) and what it did (its code window: files, symbols, hunks), as codemem's git import
renders them (issue 55, item 1).

Each history is walked as the importer walks it (`codemem.git.log.iter_changes`, the
first-parent line, a merged pull request as one change), each change turned into its card
(`codemem.git.cards.commit_to_experience`), and the pair is the card's task and its code
window (`codemem.experience.building.render.code_window`). What is left out:
- the evaluation repositories (`train.data.NEVER_REPOS`: held out and dev), never read;
- a change that names an evaluation task of its repository (`#N` of a task key in
  `train.data.evaluation_task_keys`): its fix may be an evaluation gold;
- changes with a message of fewer than four words, or no code window (a change of nothing
  but binary or generated files), and automated ones (dependency bumps, releases);
- every source not in the licence table (`train.licences.require_training`);
- a change whose message shares an 8-word run with any validation text (`fresh`, the
  content check of `train.content_check`): a commit that quotes an evaluation report.

    python -m train.encoder.pairs --mirrors /work/.mirror --shared ../shared/data --out PAIRS.jsonl [--encoder-only]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path

from codemem.experience.building.render import code_window
from codemem.git.cards import commit_to_experience
from codemem.git.log import iter_changes
from train.content_check import Text, check, validation_texts
from train.data import evaluation_task_keys, is_never_repo, task_key_of
from train.licences import require_training
from train.past_fixes.build_data import HISTORIES as PAST_FIX_HISTORIES
from train.past_fixes.build_data import window_clone
from train.provenance import git

# Histories read for the encoder alone, besides the past-fix training histories.
ENCODER_HISTORIES = (
    "pallets/click", "encode/httpx", "python-attrs/attrs", "Textualize/rich", "psf/black",
    "spf13/cobra", "go-chi/chi", "sirupsen/logrus", "stretchr/testify", "urfave/cli",
    "serde-rs/serde", "rayon-rs/rayon", "hyperium/hyper",
    "expressjs/express", "chalk/chalk", "date-fns/date-fns",
    "google/gson", "square/okhttp", "FasterXML/jackson-databind",
    "libuv/libuv", "gabime/spdlog", "google/googletest",
    "rack/rack", "sinatra/sinatra",
)
MAX_CHANGES = 1500  # the newest changes read of each history
# A dependency bot's or a release's change ("Bump x from 1.2 to 1.3", "chore(deps): ...",
# "Release 2.3.0"); a person's "Bump minimum Python version to 3.9" is kept.
_AUTOMATED = re.compile(r"^(bump \S+ from \S+ to |bump version|build\(deps|chore\(deps|chore\(release|release |"
                        r"prepare release|update changelog|merge branch|merge pull request #\d+ from (dependabot|renovate)/)",
                        re.IGNORECASE)
_NUMBER = re.compile(r"#(\d+)\b")


def histories(encoder_only: bool = False) -> list[str]:
    """Every history the pairs are read from (with `encoder_only`, those of the written reports:
    `make train`'s `pairs` step), evaluation repositories left out."""
    names = [*([] if encoder_only else PAST_FIX_HISTORIES), *ENCODER_HISTORIES]
    return [r for r in dict.fromkeys(names) if not is_never_repo(r)]


def pairs_of(repository: str, git_dir: Path, work: Path, evaluation: frozenset[str],
             counts: Counter[str]) -> list[dict[str, str]]:
    """The pairs of one history's newest `MAX_CHANGES` changes (walked in a clone under
    `work` sharing the mirror's objects, at the mirror's HEAD commit)."""
    tip = git("--git-dir", str(git_dir), "rev-parse", "HEAD^{commit}")
    if tip is None:
        sys.exit(f"the mirror of {repository} at {git_dir} has no HEAD commit: fetch it again")
    clone = window_clone(git_dir, tip, work / repository.replace("/", "+"))
    out = []
    for change in iter_changes(str(clone), max_commits=MAX_CHANGES):
        message = change.message.strip()
        if len(message.split()) < 4 or _AUTOMATED.match(message):
            counts["automated or short"] += 1
            continue
        if any(task_key_of(repository, int(n)) in evaluation for n in _NUMBER.findall(message)):
            counts["names an evaluation task"] += 1
            continue
        experience = commit_to_experience(change)
        code = code_window(experience.card.text)
        if not code:
            counts["no code window"] += 1
            continue
        out.append({"repo": repository, "sha": change.sha, "message": experience.card.task, "code": code})
    return out


def fresh(pairs: list[dict[str, str]], validation: list[Text]) -> tuple[list[dict[str, str]], list[str]]:
    """The pairs whose message shares no 8-word run with a validation text
    (`train.content_check.validation_texts`), and the repository@sha of those left out (each
    pair is its own file to `train.content_check.check`)."""
    texts = [Text(f"{p['repo']}@{p['sha']}", "message", "body", p["message"]) for p in pairs]
    copied = {m.training.file for m in check(texts, validation) if m.rule == "8-word run"}
    return [p for p in pairs if f"{p['repo']}@{p['sha']}" not in copied], sorted(copied)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--shared", type=Path, default=Path("../shared/data"))
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--work", type=Path, default=Path.home() / ".cache" / "codemem-train" / "encoder-pairs",
                        help="where the histories are walked (clones sharing the mirrors' objects)")
    parser.add_argument("--encoder-only", action="store_true",
                        help="only the encoder's own histories (those the written reports are of)")
    args = parser.parse_args(argv)
    evaluation = evaluation_task_keys(args.shared)
    validation = validation_texts(shared=args.shared)
    counts: Counter[str] = Counter()
    per_repo = {}
    started = time.monotonic()
    with args.out.open("w") as f:
        for repository in histories(args.encoder_only):
            require_training(repository, "encoder pairs")
            git_dir = args.mirrors / repository.replace("/", "+") / "repo"
            if not (git_dir / "HEAD").is_file():
                sys.exit(f"missing history {repository}: fetch github:{repository}")
            rows, copied = fresh(pairs_of(repository, git_dir, args.work, evaluation, counts), validation)
            counts["shares an 8-word run with validation text"] += len(copied)
            per_repo[repository] = len(rows)
            for row in rows:
                f.write(json.dumps(row) + "\n")
            print(f"{repository}: {len(rows)} pairs ({time.monotonic() - started:.0f} s)", file=sys.stderr)
    summary = {"pairs": sum(per_repo.values()), "histories": len(per_repo), "per_repo": per_repo,
               "left_out": dict(counts), "seconds": round(time.monotonic() - started)}
    args.out.with_suffix(".summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k != "per_repo"}))


if __name__ == "__main__":
    main()
