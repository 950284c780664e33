"""Replay MemoryArena tasks through codemem's MemoryArena endpoints and score the prompts.

    python -m eval.quality.memoryarena --data tests/fixtures/memoryarena          # the synthetic sample
    python -m eval.quality.memoryarena --data formal_reasoning_math.jsonl --data progressive_search.jsonl
    python -m eval.quality.memoryarena --data rows.jsonl --domain bundled_shopping --limit 20
    python -m eval.quality.memoryarena --data D --env CODEMEM_MEMORYARENA_TOKEN_BUDGET=300   # a tight budget
    python -m eval.quality.memoryarena --data D --url http://127.0.0.1:8000 [--api-key K]   # a running server

MemoryArena (arXiv 2602.16313; data: Hugging Face `ZexueHe/memoryarena`) gives each task as
a row of subtasks that build on each other: `questions[]` and `answers[]`, plus
`backgrounds[]` for `formal_reasoning_math` / `_phys`. Each row is replayed the way the
paper's runners drive a memory server, with the gold answer in place of the agent's:
a fresh user (`/memory/initialize`); then for each subtask i, `/memory/wrap_user_prompt`
with its question (formal reasoning: the runner's `### BACKGROUND` / `### PROBLEM` text),
then `/memory/add` with the runner's memory entry `## Task: {question}\\n## solution:
{answer}\\n`. The rows carry no finer dependency list, so subtask i is scored against the
answers of subtasks 0..i-1: an answer counts as present when its text (whitespace and the
prompt's `\\n` line-break escapes folded) appears inside one `<memory>` line. Answers that
are not strings (shopping's `{"target_asin": ...}`) are sent and matched as compact JSON.

Reported per domain (a file named after a MemoryArena subset is that domain; else
`--domain`; else the schema): dependency recall, the share of subtasks with every earlier
answer present, whether each prompt ends with `User: {question}` verbatim, prompt and
memory-context tokens (characters / 4) p50/p95, latency p50/p95 of each endpoint. The server
(started here on a temporary data directory unless `--url`) keeps its default settings
unless `--env NAME=VALUE`. Writes `eval/results/memoryarena.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

import httpx

from eval._paths import RESULTS
from eval._provenance import provenance, write_result
from eval._server import running_server
from eval._stats import percentile, summary_ms

SUBSETS = ("formal_reasoning_math", "formal_reasoning_phys", "bundled_shopping", "progressive_search",
           "group_travel_planner")
ENDPOINTS = ("initialize", "add", "wrap_user_prompt")
CHARS_PER_TOKEN = 4
SYSTEM_NAME = "codemem"
_FOLD = re.compile(r"(?:\s|\\n)+")


class Poster(Protocol):
    """What the replay needs of an HTTP client: httpx.Client and Litestar's TestClient fit."""

    def post(self, url: str, *, json: object) -> httpx.Response: ...


@dataclass(frozen=True)
class Task:
    """One MemoryArena row: its subtasks in order."""

    domain: str
    row_id: str
    questions: list[str]
    answers: list[str]  # as text: strings as they are, anything else as compact JSON
    backgrounds: list[str] | None  # formal reasoning rows only

    def prompt_question(self, i: int) -> str:
        """What the runner wraps: formal reasoning puts the background before the problem."""
        if self.backgrounds is None:
            return self.questions[i]
        background = self.backgrounds[i] if i < len(self.backgrounds) else ""
        return f"### BACKGROUND:\n{background or 'No information provided.'}\n### PROBLEM:\n{self.questions[i]}"

    def memory_entry(self, i: int) -> str:
        return f"## Task: {self.questions[i]}\n## solution: {self.answers[i]}\n"


# -- data -------------------------------------------------------------------------------------

def as_text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def read_rows(path: Path) -> list[dict[str, object]]:
    """JSON Lines (what `datasets`' `to_json` writes), or one JSON array."""
    text = path.read_text(encoding="utf-8")
    if text.lstrip().startswith("["):
        return list(json.loads(text))
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def to_task(row: dict[str, object], domain: str, index: int) -> Task:
    questions, answers = row.get("questions"), row.get("answers")
    if not isinstance(questions, list) or not isinstance(answers, list) or len(questions) != len(answers):
        raise ValueError(f"{domain} row {index}: needs questions[] and answers[] of the same length")
    backgrounds = row.get("backgrounds")
    return Task(
        domain=domain,
        row_id=str(row.get("id", index)),
        questions=[as_text(q) for q in questions],
        answers=[as_text(a) for a in answers],
        backgrounds=[as_text(b) for b in backgrounds] if isinstance(backgrounds, list) else None,
    )


