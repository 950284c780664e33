"""Project memory over time: dated project-chat sessions whose choices change, scored by the
sessions that hold each answer, with BM25 over whole sessions side by side in the same run.

    python -m eval.quality.timeline                  # dev projects (eval/data/timeline, split "dev")
    python -m eval.quality.timeline --split heldout  # the held-out projects: scored once, choices fixed
    python -m eval.quality.timeline --split fresh --data eval/data/timeline-fresh
        # projects of five styles (coding-assistant chat, agent sessions, notes, commits, team
        # chat) written after the time features were fixed, by someone who had read neither
        # the code nor the training projects: scored once
    python -m eval.quality.timeline --split fresh3 --data eval/data/timeline-fresh3
        # the third set (fresh2 and fresh are spent), by the same kind of writer: scored once
    python -m eval.quality.timeline --calibrate      # fit the quiet model (dev projects + LoCoMo dev)

Data: `eval/data/timeline/*.json` (`python -m eval.quality.timeline_fixtures` writes them). Each
project is Added in-process into its own user_id of a fresh `Memory` (one Add per session,
each message with its session's timestamp), then each question is Searched (top_k 100) by
`Memory.search`, the core of the HTTP Search.

Scores, per system, over the questions that have an answer:
- hit@1: the first item's session holds the answer;
- newest first (kind `update`): among the items from sessions that stated a value of the
  subject, the first is from the newest of them; and, for codemem, whether an older value's
  item came back marked `superseded_by`;
- date (kind `when`): the first item from the session that holds the change shows the day
  the change was made (`[date]` or a resolved relative date);
- session recall within 2k tokens and within the first 10 items (kind `multi`): share of
  the answer's sessions seen;
- absent (kind `absent`): tokens (characters / 4) of absent answers over those of the others,
  the share of absent answers that are quiet (empty, or marked quiet), and the share of the
  others that are (wrongly quiet).

BM25 (bm25s, the replay's tokenizer) over whole sessions, each session's text as sent,
ranked best first, its answer the sessions with a positive score; scored by the same code.

`--calibrate` fits P(subject present) = sigmoid(w . [1, best cosine, coverage]) by class-
weighted logistic regression on the dev projects' questions and the LoCoMo dev questions
(all of which have an answer), and picks the threshold by leave-one-source-out: for each
project or conversation, fitted on the others and scored on it; the threshold maximising
Youden's J on the pooled out-of-fold probabilities. Writes `OUT.json`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from codemem.config import Settings
from codemem.contract.types import AddRequest, Hit, Message, SearchRequest
from codemem.memory import Memory
from codemem.ranking.answer import MAX_RESPONSE_BYTES
from codemem.ranking.search_config import NEWEST_FIRST
from codemem.timeline import turns
from codemem.timeline.turns import DEFAULT_TURNS, TurnConfig
from eval._paths import RESULTS
from eval._provenance import provenance, write_result
from eval.replay.baselines import Bm25Index, Doc, Tokenizer
from eval.replay.metrics import CHARS_PER_TOKEN, content_text

DATA = Path(__file__).resolve().parents[1] / "data" / "timeline"
TRAINING_PROJECTS = Path(__file__).resolve().parents[2] / "train" / "ranker" / "projects"
TOP_K = 100
WINDOW = 2_000  # tokens


def load(split: str, data: Path = DATA) -> list[dict[str, Any]]:
    return [p for f in sorted(data.glob("*.json")) if (p := json.loads(f.read_text()))["split"] == split]


def ingest(memory: Memory, project: dict[str, Any]) -> str:
    user = f"timeline:{project['project']}"
    for s in project["sessions"]:
        memory.add(AddRequest(request_id=f"{user}:{s['id']}", user_id=user, session_id=f"{user}:{s['id']}",
                              messages=[Message(role=m["role"], content=m["content"], timestamp=m["timestamp"])
                                        for m in s["messages"]]))
    return user


@dataclasses.dataclass
class Answer:
    """One system's answer to one question, as what the scorer reads."""

    sessions: list[str]  # per item, the fixture session id
    texts: list[str]
    superseded: list[bool]  # per item, marked superseded (codemem only)
    features: dict[str, float] | None = None  # codemem's subject_present figures, when given
    quiet: bool = False  # codemem's answer was quiet (the subject seemed absent)
    turns: bool = False  # codemem answered turn by turn (a conversation)

    @property
    def tokens(self) -> float:
        return sum(len(t) for t in self.texts) / CHARS_PER_TOKEN


def codemem_answer(memory: Memory, user: str, question: str) -> Answer:
    return answer_of(memory.search(SearchRequest(user_id=user, query=question, top_k=TOP_K)))


