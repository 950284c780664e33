"""The load clients of `eval.load`: Add and Search clients that tally what they are
answered (a client answered 503 waits its Retry-After, as a platform does), the messages they
send (real trajectory chunks with a check mark), and the Searches that read the marks back.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from dataclasses import dataclass, field

import httpx

from eval._stats import summary_ms

CHUNK = 20


SHED = 503  # the admission bound's answer (with Retry-After)


@dataclass
class Tally:
    """What one endpoint saw during the sustained phase: latencies by status."""

    latencies_s: dict[int, list[float]] = field(default_factory=dict)
    statuses: Counter[str] = field(default_factory=Counter)

    def record(self, status: int, seconds: float) -> None:
        self.latencies_s.setdefault(status, []).append(seconds)
        self.statuses[str(status)] += 1

    def report(self, wall_s: float) -> dict[str, object]:
        requests = sum(self.statuses.values())
        ok, shed = self.latencies_s.get(200, []), self.latencies_s.get(SHED, [])
        return {"requests": requests, "statuses": dict(self.statuses),
                "acknowledged": len(ok), "throughput_per_s": round(len(ok) / wall_s, 2) if wall_s else None,
                "latency_ms": summary_ms(ok, 1),  # answers 200 only
                "shed": {"share": round(len(shed) / requests, 4) if requests else 0.0,
                         "latency_ms": summary_ms(shed, 1)}}


def chunks_of(sessions: list[tuple[str, list[dict]]]) -> list[list[dict]]:
    return [msgs[i:i + CHUNK] for _, msgs in sessions for i in range(0, len(msgs), CHUNK)]


def marked(chunk: list[dict], mark: str, single: bool = False) -> list[dict]:
    """The chunk with one more short message carrying `mark` (never the session's task);
    `single`: only the chunk's first message, `mark` appended to its text."""
    if single:
        first = chunk[0]
        return [{**first, "content": f"{first['content']}\n[load check {mark}]"}]
    return [*chunk, {"role": "assistant", "content": f"[load check {mark}]"}]


async def post(client: httpx.AsyncClient, path: str, body: dict, tally: Tally | None = None) -> httpx.Response | None:
    t0 = time.perf_counter()
    try:
        r = await client.post(path, json=body)
    except httpx.HTTPError as exc:
        if tally is not None:
            tally.statuses[type(exc).__name__] += 1
        return None
    if tally is not None:
        tally.record(r.status_code, time.perf_counter() - t0)
    return r


async def back_off(r: httpx.Response | None, deadline: float) -> None:
    """After a 503, wait what its Retry-After says (within the phase), as a platform does."""
    if r is not None and r.status_code == SHED:
        wait = float(r.headers.get("retry-after", "1"))
        await asyncio.sleep(max(0.0, min(wait, deadline - time.monotonic())))


def run_searchers(url: str, clients: int, users: int, seconds: float, timeout: float, queries: list[str]) -> Tally:
    """`clients` Search clients for `seconds` (related tasks' problem statements, top_k 100),
    in a process of their own; what they saw."""
    return asyncio.run(_searchers(url, clients, users, seconds, timeout, queries))


async def _searchers(url: str, clients: int, users: int, seconds: float, timeout: float, queries: list[str]) -> Tally:
    searches = Tally()
    deadline = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=clients + 8)
    async with httpx.AsyncClient(base_url=url, timeout=timeout, limits=limits) as client:
        async def searcher(i: int) -> None:
            n = 0
            while time.monotonic() < deadline:
                q = queries[(i * 31 + n) % len(queries)]
                r = await post(client, "/search", {"user_id": user_of(i, users), "query": q, "top_k": 100}, searches)
                await back_off(r, deadline)
                n += 1

        await asyncio.gather(*(searcher(i) for i in range(clients)))
    return searches


def user_of(client: int, users: int) -> str:
    """The user id a load client writes and searches: "load", or one of `users` ("load-0"...)."""
    return "load" if users == 1 else f"load-{client % users}"


async def found_per_user(url: str, acked: list[tuple[str, str, str]]) -> dict[str, int]:
    """`found` for Adds of several users: {mark: count}."""
    counts: dict[str, int] = {}
    for user in sorted({u for u, _, _ in acked}):
        counts |= await found(url, user, [(s, m) for u, s, m in acked if u == user])
    return counts


async def found(url: str, user_id: str, marks: list[tuple[str, str]], concurrency: int = 8) -> dict[str, int]:
    """How many times each mark comes back in a Search for it; {mark: count}."""
    texts = await answers(url, user_id, marks, concurrency)
    return {mark: text.count(f"[load check {mark}]") for mark, text in texts.items()}


async def answers(url: str, user_id: str, marks: list[tuple[str, str]], concurrency: int = 8) -> dict[str, str]:
    """{mark: the text of its session's items in the answer to a Search for the mark}."""
    texts: dict[str, str] = {}
    sem = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(base_url=url, timeout=600) as client:
        async def one(session: str, mark: str) -> None:
            async with sem:
                r = await client.post("/search", json={"user_id": user_id, "query": mark, "top_k": 100})
                texts[mark] = "\n".join(h["content"] if isinstance(h["content"], str) else json.dumps(h["content"])
                                         for h in r.json()["data"] if h["session_id"] == session)

        await asyncio.gather(*(one(s, m) for s, m in marks))
    return texts


async def what_came_back(url: str, missed: list[tuple[str, str, str]]) -> list[dict[str, object]]:
    """For acknowledged Adds not found: what a Search for the mark answered instead (the first
    items' session, kind and quiet flag), and whether the mark is stored at all (its session's
    experience opened by id), to tell a loss from a ranking miss."""
    out: list[dict[str, object]] = []
    async with httpx.AsyncClient(base_url=url, timeout=600) as client:
        for user, session, mark in missed:
            r = await client.post("/search", json={"user_id": user, "query": mark, "top_k": 100})
            first = [{"session_id": h.get("session_id"), "kind": h["metadata"].get("kind"),
                      "quiet": h["metadata"].get("quiet")} for h in r.json()["data"][:3]]
            stored = await client.get("/ui/experience", params={"user_id": user, "session_id": session, "messages": "true"})
            out.append({"session_id": session, "mark": mark, "answered_first": first,
                        "session_page_status": stored.status_code, "mark_in_session_page": mark in stored.text})
    return out
