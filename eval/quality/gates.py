"""What each gate of a Search costs and saves, on the validation sets at hand (issue 47).

After the relevance model has ranked a memory's experiences, three gates shape the answer:

- **floor**: experiences past the first five (`AnswerShape.named_experiences`) whose P(related)
  is below the card's `relevance_floor` times the best one's are left out;
- **quiet**: when no experience reaches the card's `quiet_below`, the answer is quiet (the
  first five experiences, a little evidence under the first, short cards after it);
- **empty**: where the card's learned nothing-related decision reads the candidates as
  unrelated (`codemem/ranking/absence.py`, issue 53), the answer is `[]`.

(A hand-set nothing-related rule that answered `[]` left Search in issue 47:
`eval/results/gates-before.json` measured it beside the others at `1e52c56`; the learned
decision came back in issue 53.)

Every query of every set is searched in-process over the same store with the shipped Search
(`gated`), with each gate off in turn (`no-<gate>`), and with none (`ungated`). A gate's **cost**
is the share of answerable queries whose gold is among the first 5 experiences without the gate
and not with it: measured *marginally* (the shipped Search against it with that gate off) and
*alone* (`ungated` against `ungated` with only that gate on). Issue 47 caps it at 1% on every
validation set. Its **saving** is the tokens it takes off the answers: of answerable queries,
and of those asked of a memory where nothing is related. Nothing here chooses a threshold: the
thresholds are the shipped model card's, and these sets are validation.

Sets:
- `swe-contextbench-dev`: SWE-ContextBench Lite's 62 labelled tasks in the store a replay kept
  (`python -m eval.replay --keep DIR`, trajectory level as the replay scores): noisy-all
  (answerable: all 300 trajectories) and absent (the golds removed: nothing related).
- `past-fixes-dev`: the 21 reports of `../shared/data/past-fixes-dev` in the stores
  `python -m eval.quality.past_fixes --store DIR` kept (an item is gold when it names a gold
  commit): each asked of its own repository's history (answerable) and of the next
  repository's, where nothing is related.

    python -m eval.quality.gates --replay /work/replay-gates --pastfixes /work/gates/pastfix
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codemem.config import Settings
from codemem.contract.types import Hit, SearchRequest
from codemem.memory import Memory
from codemem.ranking.search_config import SearchConfig
from eval._paths import RESULTS, SWE_LITE
from eval._provenance import provenance, write_result
from eval.quality.past_fixes import TASKS, gold_rank, hit_text, metrics
from eval.replay.data import CONDITION_KINDS
from eval.replay.ingest import MANIFEST, make_plan
from eval.replay.metrics import Item, count_tokens, first_gold_session_rank

TOP_K = 100
FIRST = 5  # a gold among the first 5 experiences is what a gate must not remove
COST_CAP = 0.01  # issue 47: at most 1% of answerable queries on every validation set
# Each gate, and the settings that turn it off.
GATES: dict[str, dict[str, object]] = {
    "floor": {"calibration.relevance_floor": 0.0},
    "quiet": {"calibration.quiet_below": 0.0},
    "empty": {"calibration.empty_when_unrelated": False},
}


def variants() -> dict[str, dict[str, object]]:
    """Every Search compared: shipped, each gate off, none, and each gate alone."""
    off_all = {path: value for changes in GATES.values() for path, value in changes.items()}
    named: dict[str, dict[str, object]] = {"gated": {}, "ungated": off_all}
    for gate, changes in GATES.items():
        named[f"no-{gate}"] = changes
        named[f"only-{gate}"] = {p: v for p, v in off_all.items() if p not in changes}
    return named


@dataclass(frozen=True)
class Query:
    """One Search of a set: the memory, the question, and how its answer's gold is found."""

    set_name: str
    key: str
    user_id: str
    text: str
    answerable: bool
    rank_of: Callable[[list[Hit]], int | None]  # the first gold experience's 1-based rank, or None


@dataclass(frozen=True)
class Answer:
    rank: int | None
    tokens: float
    empty: bool