def answer_of(hits: Sequence[Hit]) -> Answer:
    sessions = [h.session_id.rsplit(":", 1)[-1] for h in hits]
    features = hits[0].metadata.get("subject_present") if hits else None
    return Answer(sessions, [content_text(h.content) for h in hits], [bool(h.metadata.get("superseded_by")) for h in hits],
                  features if isinstance(features, dict) else None, bool(hits) and bool(hits[0].metadata.get("quiet")),
                  any(h.metadata.get("kind") == "turn" for h in hits))


def bm25_answers(project: dict[str, Any], tok: Tokenizer) -> dict[str, Answer]:
    docs = {s["id"]: "\n".join(m["content"] for m in s["messages"]) for s in project["sessions"]}
    index = Bm25Index([Doc(k, v) for k, v in docs.items()], [tok(v) for v in docs.values()])
    out = {}
    for q in project["questions"]:
        found = index.search(tok(q["question"]), TOP_K)  # positive scores only
        out[q["question"]] = Answer([d.session_id for d in found], [docs[d.session_id] for d in found], [False] * len(found))
    return out


def score(project: dict[str, Any], answers: dict[str, Answer]) -> list[dict[str, Any]]:
    """Per question: what the summary counts."""
    dates = {s["id"]: s["date"][:10] for s in project["sessions"]}
    out = []
    for q in project["questions"]:
        a = answers[q["question"]]
        row: dict[str, Any] = {"project": project["project"], "kind": q["kind"], "tokens": a.tokens, "empty": not a.texts,
                              "quiet": a.quiet or not a.texts}
        gold = set(q["sessions"])
        if gold:
            row["hit1"] = bool(a.sessions) and a.sessions[0] in gold
            seen, used = set(), 0.0
            for sid, text in zip(a.sessions, a.texts, strict=True):
                if used > WINDOW:
                    break
                seen.add(sid)
                used += len(text) / CHARS_PER_TOKEN
            row["recall2k"] = len(gold & seen) / len(gold)
            row["recall10"] = len(gold & set(a.sessions[:10])) / len(gold)
        if q["kind"] == "update":
            related = set(q["related"])
            first = next((s for s in a.sessions if s in related), None)
            row["newest_first"] = first == q["sessions"][0]
            # Items of older sessions that state a value of the subject: each must be marked.
            values = [v.lower() for v in q["values"]]
            older = [i for i, s in enumerate(a.sessions)
                     if s in related and s != q["sessions"][0] and any(v in a.texts[i].lower() for v in values)]
            row["older_returned"] = bool(older)
            row["older_marked"] = bool(older) and all(a.superseded[i] for i in older)
            # The newest session's own items marked superseded: a false mark.
            row["current_marked"] = any(a.superseded[i] for i, s in enumerate(a.sessions) if s == q["sessions"][0])
        if q["kind"] == "when":
            text = next((t for s, t in zip(a.sessions, a.texts, strict=True) if s in gold), "")
            row["date_shown"] = q["date"] in text or (q["date"] == dates[q["sessions"][0]] and bool(text))
        if a.features is not None:
            row["features"] = a.features
        out.append(row)
    return out


