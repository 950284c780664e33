"""Trajectory-level retrieval metrics of the replay, shared by codemem and the baselines so
every system is scored by the same code.

A returned item counts as gold when its `session_id` is one of the task's gold trajectories.
Tokens are approximated as characters / 4 of an item's text (a string, or the text parts of
a content-part list): cheap, model-free, and the same for every system.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass

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
    gold_rank: int | None  # 1-based item position of the first gold item
    gold_session_rank: int | None  # 1-based position among distinct session_ids
    tokens_before_gold: float | None
    gold_share_8k: float | None  # None when the task has no gold in this memory (absent)
    latency_ms: float


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


def first_gold_session_rank(items: Sequence[Item], gold: frozenset[str]) -> int | None:
    """Rank among distinct sessions, in order of first appearance: what a reader who skips
    repeated sources would see."""
    seen: list[str] = []
    for it in items:
        if it.session_id not in seen:
            seen.append(it.session_id)
            if it.session_id in gold:
                return len(seen)
    return None


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
                latency_ms: float) -> QueryScore:
    """All figures of one result list; `gold` empty for the absent condition."""
    rank = first_gold_rank(items, gold) if gold else None
    return QueryScore(
        system=system, condition=condition, task=task, items=len(items), sessions=len({i.session_id for i in items}),
        tokens_total=sum(i.tokens for i in items), gold_rank=rank,
        gold_session_rank=first_gold_session_rank(items, gold) if gold else None,
        tokens_before_gold=tokens_before(items, rank), gold_share_8k=gold_share(items, gold) if gold else None,
        latency_ms=latency_ms,
    )


@dataclass(frozen=True)
class Summary:
    """One row of the table: a system in a condition, over its queries."""

    system: str
    condition: str
    queries: int
    hit1: float | None
    hit5: float | None
    mrr: float | None
    session_mrr: float | None
    found: int  # queries with any gold item returned
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


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear-interpolated percentile (numpy's default), None for no values."""
    if not values:
        return None
    s = sorted(values)
    pos = (len(s) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


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
        session_mrr=_mean([reciprocal_rank(s.gold_session_rank) for s in ranked]),
        found=sum(r is not None for r in ranks),
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