def domain_of(path: Path, rows: list[dict[str, object]], given: str | None) -> str:
    if given:
        return given
    if path.stem in SUBSETS:
        return path.stem
    return "formal_reasoning" if rows and "backgrounds" in rows[0] else "questions_answers"


def load_tasks(paths: Iterable[Path], domain: str | None = None, limit: int | None = None) -> list[Task]:
    """Every row of every file (a directory: its *.jsonl files), at most `limit` per file."""
    files: list[Path] = []
    for p in paths:
        files.extend(sorted(p.glob("*.jsonl")) if p.is_dir() else [p])
    tasks: list[Task] = []
    for f in files:
        rows = read_rows(f)[:limit]
        name = domain_of(f, rows, domain)
        tasks.extend(to_task(r, name, i) for i, r in enumerate(rows))
    return tasks


# -- scoring ----------------------------------------------------------------------------------

def fold(text: str) -> str:
    """Whitespace runs and the prompt's `\\n` escapes as one space (applied to both sides)."""
    return _FOLD.sub(" ", text.replace("<\\/memory", "</memory")).strip()


def memories(prompt: str) -> list[str]:
    """The `<memory>` lines' contents inside the prompt's memory context."""
    lines = prompt.split("\n")
    try:
        start, end = lines.index("<memory_context>"), lines.index("</memory_context>")
    except ValueError:
        return []
    return [ln[len("<memory>"):-len("</memory>")] for ln in lines[start + 1:end]
            if ln.startswith("<memory>") and ln.endswith("</memory>")]


def context_chars(prompt: str) -> int:
    """Characters of the memory context (tags included, the question not)."""
    end = prompt.find("</memory_context>")
    return end + len("</memory_context>") if end >= 0 else 0


@dataclass
class Subtask:
    domain: str
    row_id: str
    index: int
    dependencies: int
    present: list[int]  # indices of the earlier subtasks whose answer is in the prompt
    question_last: bool
    prompt_tokens: float
    memory_tokens: float

    @property
    def missing(self) -> list[int]:
        return [j for j in range(self.dependencies) if j not in self.present]


def score(task: Task, i: int, prompt: str) -> Subtask:
    lines = [fold(m) for m in memories(prompt)]
    present = [j for j in range(i) if any(fold(task.answers[j]) in ln for ln in lines)]
    return Subtask(
        domain=task.domain, row_id=task.row_id, index=i, dependencies=i, present=present,
        question_last=prompt.endswith("\nUser: " + task.prompt_question(i)),
        prompt_tokens=len(prompt) / CHARS_PER_TOKEN, memory_tokens=context_chars(prompt) / CHARS_PER_TOKEN,
    )


# -- replay -----------------------------------------------------------------------------------

@dataclass
class Replay:
    subtasks: list[Subtask] = field(default_factory=list)
    latency_s: dict[str, dict[str, list[float]]] = field(default_factory=dict)  # domain -> endpoint -> s
    errors: list[str] = field(default_factory=list)


class EndpointError(RuntimeError):
    pass


def call(client: Poster, replay: Replay, domain: str, endpoint: str, body: dict[str, str]) -> dict[str, object]:
    t0 = time.perf_counter()
    r = client.post(f"/memory/{endpoint}", json=body)
    replay.latency_s.setdefault(domain, {e: [] for e in ENDPOINTS})[endpoint].append(time.perf_counter() - t0)
    if r.status_code != 200:
        raise EndpointError(f"/memory/{endpoint} answered {r.status_code}: {r.text[:300]}")
    return dict(r.json())


def replay_task(client: Poster, task: Task, user_id: str, replay: Replay) -> None:
    """One row as a MemoryArena runner drives it, scoring each wrapped prompt."""
    base = {"user_id": user_id, "memory_system_name": SYSTEM_NAME}
    call(client, replay, task.domain, "initialize", base)
    for i in range(len(task.questions)):
        answer = call(client, replay, task.domain, "wrap_user_prompt", {**base, "question": task.prompt_question(i)})
        replay.subtasks.append(score(task, i, str(answer["prompt"])))
        call(client, replay, task.domain, "add", {**base, "chunk": task.memory_entry(i)})


def replay_all(client: Poster, tasks: list[Task], run: str | None = None) -> Replay:
    """Every task under its own user_id; a task whose endpoint failed is recorded and skipped."""
    run = run or uuid.uuid4().hex[:8]
    out = Replay()
    for t in tasks:
        try:
            replay_task(client, t, f"memoryarena-eval:{run}:{t.domain}:{t.row_id}", out)
        except (EndpointError, httpx.HTTPError) as exc:
            out.errors.append(f"{t.domain} row {t.row_id}: {exc}")
    return out


