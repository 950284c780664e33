"""Conversational memory (the Textual track's kind of data): LoCoMo conversations through
the public Add and Search, scored by where each question's evidence turns appear.

    python -m eval.quality.locomo                                 # the 3 dev conversations
    python -m eval.quality.locomo --conversations conv-30 --questions 20 --out eval/results/tmp/locomo

Data: `../shared/data/locomo-dev` (3 of the 10 LoCoMo conversations, Maharana et al.,
ACL 2024; its README says how the track sends them). Each conversation is Added the way the
Textual track would: its own user_id, one session_id per session, chunks of at most 20
messages or 2,000 words in order, role `user` for speaker_a and `assistant` for speaker_b,
content `"{speaker}: {text}"` (a shared image's caption appended as `[shares an image:
...]`, as LoCoMo's own retrieval baselines read it), timestamp the session's date. Each
question of categories 1-4 is then Searched (top_k 100); category 5 (adversarial: the
answer is not in the conversation) is left out.

Score per question: the answer's items are read in order as one text (tokens = characters
/ 4, the replay's counter, `eval.replay.metrics.count_tokens`); an evidence turn counts as
found at the token where its text (any whitespace run matching any other) first ends; recall within the first
2,000 and 8,000 tokens and within the first 10 items, averaged over questions, and the
share of questions with every evidence turn in the first 2,000 tokens. Evidence ids the
conversation does not hold (one malformed id in conv-26) are left out of every system.

Side by side, in the same run: BM25 (bm25s, the replay's tokenizer) over single turns, the
same text as sent, top 100 turns; scored by the same code. The server runs this checkout's
code on a temporary data directory. Writes `OUT.json` and `OUT.md` (default
`eval/results/tmp/locomo`).
"""

from __future__ import annotations

import argparse
import json
import re
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx

from eval._paths import RESULTS, SHARED_DATA
from eval._provenance import provenance, write_result
from eval._server import Server, post_retrying, running_server
from eval._stats import summary_ms
from eval.replay.baselines import Bm25Index, Doc, Tokenizer
from eval.replay.metrics import CHARS_PER_TOKEN, content_text

LOCOMO = SHARED_DATA / "locomo-dev"
TOP_K = 100
CHUNK_MESSAGES = 20
CHUNK_WORDS = 2_000
WINDOWS = (2_000, 8_000)  # tokens
HIT_ITEMS = 10
SCORED_CATEGORIES = frozenset({1, 2, 3, 4})
_SESSION = re.compile(r"session_(\d+)")


@dataclass(frozen=True)
class Turn:
    dia_id: str
    session: int
    speaker: str
    text: str
    content: str  # what is sent: "{speaker}: {text}" [+ image caption]
    role: str
    timestamp: int  # Unix ms


@dataclass(frozen=True)
class Question:
    conversation: str
    index: int
    question: str
    category: int
    evidence: tuple[str, ...]  # dia_ids the conversation holds


@dataclass(frozen=True)
class Conversation:
    name: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]
    unknown_evidence: tuple[str, ...]  # evidence ids the conversation does not hold

    def sessions(self) -> dict[int, list[Turn]]:
        out: dict[int, list[Turn]] = {}
        for t in self.turns:
            out.setdefault(t.session, []).append(t)
        return out


# -- data -------------------------------------------------------------------------------------

def session_ms(date_time: str) -> int:
    """LoCoMo's "1:56 pm on 8 May, 2023" as Unix ms (UTC)."""
    parsed = datetime.strptime(" ".join(date_time.split()), "%I:%M %p on %d %B, %Y")
    return int(parsed.replace(tzinfo=UTC).timestamp() * 1000)