def summarize(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    def mean(xs: Sequence[float]) -> float | None:
        return round(sum(xs) / len(xs), 4) if xs else None

    answered = [r for r in rows if "hit1" in r]
    absent = [r for r in rows if r["kind"] == "absent"]
    updates = [r for r in rows if r["kind"] == "update"]
    others_tokens = mean([r["tokens"] for r in answered]) or 0.0
    out = {
        "questions": len(rows), "answered": len(answered), "absent": len(absent),
        "hit1": mean([r["hit1"] for r in answered]),
        "recall2k": mean([r["recall2k"] for r in answered]),
        "newest_first": f"{sum(r['newest_first'] for r in updates)}/{len(updates)}",
        "newest_first_share": mean([r["newest_first"] for r in updates]),
        "older_marked": f"{sum(r['older_marked'] for r in updates)}/{sum(r['older_returned'] for r in updates)}",
        "date_shown": mean([r["date_shown"] for r in rows if "date_shown" in r]),
        "multi_recall2k": mean([r["recall2k"] for r in answered if r["kind"] == "multi"]),
        "multi_recall10": mean([r["recall10"] for r in answered if r["kind"] == "multi"]),
        "absent_tokens_ratio": round((mean([r["tokens"] for r in absent]) or 0.0) / others_tokens, 4) if others_tokens else None,
        "absent_quiet": mean([r["quiet"] for r in absent]),
        "answered_quiet": mean([r["quiet"] for r in answered]),
        "tokens_p50_answered": sorted(r["tokens"] for r in answered)[len(answered) // 2] if answered else None,
    }
    out["by_kind_hit1"] = {k: mean([r["hit1"] for r in answered if r["kind"] == k])
                           for k in sorted({r["kind"] for r in answered})}
    return out


def run(projects: list[dict[str, Any]], config: TurnConfig) -> dict[str, list[dict[str, Any]]]:
    return run_configs(projects, [{"turns": config}])[0]


def run_configs(projects: list[dict[str, Any]], configs: Sequence[Mapping[str, Any]]) -> list[dict[str, list[dict[str, Any]]]]:
    """Each config's rows (codemem's, and BM25's beside them), the projects Added once; a
    config is what it changes of the Search's (`SearchConfig.replace`)."""
    tok = Tokenizer()
    out: list[dict[str, list[dict[str, Any]]]] = [{"codemem": [], "bm25-sessions": []} for _ in configs]
    with tempfile.TemporaryDirectory() as tmp, Memory(Settings().replace({"storage.data_dir": tmp, "maintenance.interval_s": 0})) as memory:
        users = [ingest(memory, p) for p in projects]
        base = memory.search_config
        for rows, config in zip(out, configs, strict=True):
            memory.search_config = base.replace(dict(config))
            for p, user in zip(projects, users, strict=True):
                rows["codemem"] += score(p, {q["question"]: codemem_answer(memory, user, q["question"]) for q in p["questions"]})
                rows["bm25-sessions"] += score(p, bm25_answers(p, tok))
    return out


def run_turn_configs(projects: list[dict[str, Any]], configs: Sequence[TurnConfig]) -> list[list[dict[str, Any]]]:
    """codemem's rows under each turn configuration (`SearchConfig.turns`), each question
    searched once: a question answered by turns is read once (`Memory.dialogue_reading`) and
    answered under each configuration from that reading (`turns.decide`, as a Search would);
    one answered by experiences is answered the same under every configuration. The
    configurations differ in what `turns.decide` reads only (not in `turns.READ_FIELDS`)."""
    read = {(f, getattr(configs[0], f)) for f in turns.READ_FIELDS}
    if any({(f, getattr(c, f)) for f in turns.READ_FIELDS} != read for c in configs):
        raise ValueError(f"turn configurations that differ in what is read ({', '.join(turns.READ_FIELDS)}) "
                         "need a Search each: run_configs")
    out: list[list[dict[str, Any]]] = [[] for _ in configs]
    with tempfile.TemporaryDirectory() as tmp, Memory(Settings().replace({"storage.data_dir": tmp, "maintenance.interval_s": 0})) as memory:
        users = [ingest(memory, p) for p in projects]
        search = memory.search_config.replace({"turns": configs[0]})
        budget, quiet = search.answer.fitted(None).budget_tokens, search.calibration.quiet_below > 0
        for p, user in zip(projects, users, strict=True):
            read_once: dict[str, turns.Reading | Answer] = {}
            for q in p["questions"]:
                req = SearchRequest(user_id=user, query=q["question"], top_k=TOP_K)
                reading = memory.dialogue_reading(req, search)
                read_once[q["question"]] = reading if reading is not None else answer_of(memory.search(req, search))
            for rows, config in zip(out, configs, strict=True):
                rows += score(p, {question: answer_of(turns.decide(question, r, TOP_K, budget, MAX_RESPONSE_BYTES, config, quiet))
                                  if isinstance(r, turns.Reading) else r for question, r in read_once.items()})
    return out


SUPERSEDE_GRID = (0.4, 0.5, 0.6)
# `TurnConfig.superseded_factor`, 1 (no discount) included: issue 49, chosen with the cosine.
FACTOR_GRID = (1.0, 0.5, 0.35, 0.2)


def choose_supersession(projects: list[dict[str, Any]]) -> dict[str, Any]:
    """`TurnConfig.supersede_cosine`, `superseded_factor` and `replaced_must_decide` on the training projects: the grid
    point that maximises newest first + older values marked - current values marked (shares of
    the update questions), rule written before the grid was run (ties: the first of the grid,
    no discount before a discount)."""
    figures = {}
    grid: list[tuple[float, float, bool]] = [(c, f, d) for d in (True, False) for c in SUPERSEDE_GRID for f in FACTOR_GRID]
    configs = [dataclasses.replace(DEFAULT_TURNS, supersede_cosine=c, superseded_factor=f, replaced_must_decide=d)
               for c, f, d in grid]
    for point, rows in zip(grid, run_turn_configs(projects, configs), strict=True):
        updates = [r for r in rows if r["kind"] == "update"]
        returned = [r for r in updates if r["older_returned"]]
        newest = sum(r["newest_first"] for r in updates) / max(len(updates), 1)
        marked = sum(r["older_marked"] for r in returned) / max(len(returned), 1)
        current = sum(r["current_marked"] for r in updates) / max(len(updates), 1)
        figures[point] = {"newest_first": round(newest, 4), "older_marked": round(marked, 4),
                          "current_marked": round(current, 4), "objective": round(newest + marked - current, 4),
                          "updates": len(updates)}
    best = max(figures, key=lambda c: figures[c]["objective"])
    return {"supersede_cosine": best[0], "superseded_factor": best[1], "replaced_must_decide": best[2],
            "grid": {f"cosine {c}, factor {f}, replaced must decide {d}": v for (c, f, d), v in figures.items()},
            "projects": [p["project"] for p in projects]}


def choose_newest_first(projects: list[dict[str, Any]]) -> dict[str, Any]:
    """`Calibration.newest_first_when_now` on the training projects. The rule, written before
    it was run: of "related" and "named", the one that raises the share of update questions
    whose newest value comes first the most while lowering no hit@1 over the answerable
    questions of every kind, against "off"; "off" where neither does."""
    choices = NEWEST_FIRST
    runs = run_configs(projects, [{"calibration.newest_first_when_now": c} for c in choices])
    figures = {}
    for choice, rows in zip(choices, runs, strict=True):
        mine = rows["codemem"]
        updates = [r for r in mine if r["kind"] == "update"]
        answered = [r for r in mine if r["kind"] != "absent"]
        figures[choice] = {"newest_first": round(sum(r["newest_first"] for r in updates) / max(len(updates), 1), 4),
                           "hit1": round(sum(r["hit1"] for r in answered) / max(len(answered), 1), 4),
                           "updates": len(updates), "answered": len(answered)}
    off = figures["off"]
    better = [c for c in choices if c != "off" and figures[c]["newest_first"] > off["newest_first"] and figures[c]["hit1"] >= off["hit1"]]
    chosen = max(better, key=lambda c: figures[c]["newest_first"], default="off")
    return {"newest_first_when_now": chosen, "figures": figures, "projects": [p["project"] for p in projects]}


# -- calibration ------------------------------------------------------------------------------

def _locomo_features(config: TurnConfig) -> list[tuple[str, float, float]]:
    """(conversation, cosine, coverage) of each LoCoMo dev question, quiet off."""
    from eval.quality.locomo import LOCOMO, chunks, load_conversation

    out = []
    with tempfile.TemporaryDirectory() as tmp, Memory(Settings().replace({"storage.data_dir": tmp, "maintenance.interval_s": 0})) as memory:
        memory.search_config = memory.search_config.replace({"turns": config})
        for f in sorted(LOCOMO.glob("*.json")):
            conv = load_conversation(f)
            for n, turns in conv.sessions().items():
                for c, chunk in enumerate(chunks(turns)):
                    memory.add(AddRequest(request_id=f"{conv.name}:{n}:{c}", user_id=conv.name, session_id=f"{conv.name}:{n}",
                                          messages=[Message(role="user" if t.role == "user" else "assistant", content=t.content,
                                                                    timestamp=t.timestamp) for t in chunk]))
            for q in conv.questions:
                hits = memory.search(SearchRequest(user_id=conv.name, query=q.question, top_k=TOP_K))
                feats = hits[0].metadata.get("subject_present") if hits else None
                if isinstance(feats, dict):
                    out.append((conv.name, float(feats["cosine"]), float(feats["coverage"])))
    return out


def _fit(x: np.ndarray, y: np.ndarray, l2: float = 1e-3) -> np.ndarray:
    """Class-weighted logistic regression by Newton's method; x has a leading column of ones."""
    w = np.zeros(x.shape[1])
    weight = np.where(y == 1, 0.5 / max(y.mean(), 1e-9), 0.5 / max(1 - y.mean(), 1e-9))
    for _ in range(50):
        p = 1 / (1 + np.exp(-x @ w))
        grad = x.T @ (weight * (p - y)) + l2 * w
        hess = (x * (weight * p * (1 - p))[:, None]).T @ x + l2 * np.eye(x.shape[1])
        w -= np.linalg.solve(hess, grad)
    return w


def calibrate(projects: list[dict[str, Any]]) -> dict[str, Any]:
    off = dataclasses.replace(DEFAULT_TURNS, quiet_below=0.0)
    rows = run(projects, off)["codemem"]
    data = [(r["project"], r["features"]["cosine"], r["features"]["coverage"], 0 if r["kind"] == "absent" else 1)
            for r in rows if "features" in r]
    data += [(name, cos, cov, 1) for name, cos, cov in _locomo_features(off)]
    groups = np.array([d[0] for d in data])
    x = np.array([[1.0, d[1], d[2]] for d in data])
    y = np.array([d[3] for d in data], dtype=float)
    oof = np.zeros(len(y))
    for g in sorted(set(groups)):
        held = groups == g
        w = _fit(x[~held], y[~held])
        oof[held] = 1 / (1 + np.exp(-x[held] @ w))
    best = max(np.unique(np.round(oof, 4)), key=lambda t: ((oof[y == 1] >= t).mean() + (oof[y == 0] < t).mean()))
    w = _fit(x, y)
    return {"weights": {"bias": round(float(w[0]), 4), "cosine": round(float(w[1]), 4), "coverage": round(float(w[2]), 4)},
            "quiet_below": round(float(best), 4), "questions": len(y), "absent": int((y == 0).sum()),
            "out_of_fold": {"present_kept": round(float((oof[y == 1] >= best).mean()), 4),
                            "absent_quiet": round(float((oof[y == 0] < best).mean()), 4)},
            "groups": sorted(set(groups))}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--split", default="dev", choices=("dev", "heldout", "fresh", "fresh2", "fresh3", "train"))
    p.add_argument("--data", type=Path, default=DATA)
    p.add_argument("--calibrate", action="store_true", help="fit the quiet model on the dev split and LoCoMo dev")
    p.add_argument("--choose-supersession", action="store_true",
                   help="choose TurnConfig.supersede_cosine and superseded_factor on the training projects "
                        "(the fixtures and train/ranker/projects)")
    p.add_argument("--choose-newest-first", action="store_true",
                   help="choose Calibration.newest_first_when_now on the training projects")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="a TurnConfig field")
    p.add_argument("--out", type=Path, help="default eval/results/timeline[-heldout|-quiet].json")
    args = p.parse_args(argv)
    prov = provenance("eval.quality.timeline", argv)
    projects = load("dev" if args.calibrate else args.split, args.data)
    t0 = time.perf_counter()
    result: dict[str, Any]
    if args.choose_supersession:  # the written training projects only: no dev or held-out project is chosen on
        projects = load("train", TRAINING_PROJECTS)
        result = {"supersession": choose_supersession(projects)}
        out = args.out or RESULTS / "timeline-supersession.json"
        print(json.dumps(result["supersession"], indent=1))
    elif args.choose_newest_first:
        projects = [*load("dev", args.data), *load("heldout", args.data), *load("train", TRAINING_PROJECTS)]
        for i, project in enumerate(projects):  # two folders may each hold a project of one name
            if any(other["project"] == project["project"] for other in projects[:i]):
                project["project"] = f"{project['project']}-{i}"
        result = {"newest_first": choose_newest_first(projects)}
        out = args.out or RESULTS / "timeline-newest-first.json"
        print(json.dumps(result["newest_first"], indent=1))
    elif args.calibrate:
        result = {"calibration": calibrate(projects)}
        out = args.out or RESULTS / "timeline-quiet.json"
    else:
        fields = {f.name: f.type for f in dataclasses.fields(TurnConfig)}
        changes = {k: (int if fields[k] == "int" else float)(v) for k, v in (s.split("=", 1) for s in args.set)}
        config = dataclasses.replace(DEFAULT_TURNS, **changes)  # type: ignore[arg-type]
        rows = run(projects, config)
        summary = [{"system": system, "scope": scope, **summarize([r for r in mine if scope in ("all", r["project"])])}
                   for system, mine in rows.items() for scope in ["all", *[p["project"] for p in projects]]]
        result = {"summary": summary, "config": dataclasses.asdict(config), "questions": rows}
        out = args.out or RESULTS / ("timeline.json" if args.split == "dev" else f"timeline-{args.split}.json")
        for r in summary:
            if r["scope"] == "all":
                print(json.dumps({k: r[k] for k in ("system", "hit1", "newest_first", "older_marked", "date_shown",
                                                    "multi_recall2k", "multi_recall10", "absent_tokens_ratio", "absent_quiet", "answered_quiet")}))
    result = {"split": "training" if args.choose_supersession or args.choose_newest_first else "dev" if args.calibrate else args.split, "projects": [p["project"] for p in projects],
              "wall_s": round(time.perf_counter() - t0, 1), **result}
    out = write_result(out, result, prov, indent=1)
    if args.calibrate:
        print(json.dumps(result["calibration"]))
    print(f"wrote {out}")
    return 0



if __name__ == "__main__":
    raise SystemExit(main())