def replay_queries(store: Path) -> list[Query]:
    """SWE-ContextBench Lite dev in a kept replay store: noisy-all and absent."""
    plan = make_plan(SWE_LITE, "default", CONDITION_KINDS, None, False)
    manifest = json.loads((store / MANIFEST).read_text()) if (store / MANIFEST).exists() else None
    tasks = plan.task_by_id
    queries = []
    for c in plan.conditions:
        if c.kind not in ("noisy-all", "absent"):
            continue
        if manifest is not None and manifest["users"].get(c.user_id) != list(c.trajectories):
            raise SystemExit(f"{store}: user_id {c.user_id} holds other trajectories than this plan's")
        for tid in c.tasks:
            gold = tasks[tid].gold if c.kind == "noisy-all" else frozenset()

            def rank_of(hits: list[Hit], gold: frozenset[str] = gold) -> int | None:
                return first_gold_session_rank([Item(h.session_id, 0) for h in hits], gold) if gold else None

            queries.append(Query("swe-contextbench-dev", f"{c.kind}:{tid}", c.user_id, tasks[tid].query,
                                 c.kind == "noisy-all", rank_of))
    return queries


def pastfix_queries(tasks_file: Path) -> list[Query]:
    """Past-fixes dev: each report in its repository's memory, and in the next one's."""
    tasks = json.loads(tasks_file.read_text())
    names = sorted({t["repo"].split("/")[1] for t in tasks})
    queries = []
    for task in tasks:
        name = task["repo"].split("/")[1]
        other = names[(names.index(name) + 1) % len(names)]

        def rank_of(hits: list[Hit], gold: list[str] = task["gold_commits"]) -> int | None:
            return gold_rank(_experiences(hits), gold)

        queries.append(Query("past-fixes-dev", f"own:{task['instance_id']}", f"pastfixes-{name}",
                             task["problem_statement"], True, rank_of))
        if other != name:
            queries.append(Query("past-fixes-dev", f"other:{task['instance_id']}", f"pastfixes-{other}",
                                 task["problem_statement"], False, lambda hits: None))
    return queries


def _experiences(hits: list[Hit]) -> list[str]:
    """One text an experience (its items joined, in the answer's order), so a rank counts
    experiences as the replay's does."""
    texts: dict[str, list[str]] = {}
    for h in hits:
        texts.setdefault(h.session_id, []).append(hit_text(h))
    return ["\n".join(parts) for parts in texts.values()]


def search_all(memory: Memory, queries: Sequence[Query], configs: dict[str, SearchConfig]) -> dict[str, dict[str, Answer]]:
    """Each query's answer under each Search, by variant then query key."""
    answers: dict[str, dict[str, Answer]] = {name: {} for name in configs}
    for q in queries:
        for name, config in configs.items():
            hits = memory.search(SearchRequest(user_id=q.user_id, query=q.text, top_k=TOP_K), config)
            answers[name][q.key] = Answer(q.rank_of(hits) if q.answerable else None,
                                          sum(count_tokens(h.content) for h in hits), not hits)
    return answers


def in_first(answer: Answer) -> bool:
    return answer.rank is not None and answer.rank <= FIRST


def figures(queries: Sequence[Query], answers: dict[str, dict[str, Answer]]) -> dict[str, Any]:
    """Per variant: retrieval and size; per gate: cost and saving, marginal and alone."""
    answerable = [q.key for q in queries if q.answerable]
    absent = [q.key for q in queries if not q.answerable]

    def tokens(variant: str, keys: list[str]) -> float:
        return round(statistics.mean(answers[variant][k].tokens for k in keys), 1) if keys else 0.0

    by_variant = {}
    for name, got in answers.items():
        ranks = [got[k].rank for k in answerable]
        by_variant[name] = {
            **metrics(ranks),
            "answerable_empty": sum(got[k].empty for k in answerable),
            "answerable_gold_left_out": sum(got[k].rank is None for k in answerable),
            "tokens_answerable_mean": tokens(name, answerable), "tokens_absent_mean": tokens(name, absent),
            "absent_empty": sum(got[k].empty for k in absent),
        }
    gates = {}
    for gate in GATES:
        gate_figures = {}
        for how, without, with_gate in (("marginal", f"no-{gate}", "gated"), ("alone", "ungated", f"only-{gate}")):
            removed = [k for k in answerable if in_first(answers[without][k]) and not in_first(answers[with_gate][k])]
            gate_figures[how] = {
                "golds_removed_from_first_5": len(removed), "cost": _share(k in removed for k in answerable),
                "within_cap": len(removed) <= COST_CAP * len(answerable), "removed": removed,
                "tokens_saved_answerable": round(tokens(without, answerable) - tokens(with_gate, answerable), 1),
                "tokens_saved_absent": round(tokens(without, absent) - tokens(with_gate, absent), 1),
            }
        gates[gate] = gate_figures
    return {"answerable": len(answerable), "nothing_related": len(absent), "variants": by_variant, "gates": gates}