def load_conversation(path: Path) -> Conversation:
    raw = json.loads(path.read_text(encoding="utf-8"))
    conv = raw.get("conversation", raw)
    speaker_a = str(conv["speaker_a"])
    turns: list[Turn] = []
    for n in sorted(int(m.group(1)) for k in conv if (m := _SESSION.fullmatch(k))):
        when = session_ms(str(conv[f"session_{n}_date_time"]))
        for i, t in enumerate(conv[f"session_{n}"]):
            content = f"{t['speaker']}: {t['text']}"
            if t.get("blip_caption"):
                content += f" [shares an image: {t['blip_caption']}]"
            role = "user" if t["speaker"] == speaker_a else "assistant"
            turns.append(Turn(str(t["dia_id"]), n, str(t["speaker"]), str(t["text"]), content, role, when + i * 1000))
    known = {t.dia_id for t in turns}
    questions, unknown = [], []
    for i, qa in enumerate(raw["qa"]):
        if int(qa.get("category", 0)) not in SCORED_CATEGORIES:
            continue
        ids = [e for ev in qa.get("evidence", []) for e in re.split(r"[;,\s]+", str(ev)) if e]
        unknown += [e for e in ids if e not in known]
        evidence = tuple(dict.fromkeys(e for e in ids if e in known))
        if evidence:
            questions.append(Question(path.stem, i, str(qa["question"]), int(qa["category"]), evidence))
    return Conversation(path.stem, tuple(turns), tuple(questions), tuple(unknown))


def chunks(turns: Sequence[Turn]) -> Iterator[list[Turn]]:
    """Consecutive turns, at most CHUNK_MESSAGES of them or CHUNK_WORDS words."""
    cur: list[Turn] = []
    words = 0
    for t in turns:
        n = len(t.content.split())
        if cur and (len(cur) == CHUNK_MESSAGES or words + n > CHUNK_WORDS):
            yield cur
            cur, words = [], 0
        cur.append(t)
        words += n
    if cur:
        yield cur


# -- scoring ----------------------------------------------------------------------------------

def pattern(text: str) -> re.Pattern[str] | None:
    """`text` with any whitespace run matching any other (a renderer may re-wrap lines)."""
    words = text.split()
    return re.compile(r"\s+".join(map(re.escape, words))) if words else None


@dataclass
class QuestionScore:
    system: str
    conversation: str
    question: int
    category: int
    evidence: int
    found_at: list[float | None]  # per evidence turn: tokens read until its text ends
    found_item: list[int | None]  # per evidence turn: 1-based item holding it
    items: int
    tokens: float
    latency_ms: float

    def recall_within(self, tokens: float) -> float:
        return sum(t is not None and t <= tokens for t in self.found_at) / self.evidence

    def recall_items(self, k: int) -> float:
        return sum(i is not None and i <= k for i in self.found_item) / self.evidence


def score_answer(system: str, q: Question, texts: Sequence[str], turns: dict[str, Turn],
                 latency_ms: float) -> QuestionScore:
    """Where each evidence turn's text first ends in the answer `texts` (items in order)."""
    needles = [pattern(turns[e].text) for e in q.evidence]
    found_at: list[float | None] = [None] * len(needles)
    found_item: list[int | None] = [None] * len(needles)
    offset = 0
    for rank, text in enumerate(texts, 1):
        for j, needle in enumerate(needles):
            if found_at[j] is None and needle and (m := needle.search(text)):
                found_at[j] = (offset + m.end()) / CHARS_PER_TOKEN
                found_item[j] = rank
        offset += len(text)
    return QuestionScore(system, q.conversation, q.index, q.category, len(needles), found_at, found_item,
                         len(texts), offset / CHARS_PER_TOKEN, latency_ms)