# -- report -----------------------------------------------------------------------------------

def summarise(replay: Replay) -> dict[str, dict[str, object]]:
    domains: dict[str, list[Subtask]] = {}
    for s in replay.subtasks:
        domains.setdefault(s.domain, []).append(s)
    out: dict[str, dict[str, object]] = {}
    for name, subs in domains.items():
        with_deps = [s for s in subs if s.dependencies]
        deps = sum(s.dependencies for s in subs)
        found = sum(len(s.present) for s in subs)
        lat = replay.latency_s.get(name, {})
        out[name] = {
            "rows": len({s.row_id for s in subs}),
            "subtasks": len(subs),
            "dependencies": deps,
            "dependencies_present": found,
            "dependency_recall": found / deps if deps else None,
            "all_dependencies_present": (sum(not s.missing for s in with_deps) / len(with_deps)) if with_deps else None,
            "question_last_verbatim": sum(s.question_last for s in subs) / len(subs),
            "prompt_tokens": _p50_p95([s.prompt_tokens for s in subs]),
            "memory_context_tokens": _p50_p95([s.memory_tokens for s in subs]),
            "latency_ms": {e: summary_ms(lat.get(e, [])) for e in ENDPOINTS},
            "misses": [{"row": s.row_id, "subtask": s.index, "missing": s.missing} for s in with_deps if s.missing][:50],
        }
    return out


def _p50_p95(values: list[float]) -> dict[str, float | None]:
    return {"p50": percentile(values, 50), "p95": percentile(values, 95)}


def table(summary: dict[str, dict[str, object]]) -> str:
    head = ("| domain | rows | subtasks | dependency recall | all deps present | question last | "
            "prompt tokens p50 / p95 | init p50 / p95 ms | add p50 / p95 ms | wrap p50 / p95 ms |")
    lines = [head, "|" + "---|" * 10]
    for name, s in summary.items():
        lat: dict[str, dict[str, float | None]] = s["latency_ms"]  # type: ignore[assignment]
        tok: dict[str, float | None] = s["prompt_tokens"]  # type: ignore[assignment]
        lines.append(
            f"| {name} | {s['rows']} | {s['subtasks']} | {_f(s['dependency_recall'])} | "
            f"{_f(s['all_dependencies_present'])} | {_f(s['question_last_verbatim'])} | "
            f"{_n(tok['p50'])} / {_n(tok['p95'])} | "
            + " | ".join(f"{_n(lat[e]['p50'])} / {_n(lat[e]['p95'])}" for e in ENDPOINTS) + " |"
        )
    return "\n".join(lines)


def _f(v: object) -> str:
    return "-" if v is None else f"{float(v):.2f}"  # type: ignore[arg-type]


def _n(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", action="append", required=True, type=Path,
                   help="a MemoryArena JSONL file, or a directory of them (repeatable)")
    p.add_argument("--domain", help="the domain of every row (default: the file name when it is a subset's)")
    p.add_argument("--limit", type=int, help="rows per file")
    p.add_argument("--url", help="a running codemem instead of starting one")
    p.add_argument("--api-key", default=os.environ.get("CODEMEM_API_KEY"), help="for --url")
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="server setting (started server)")
    p.add_argument("--out", type=Path, default=RESULTS / "memoryarena.json")
    args = p.parse_args(argv)
    prov = provenance("eval.quality.memoryarena", argv)
    tasks = load_tasks(args.data, args.domain, args.limit)
    env = dict(item.split("=", 1) for item in args.env)
    print(f"{len(tasks)} tasks, {sum(len(t.questions) for t in tasks)} subtasks", flush=True)
    if args.url:
        headers = {"X-Api-Key": args.api_key} if args.api_key else {}
        with httpx.Client(base_url=args.url, headers=headers, timeout=600, trust_env=False) as client:
            replay = replay_all(client, tasks)
    else:
        with running_server(env=env) as srv, httpx.Client(base_url=srv.url, timeout=600, trust_env=False) as client:
            replay = replay_all(client, tasks)
    summary = summarise(replay)
    result = {
        "date_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "cpu_count": os.cpu_count(),
        "data": [str(d) for d in args.data],
        "server": args.url or "started by the benchmark, temporary data directory",
        "env": env,
        "errors": replay.errors,
        "domains": summary,
    }
    write_result(args.out, result, prov)
    print(table(summary))
    for e in replay.errors:
        print("error:", e)
    print(f"wrote {args.out}")
    return 1 if replay.errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
