"""The shared data as the load benchmarks send it: SWE-ContextBench Lite's transcripts as
sessions of Add messages, and its related tasks' problem statements as queries.

One reader for every benchmark that Adds real transcripts, so they all send the same
messages. The replay renders trajectories with its own renderer (`eval.replay.data`), on
purpose: it compares codemem with baselines on one rendering of its own.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path

from eval._paths import SWE_LITE, SWE_LITE_TAR

RELATED = SWE_LITE / "related_tasks.jsonl"

Session = tuple[str, list[dict[str, object]]]
Chunk = tuple[str, str, list[dict[str, object]]]


def load_sessions(tar_path: Path = SWE_LITE_TAR, limit: int | None = None) -> list[Session]:
    """[(session name, [{"role", "content", "timestamp"?}])] from the real transcripts (the
    first `limit` of them, when given); a message without a timestamp has none in its dict,
    and messages with no text are left out."""
    from codemem.importers.claude_code import iter_transcripts_from_tar

    sessions: list[Session] = []
    for name, tr in iter_transcripts_from_tar(tar_path):
        msgs: list[dict[str, object]] = [
            {"role": m.role, "content": m.text, **({"timestamp": m.timestamp} if m.timestamp is not None else {})}
            for m in tr.messages if m.text.strip()]
        if msgs:
            sessions.append((Path(name).stem, msgs))
        if limit and len(sessions) >= limit:
            break
    return sessions


def load_queries(path: Path = RELATED) -> list[str]:
    """The related tasks' problem statements, in file order."""
    with open(path) as f:
        return [json.loads(line)["problem_statement"] for line in f if line.strip()]


def chunks(sessions: list[Session], size: int, tag: str) -> Iterator[Chunk]:
    """Endless (request_id, session_id, messages) of exactly `size` messages each: every
    session cut into full chunks (a session's short tail is left out); cycles through the
    sessions again (new session/request ids) when more are needed."""
    for cycle in itertools.count():
        for name, msgs in sessions:
            sid = f"{name}-c{cycle}"
            for start in range(0, len(msgs) - size + 1, size):
                yield f"{tag}-{sid}-{start}", sid, msgs[start:start + size]
