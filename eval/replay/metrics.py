"""Trajectory-level retrieval metrics of the replay, shared by codemem and the baselines so
every system is scored by the same code.

Every system's answer is a list of items (codemem: cards and evidence; BM25 over messages:
messages; MiniLM: chunks; BM25 over trajectories: whole trajectories), each from one
trajectory (`session_id`). The ranking figures are taken at trajectory level for all of them
alike: the answer is reduced to its distinct trajectories in order of first appearance;
hit@k = a gold trajectory among the first k of those, MRR = 1 / the rank of the first gold
one, found = any gold trajectory anywhere in the answer. So a system that returns many items
of one trajectory gains nothing over one that returns the trajectory once. The item position
of the first gold item is kept too (`gold_item_rank`, `item_mrr`), for the record only.
Tokens are approximated as characters / 4 of an item's text (a string, or the text parts of
a content-part list): cheap, model-free, and the same for every system.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from eval._stats import percentile

CHARS_PER_TOKEN = 4
WINDOW_TOKENS = 8000
TOKEN_NOTE = "tokens ~= characters / 4 of each item's text content"


@dataclass(frozen=True)
class Item:
    """One returned item, reduced to what the metrics need."""

    session_id: str
    tokens: float


@dataclass(frozen=True)
class QueryScore:
    """The figures of one Search (one task, one system, one condition)."""

    system: str
    condition: str  # relevant | repo | all | absent
    task: str
    items: int
    sessions: int
    tokens_total: float
    gold_rank: int | None  # 1-based rank of the first gold trajectory among distinct trajectories
    gold_item_rank: int | None  # 1-based item position of the first gold item (for the record)
    tokens_before_gold: float | None
    gold_share_8k: float | None  # None when the task has no gold in this memory (absent)
    latency_ms: float
    # The first trajectory is gold or edited a file the task's own fix touches (None: absent).
    useful1: bool | None = None


def content_text(content: object) -> str:
    """An item's text: the string, or its text parts joined (images and other parts ignored)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def count_tokens(content: object) -> float:
    return len(content_text(content)) / CHARS_PER_TOKEN


def first_gold_rank(items: Sequence[Item], gold: frozenset[str]) -> int | None:
    return next((i for i, it in enumerate(items, 1) if it.session_id in gold), None)


def distinct_trajectories(items: Sequence[Item]) -> list[str]:
    """The answer at trajectory level: its session_ids in order of first appearance."""
    return list(dict.fromkeys(it.session_id for it in items))


def first_gold_session_rank(items: Sequence[Item], gold: frozenset[str]) -> int | None:
    """Rank of the first gold trajectory among the answer's distinct trajectories: what a
    reader who skips repeated sources sees, and the rank every system is scored by."""
    return next((i for i, s in enumerate(distinct_trajectories(items), 1) if s in gold), None)


def tokens_before(items: Sequence[Item], rank: int | None) -> float | None:
    return None if rank is None else sum(it.tokens for it in items[: rank - 1])


def gold_share(items: Sequence[Item], gold: frozenset[str], window: float = WINDOW_TOKENS) -> float:
    """Gold tokens / tokens in the first `window` tokens returned (an item crossing the edge
    counts with its part inside). 0 when nothing is returned."""
    used = gold_tokens = 0.0
    for it in items:
        take = min(it.tokens, window - used)
        if take <= 0:
            break
        used += take
        if it.session_id in gold:
            gold_tokens += take
    return gold_tokens / used if used else 0.0


def hit_at(rank: int | None, k: int) -> float:
    return 1.0 if rank is not None and rank <= k else 0.0


def reciprocal_rank(rank: int | None) -> float:
    return 0.0 if rank is None else 1.0 / rank


def score_query(system: str, condition: str, task: str, items: Sequence[Item], gold: frozenset[str],
                latency_ms: float, useful: frozenset[str] = frozenset()) -> QueryScore:
    """All figures of one result list; `gold` empty for the absent condition. `useful`: the
    trajectories that edited a file the task's own fix touches (useful@1 counts them and gold)."""
    item_rank = first_gold_rank(items, gold) if gold else None
    first = distinct_trajectories(items)[:1]
    return QueryScore(
        system=system, condition=condition, task=task, items=len(items), sessions=len({i.session_id for i in items}),
        tokens_total=sum(i.tokens for i in items), gold_rank=first_gold_session_rank(items, gold) if gold else None,
        gold_item_rank=item_rank,
        tokens_before_gold=tokens_before(items, item_rank), gold_share_8k=gold_share(items, gold) if gold else None,
        latency_ms=latency_ms, useful1=bool(first and first[0] in gold | useful) if gold else None,
    )


@dataclass(frozen=True)
class Summary:
    """One row of the table: a system in a condition, over its queries."""

    system: str
    condition: str
    queries: int
    hit1: float | None  # trajectory level, like hit5 and mrr
    hit5: float | None
    mrr: float | None
    useful1: float | None  # the first trajectory gold or a same-file fix
    item_mrr: float | None  # by item position, for the record
    found: int  # queries with any gold trajectory anywhere in the answer
    found_share: float | None  # found / queries with gold in memory
    tokens_before_gold_p50: float | None  # over queries where gold was found
    gold_share_8k: float | None  # mean
    tokens_total_p50: float | None
    tokens_total_mean: float | None
    items_p50: float | None
    sessions_p50: float | None
    latency_p50_ms: float | None
    latency_p95_ms: float | None

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def summarize(scores: Sequence[QueryScore]) -> Summary:
    """Aggregate one system x condition; ranking figures are None when no query had gold."""
    s0 = scores[0]
    ranked = [s for s in scores if s.gold_share_8k is not None]
    ranks = [s.gold_rank for s in ranked]
    before = [s.tokens_before_gold for s in ranked if s.tokens_before_gold is not None]
    return Summary(
        system=s0.system, condition=s0.condition, queries=len(scores),
        hit1=_mean([hit_at(r, 1) for r in ranks]), hit5=_mean([hit_at(r, 5) for r in ranks]),
        mrr=_mean([reciprocal_rank(r) for r in ranks]),
        useful1=_mean([float(bool(s.useful1)) for s in ranked]),
        item_mrr=_mean([reciprocal_rank(s.gold_item_rank) for s in ranked]),
        found=sum(r is not None for r in ranks),
        found_share=_mean([float(r is not None) for r in ranks]),
        tokens_before_gold_p50=percentile(before, 50),
        gold_share_8k=_mean([s.gold_share_8k for s in ranked if s.gold_share_8k is not None]),
        tokens_total_p50=percentile([s.tokens_total for s in scores], 50),
        tokens_total_mean=_mean([s.tokens_total for s in scores]),
        items_p50=percentile([float(s.items) for s in scores], 50),
        sessions_p50=percentile([float(s.sessions) for s in scores], 50),
        latency_p50_ms=percentile([s.latency_ms for s in scores], 50),
        latency_p95_ms=percentile([s.latency_ms for s in scores], 95),
    )


def summarize_all(scores: Sequence[QueryScore]) -> list[Summary]:
    """One Summary per (system, condition), in first-seen order."""
    groups: dict[tuple[str, str], list[QueryScore]] = {}
    for s in scores:
        groups.setdefault((s.system, s.condition), []).append(s)
    return [summarize(g) for g in groups.values()]
