"""Whether the fine-tuned encoder ships: the rule of `README.md` ("What ships it"), written
before any `make train` run with it, applied to two builds at one commit.

`python -m train --encoder minilm` and `python -m train --encoder tuned` each train the
relevance model on their own encoder's vectors (every data step re-embedded), and its card
(`ranker.json`) holds its out-of-fold figures: leave one repository out over the training
queries, and the OpenHands sessions scored as a check, never trained on. The tuned encoder
ships when, against the packaged one's build:
- MRR over all queries is at least `ALL_GAIN` higher;
- no kind of at least `MIN_KIND` queries (sessions, commits, projects, chats) loses more
  than `KIND_LOSS` in MRR;
- the OpenHands check loses no more than `CHECK_LOSS` in MRR.

Both builds' question and decision readers are reported beside it (their own out-of-fold
figures): the readers read the encoder's vectors and are retrained on them. So are each
kind's single signals (dense alone, BM25 alone, their fusion): what the encoder changed
before the learned model read it.

    python -m train.encoder.ship --minilm CACHE/ranker/KEY --tuned CACHE2/ranker/KEY \\
        [--readers-minilm CACHE ...] --out eval/results/encoder-ship.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from eval._provenance import finish, provenance
from train.ranker.ship_rule import interval

ALL_GAIN = 0.005
KIND_LOSS = 0.01
CHECK_LOSS = 0.01
MIN_KIND = 100
CHECK = "openhands (check: never trained on)"


def figures(card: dict[str, Any]) -> dict[str, dict[str, float]]:
    """The learned model's out-of-fold figures by kind, and the check's, from a ranker card."""
    out = {kind: table["learned"] for kind, table in card["cv"]["by_kind"].items()}
    out["check: openhands"] = card["cv"]["by_source"][CHECK]["learned"]
    return out


def baselines(card: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Each kind's MRR out of fold by the dense signal alone, BM25 alone and their fusion, from
    a ranker card: where the encoder's change shows before the learned model reads it."""
    return {kind: {name: table[name]["mrr"] for name in ("dense", "bm25", "fused")}
            for kind, table in card["cv"]["by_kind"].items()}


def decide(minilm: dict[str, dict[str, float]], tuned: dict[str, dict[str, float]]) -> dict[str, Any]:
    """Each condition of the rule, with the figures it read, and the verdict."""
    def diff(kind: str) -> float:
        return round(tuned[kind]["mrr"] - minilm[kind]["mrr"], 4)

    kinds = [k for k in minilm if k not in ("all", "check: openhands") and minilm[k]["queries"] >= MIN_KIND]
    conditions = {
        f"all queries: MRR at least +{ALL_GAIN}": {"difference": diff("all"), "met": diff("all") >= ALL_GAIN},
        **{f"{kind}: MRR no more than {KIND_LOSS} lower": {"difference": diff(kind), "met": diff(kind) >= -KIND_LOSS}
           for kind in kinds},
        f"OpenHands check: MRR no more than {CHECK_LOSS} lower": {"difference": diff("check: openhands"),
                                                                  "met": diff("check: openhands") >= -CHECK_LOSS},
    }
    return {"conditions": conditions, "ships": all(c["met"] for c in conditions.values())}


def numbered(identities: Iterable[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """Each query's identity across two builds (what was asked, where, by whom), with its place
    among identical ones (both builds list their queries in the same order), so that no query
    stands in for another."""
    seen: Counter[tuple[str, ...]] = Counter()
    out = []
    for identity in identities:
        seen[identity] += 1
        out.append((*identity, str(seen[identity])))
    return out


def paired(minilm: Path, tuned: Path) -> dict[str, Any]:
    """The tuned build's model against the MiniLM build's, query by query out of fold, from the
    ranker steps' `per_query.jsonl` (the same queries in both): each kind's mean difference of
    reciprocal rank with its 95% paired bootstrap interval, and the queries each model ranks
    better. Beside the rule, which reads the cards' rounded figures: how sure each is."""
    def rows(folder: Path) -> dict[tuple[str, ...], dict[str, Any]]:
        lines = [json.loads(line) for line in (folder / "per_query.jsonl").read_text().splitlines()]
        keys = numbered((r["kind"] if r["trains"] else "check: openhands", r["source"], r["repo"], r["asked"], r["query"])
                        for r in lines)
        return dict(zip(keys, lines, strict=True))

    a, b = rows(minilm), rows(tuned)
    if a.keys() != b.keys():
        sys.exit(f"the builds ranked different queries: {len(a.keys() ^ b.keys())} differ")
    out: dict[str, Any] = {}
    for group in ("all", *sorted({k[0] for k in a})):
        keys = [k for k in a if k[0] == group or (group == "all" and k[0] != "check: openhands")]
        diff = np.array([b[k]["model_rr"] - a[k]["model_rr"] for k in keys])
        out[group] = {"queries": len(keys), "mrr difference [mean, 2.5%, 97.5%]": interval(diff),
                      "tuned better": int((diff > 0).sum()), "minilm better": int((diff < 0).sum())}
    return out


def reader_figures(cache: Path | None) -> dict[str, Any]:
    """The question and decision readers' out-of-fold figures from a build's cache (newest of each)."""
    if cache is None:
        return {}
    out = {}
    for step, file in (("questions", "questions.json"), ("decisions", "decisions.json")):
        cards = sorted((cache / step).glob(f"*/{file}"), key=lambda p: p.stat().st_mtime)
        if cards:
            card = json.loads(cards[-1].read_text())
            out[step] = {"embedder": card["embedder"], "cv": card["cv"]}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m train.encoder.ship", description=__doc__.split("\n\n")[0])
    ap.add_argument("--minilm", type=Path, required=True, help="the packaged encoder's build: its ranker step's folder")
    ap.add_argument("--tuned", type=Path, required=True, help="the tuned encoder's build: its ranker step's folder")
    ap.add_argument("--readers-minilm", type=Path, help="the packaged encoder's build cache (its readers' cards)")
    ap.add_argument("--readers-tuned", type=Path, help="the tuned encoder's build cache")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    prov = provenance("train.encoder.ship", argv)
    cards = {name: json.loads((folder / "ranker.json").read_text()) for name, folder in
             (("minilm", args.minilm), ("tuned", args.tuned))}
    commits = {name: (card["trained_on"]["commit"], card["trained_on"]["clean_tree"]) for name, card in cards.items()}
    if commits["minilm"] != commits["tuned"]:
        sys.exit(f"the builds are not at one commit on clean trees: {commits}")
    found = {name: figures(card) for name, card in cards.items()}
    verdict = decide(found["minilm"], found["tuned"])
    result = {
        "provenance": finish(prov),
        "rule": "train/encoder/README.md, 'What ships it' (written 2026-12-07, before any make train run with the "
                "tuned encoder)",
        "builds_at": {"commit": commits["minilm"][0], "clean_tree": commits["minilm"][1]},
        "models": {name: card["model_id"] for name, card in cards.items()},
        "out_of_fold": found, **verdict,
        "paired_per_query": paired(args.minilm, args.tuned) if all((f / "per_query.jsonl").exists()
                                                                    for f in (args.minilm, args.tuned)) else None,
        "single_signals_mrr": {name: baselines(card) for name, card in cards.items()},
        "readers": {"minilm": reader_figures(args.readers_minilm), "tuned": reader_figures(args.readers_tuned)},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: result[k] for k in ("conditions", "ships", "paired_per_query")}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