def _share(flags: Iterator[bool] | Sequence[bool]) -> float | None:
    values = list(flags)
    return round(sum(values) / len(values), 3) if values else None


def answers_in(data_dir: Path, queries: Sequence[Query]) -> tuple[dict[str, dict[str, Answer]], dict[str, float]]:
    """Each query's answer under each Search over the store in `data_dir`, and the shipped
    thresholds the gates read."""
    settings = Settings.from_env({}, overrides={"storage.data_dir": str(data_dir), "maintenance.interval_s": 0})
    with Memory(settings) as memory:
        memory.warm_up()
        configs = {name: memory.search_config.replace(changes) for name, changes in variants().items()}
        calibration = memory.search_config.calibration
        return search_all(memory, queries, configs), {"quiet_below": calibration.quiet_below,
                                                      "relevance_floor": calibration.relevance_floor}


def run_set(stores: dict[Path, list[Query]]) -> dict[str, Any]:
    """One set's figures, its queries searched in the stores that hold their memories."""
    t0 = time.perf_counter()
    answers: dict[str, dict[str, Answer]] = {name: {} for name in variants()}
    thresholds: dict[str, float] = {}
    for data_dir, queries in stores.items():
        got, thresholds = answers_in(data_dir, queries)
        for name, by_key in got.items():
            answers[name] |= by_key
    result = figures([q for qs in stores.values() for q in qs], answers)
    return result | {"thresholds": thresholds, "search_s": round(time.perf_counter() - t0, 1)}


def markdown(result: dict[str, Any]) -> str:
    lines = [f"# Gates: cost and saving per validation set\n\n`{result['provenance']['command']}` at "
             f"`{str(result['provenance']['git_head'])[:7]}`, {result['provenance']['date_utc']}. Cost: answerable "
             f"queries whose gold is in the first {FIRST} without the gate and not with it (cap {COST_CAP:.0%}). "
             "Saving: mean tokens taken off an answer.\n"]
    for set_name, s in result["sets"].items():
        lines += [f"## {set_name} ({s['answerable']} answerable, {s['nothing_related']} with nothing related)\n",
                  "| Search | hit@1 | hit@5 | MRR | answerable empty | gold left out | tokens answerable | tokens nothing related | nothing related empty |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for name, v in s["variants"].items():
            lines.append(f"| {name} | {v['hit@1']} | {v['hit@5']} | {v['mrr']} | {v['answerable_empty']} | "
                         f"{v['answerable_gold_left_out']} | {v['tokens_answerable_mean']:,.0f} | "
                         f"{v['tokens_absent_mean']:,.0f} | {v['absent_empty']} |")
        lines += ["", "| gate | measured | golds removed from the first 5 | cost | within 1% | tokens saved, answerable | tokens saved, nothing related |",
                  "|---|---|---:|---:|---|---:|---:|"]
        for gate, hows in s["gates"].items():
            for how, g in hows.items():
                lines.append(f"| {gate} | {how} | {g['golds_removed_from_first_5']} | {g['cost']} | "
                             f"{'yes' if g['within_cap'] else 'no'} | {g['tokens_saved_answerable']:,.0f} | "
                             f"{g['tokens_saved_absent']:,.0f} |")
        lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--replay", type=Path, help="a store kept by `python -m eval.replay --keep DIR`")
    ap.add_argument("--pastfixes", type=Path, help="the stores kept by `python -m eval.quality.past_fixes --store DIR`")
    ap.add_argument("--tasks", type=Path, default=TASKS)
    ap.add_argument("--out", type=Path, default=RESULTS / "gates.json")
    args = ap.parse_args(argv)
    if not args.replay and not args.pastfixes:
        ap.error("give --replay, --pastfixes or both")
    prov = provenance("eval.quality.gates", argv)
    sets: dict[str, Any] = {}
    if args.replay:
        sets["swe-contextbench-dev"] = run_set({args.replay: replay_queries(args.replay)})
    if args.pastfixes:
        by_store: dict[Path, list[Query]] = {}
        for q in pastfix_queries(args.tasks):
            by_store.setdefault(args.pastfixes / q.user_id.removeprefix("pastfixes-"), []).append(q)
        sets["past-fixes-dev"] = run_set(by_store)
    result = {"figure_kind": "validation: thresholds from the shipped model card, chosen on training folds; nothing "
                             "chosen here", "top_k": TOP_K, "first": FIRST, "cost_cap": COST_CAP, "sets": sets}
    write_result(args.out, result, prov, markdown=markdown)
    print(markdown(json.loads(args.out.read_text())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
