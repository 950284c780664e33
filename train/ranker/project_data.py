"""Training data of the relevance model's time features: dated multi-session projects whose
choices change, each question searched in its project's memory.

    python -m train.ranker.project_data --projects DIR [--projects DIR ...] --out DIR/projects

A project (the format of `eval/data/timeline`: sessions with dated messages, questions labelled
by the sessions that hold each answer) is Added into its own memory, one Add per session with
its messages' timestamps, in time order; then each question is searched there
(`Memory.signals`, as `build_data` records). Labels: the session that holds the answer 2 (for
a question about the current value, the newest session that states one; for a date, a
replaced value or every value, each session named), and every older session that stated a
value of the subject 1 (related, not the answer); a question about a subject never discussed
has none, as an off-topic report has none in `commit_data`. Writes `queries.jsonl` and
`cards.jsonl` in `build_data`'s format (a card's `id` is `<project>:<session>`, its `agent`
the project's style) and `summary.json`. Only training projects are read: a project whose
split is not "train", "dev" or "heldout" (the fixtures developed against) is refused.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from codemem.contract.types import AddRequest, Message
from codemem.memory import Memory
from codemem.ranking.recipes import DEFAULT_SEARCH
from codemem.store.schema import key_of
from train.data import refuse_evaluation_data
from train.encoder import step_settings
from train.licences import require_training
from train.ranker.build_data import CARD_COLUMNS, signals_record

TRAINING_SPLITS = ("train", "dev", "heldout")


def labels(question: dict[str, Any], project: str) -> dict[str, int]:
    """Each session's label for `question` (by card id)."""
    out = {f"{project}:{s}": 1 for s in question.get("related", ())}
    out.update({f"{project}:{s}": 2 for s in question.get("sessions", ())})
    return out


def replay(project: dict[str, Any], name: str, memory: Memory, out: Any, cards_out: Any) -> int:
    """Add `project`'s sessions into its own memory (user `project:<name>`), search each of its
    questions there, and write the rows; the number of questions."""
    style = str(project.get("style") or "team")
    user = f"project:{name}"
    names: dict[str, str] = {}
    for s in sorted(project["sessions"], key=lambda s: s["messages"][0]["timestamp"]):
        memory.add(AddRequest(request_id=f"{user}:{s['id']}", user_id=user, session_id=s["id"],
                              messages=[Message(role=m["role"], content=m["content"], timestamp=m["timestamp"])
                                        for m in s["messages"]]))
        memory.refresh_session(user, s["id"])
        names[key_of(user, s["id"])] = f"{name}:{s['id']}"
    # The compactor's round at the same point in every run (no background compactor): a
    # Search's BM25 depends on how the store is compacted and indexed when it runs.
    memory.compactor.run_once()
    for i, q in enumerate(project["questions"]):
        signals, _ = memory.signals(user, q["question"], DEFAULT_SEARCH, DEFAULT_SEARCH.retrieval.candidates)
        out.write(json.dumps({"query": f"{name}#{i}", "instance_id": f"{name}#{i}", "repo": f"project:{name}",
                              "replay": "projects", "agent": style, "kind": q["kind"], "text": q["question"],
                              "memory": user, "labels": labels(q, name),
                              "signals": signals_record(signals, names)}) + "\n")
    # In the sessions' order, not the store's (which follows its compaction).
    rows = {str(c["session_key"]): c for c in memory.store.user_rows(key_of(user), "card", [*CARD_COLUMNS, "timestamp"])}
    for key, card_id in names.items():
        if (card := rows.get(key)) is not None:
            cards_out.write(json.dumps({"id": card_id, "instance_id": card_id, "agent": style, "replay": "projects",
                                        **{c: card[c] for c in (*CARD_COLUMNS, "timestamp") if c != "session_key"}})
                            + "\n")
    return len(project["questions"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--projects", type=Path, action="append", required=True, help="a folder of project JSON files")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    files = []
    for folder in args.projects:
        refuse_evaluation_data(folder)
        files += sorted(folder.glob("*.json"))
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    summary: dict[str, Any] = {"projects": {}}
    with tempfile.TemporaryDirectory(prefix="projects-") as tmp, \
            Memory(step_settings(Path(tmp) / "data")) as memory, \
            (args.out / "queries.part").open("w") as out, (args.out / "cards.part").open("w") as cards_out:
        for f in files:
            project = json.loads(f.read_text())
            if project.get("split") not in TRAINING_SPLITS:
                raise SystemExit(f"{f}: split {project.get('split')!r} is not training data ({', '.join(TRAINING_SPLITS)})")
            # A project mined from a history names it; one written for this project is ours.
            require_training(str(project.get("source") or "codemem"), str(f))
            # Two folders may each hold a project of one name: the second is told apart by its file.
            name = str(project["project"])
            name = name if name not in summary["projects"] else f"{name}-{f.stem}"
            n = replay(project, name, memory, out, cards_out)
            summary["projects"][name] = {"file": str(f), "style": project.get("style") or "team",
                                                       "sessions": len(project["sessions"]), "questions": n}
            print(f"{f.name}: {n} questions", flush=True)
    (args.out / "queries.part").rename(args.out / "queries.jsonl")
    (args.out / "cards.part").rename(args.out / "cards.jsonl")
    summary["wall_s"] = round(time.perf_counter() - t0, 1)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