def summarize(scores: Sequence[QuestionScore]) -> dict[str, object]:
    n = len(scores)
    if not n:
        return {"questions": 0}
    out: dict[str, object] = {"questions": n}
    for w in WINDOWS:
        out[f"recall_{w // 1000}k"] = round(sum(s.recall_within(w) for s in scores) / n, 4)
    out[f"recall_{HIT_ITEMS}_items"] = round(sum(s.recall_items(HIT_ITEMS) for s in scores) / n, 4)
    out[f"hit_{HIT_ITEMS}_items"] = round(sum(s.recall_items(HIT_ITEMS) > 0 for s in scores) / n, 4)
    out["all_evidence_2k"] = round(sum(s.recall_within(WINDOWS[0]) == 1.0 for s in scores) / n, 4)
    out["evidence_anywhere"] = round(sum(s.recall_within(float("inf")) for s in scores) / n, 4)
    out["tokens_p50"] = sorted(s.tokens for s in scores)[n // 2]
    out["items_p50"] = sorted(s.items for s in scores)[n // 2]
    out["latency_ms"] = summary_ms([s.latency_ms / 1000 for s in scores], 1)
    return out


# -- systems ----------------------------------------------------------------------------------

def ingest(client: httpx.Client, srv: Server, conv: Conversation, user_id: str, run: str) -> dict[str, object]:
    latencies: list[float] = []
    errors: list[str] = []
    for n, turns in conv.sessions().items():
        for c, chunk in enumerate(chunks(turns)):
            body: dict[str, object] = {
                "request_id": f"locomo:{run}:{conv.name}:s{n}:c{c}", "user_id": user_id,
                "session_id": f"locomo:{run}:{conv.name}:session_{n}",
                "messages": [{"role": t.role, "content": t.content, "timestamp": t.timestamp} for t in chunk],
            }
            r, dt = post_retrying(client, srv, "/add", body)
            latencies.append(dt)
            if r.status_code != 200:
                errors.append(f"{body['request_id']}: HTTP {r.status_code} {r.text[:200]}")
    return {"adds": len(latencies), "errors": errors, "add_latency_ms": summary_ms(latencies, 1)}


def search_codemem(client: httpx.Client, srv: Server, conv: Conversation, user_id: str,
                   keep: list[dict[str, object]], keep_answers: int) -> list[QuestionScore]:
    turns = {t.dia_id: t for t in conv.turns}
    out: list[QuestionScore] = []
    for q in conv.questions:
        r, dt = post_retrying(client, srv, "/search", {"query": q.question, "user_id": user_id, "top_k": TOP_K})
        r.raise_for_status()
        data = r.json()["data"]
        texts = [content_text(item["content"]) for item in data]
        s = score_answer("codemem", q, texts, turns, dt * 1000)
        out.append(s)
        if len(keep) < keep_answers:
            keep.append({"conversation": conv.name, "question": q.question, "evidence": list(q.evidence),
                         "found_at": s.found_at, "items": [{"content": t[:1500], "metadata": item.get("metadata")}
                                                           for t, item in zip(texts[:5], data[:5], strict=True)]})
    return out


def search_bm25(conv: Conversation, tok: Tokenizer) -> list[QuestionScore]:
    """BM25 over single turns: each document one turn's content, as sent."""
    turns = {t.dia_id: t for t in conv.turns}
    index = Bm25Index([Doc(t.dia_id, t.content) for t in conv.turns], [tok(t.content) for t in conv.turns])
    out = []
    for q in conv.questions:
        t0 = time.perf_counter()
        items = index.search(tok(q.question), TOP_K)
        dt = (time.perf_counter() - t0) * 1000
        out.append(score_answer("bm25-turns", q, [turns[i.session_id].content for i in items], turns, dt))
    return out


# -- report -----------------------------------------------------------------------------------

def report(result: dict[str, object]) -> str:
    prov: dict[str, object] = result["provenance"]  # type: ignore[assignment]
    lines = [
        "# LoCoMo dev: evidence recall of conversational memory",
        "",
        f"`{prov['command']}` at {prov['git_head']} (dirty: {prov['git_dirty']}), {prov['date_utc']}, "
        f"load {prov['machine']['loadavg_at_start']}.",  # type: ignore[index]
        "",
        "| system | scope | questions | recall@2k | recall@8k | all evidence @2k | recall@10 items | "
        "hit@10 items | anywhere | tokens p50 | search p50 / p95 ms |",
        "|" + "---|" * 11,
    ]
    rows: list[dict[str, object]] = result["summary"]  # type: ignore[assignment]
    for r in rows:
        lat: dict[str, float] = r["latency_ms"]  # type: ignore[assignment]
        lines.append(
            f"| {r['system']} | {r['scope']} | {r['questions']} | {r['recall_2k']:.3f} | {r['recall_8k']:.3f} | "
            f"{r['all_evidence_2k']:.3f} | {r['recall_10_items']:.3f} | {r['hit_10_items']:.3f} | "
            f"{r['evidence_anywhere']:.3f} | {float(r['tokens_p50']):,.0f} | {lat['p50']} / {lat['p95']} |"  # type: ignore[arg-type]
        )
    lines += ["", "codemem's Search is timed over HTTP by the client; BM25 in-process (not comparable).", ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, default=LOCOMO, help="a folder of LoCoMo conversation JSON files")
    p.add_argument("--conversations", help="comma-separated file stems (default: every *.json)")
    p.add_argument("--questions", type=int, help="at most this many questions per conversation")
    p.add_argument("--keep-answers", type=int, default=20, help="answers kept in the JSON for reading")
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="server setting")
    p.add_argument("--out", type=Path, default=RESULTS / "tmp" / "locomo")
    args = p.parse_args(argv)
    prov = provenance("eval.quality.locomo", argv)
    names = args.conversations.split(",") if args.conversations else sorted(f.stem for f in args.data.glob("*.json"))
    convs = []
    for name in names:
        conv = load_conversation(args.data / f"{name}.json")
        if args.questions is not None:
            conv = Conversation(conv.name, conv.turns, conv.questions[: args.questions], conv.unknown_evidence)
        convs.append(conv)
    env = dict(item.split("=", 1) for item in args.env)
    run = uuid.uuid4().hex[:8]
    scores: list[QuestionScore] = []
    ingests: dict[str, object] = {}
    answers: list[dict[str, object]] = []
    tok = Tokenizer()
    with running_server(env=env) as srv, httpx.Client(timeout=600, trust_env=False) as client:
        for conv in convs:
            user_id = f"locomo-eval:{run}:{conv.name}"
            t0 = time.perf_counter()
            ingests[conv.name] = ingest(client, srv, conv, user_id, run) | {
                "turns": len(conv.turns), "sessions": len(conv.sessions()), "wall_s": round(time.perf_counter() - t0, 1)}
            print(f"{conv.name}: {len(conv.turns)} turns added in {time.perf_counter() - t0:.0f} s", flush=True)
            scores += search_codemem(client, srv, conv, user_id, answers, args.keep_answers)
            scores += search_bm25(conv, tok)
    summary = []
    for system in ("codemem", "bm25-turns"):
        mine = [s for s in scores if s.system == system]
        summary.append({"system": system, "scope": "all", **summarize(mine)})
        summary += [{"system": system, "scope": c.name, **summarize([s for s in mine if s.conversation == c.name])}
                    for c in convs]
    result = {
        "run": {"data": str(args.data), "conversations": names, "top_k": TOP_K, "windows_tokens": WINDOWS,
                "chunk": {"messages": CHUNK_MESSAGES, "words": CHUNK_WORDS}, "env": env,
                "unknown_evidence": {c.name: list(c.unknown_evidence) for c in convs},
                "scoring": "per question: recall of its evidence turns (text found in the answer, items in "
                           "order, tokens = chars / 4) within 2k / 8k tokens and 10 items, averaged"},
        "ingest": ingests,
        "summary": summary,
        "questions": [asdict(s) for s in scores],
        "answers": answers,
    }
    out = write_result(args.out.with_suffix(".json"), result, prov, markdown=report, indent=1)
    print(out.with_suffix(".md").read_text())
    errors = [e for i in ingests.values() for e in i["errors"]]  # type: ignore[index]
    for e in errors:
        print("error:", e)
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
