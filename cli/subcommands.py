"""What each `codemem` subcommand does, given the settings and its parsed arguments.

Heavy modules (LanceDB, the model, the HTTP and MCP edges) are imported by the subcommand
that needs them, so `codemem hook` answers quickly."""

from __future__ import annotations

import argparse
import sys
import textwrap
from typing import TYPE_CHECKING, Any

import msgspec

from codemem.config import Settings
from codemem.models import Hit, SearchRequest, TextPart

if TYPE_CHECKING:
    # Imported where used: it loads LanceDB (~2 s), and the Claude Code hook must answer
    # well inside the 1.5 s Claude Code gives a SessionEnd hook by default.
    from codemem.memory import Memory


def serve(settings: Settings, args: argparse.Namespace) -> int:
    """Serve the HTTP API; with several workers, each is a process with its own Memory over
    the same data, reading its settings back from the environment."""
    import uvicorn

    from api.app import create_app
    from api.logs import log_config, prepare_workers

    print(f"codemem serving on http://{settings.host}:{settings.port} (data: {settings.data_dir}, "
          f"workers: {settings.workers}, auth: {'API key' if settings.api_key else 'open'})", file=sys.stderr)
    common: dict[str, Any] = {"host": settings.host, "port": settings.port, "log_config": log_config(settings),
              "access_log": False, "timeout_graceful_shutdown": 30}
    if settings.workers <= 1:
        uvicorn.run(create_app(settings), **common)
    else:
        prepare_workers(settings)
        uvicorn.run("api.app:create_app", factory=True, workers=settings.workers, **common)
    return 0


def _offline_memory(settings: Settings) -> Memory:
    """A Memory for one short command: no background compaction."""
    from codemem.memory import Memory

    return Memory(settings.replace(compact_interval_s=0))


def search(settings: Settings, args: argparse.Namespace) -> int:
    with _offline_memory(settings) as memory:
        hits = memory.search(SearchRequest(user_id=args.user_id, query=args.query, top_k=args.top_k))
    if args.json:
        print(msgspec.json.encode({"data": hits}).decode())
        return 0
    if not hits:
        print("No memories match.")
    for rank, hit in enumerate(hits, 1):
        print(format_hit(rank, hit))
    return 0


def format_hit(rank: int, hit: Hit, width: int = 100, max_lines: int = 16) -> str:
    """A readable block for a person: rank, score, where it came from, then the text."""
    meta = hit.metadata
    kind = meta.get("kind", "item")
    head = f"#{rank}  score {hit.score:.4f}  {kind}  session {hit.session_id}  {hit.created_at}"
    text = hit.content if isinstance(hit.content, str) else "\n".join(
        p.text if isinstance(p, TextPart) else "[image]" for p in hit.content
    )
    lines = []
    for line in text.strip().splitlines():
        lines.extend(textwrap.wrap(line, width))  # blank lines dropped: a terminal is short
    more = f"\n    ... ({len(lines) - max_lines} more lines)" if len(lines) > max_lines else ""
    body = "\n".join("    " + line for line in lines[:max_lines])
    return f"{head}\n{body}{more}\n"


def purge(settings: Settings, args: argparse.Namespace) -> int:
    with _offline_memory(settings) as memory:
        removed = memory.purge(args.older_than)
    print(f"Removed {removed} memories stored more than {args.older_than} ago.")
    return 0


def delete_user(settings: Settings, args: argparse.Namespace) -> int:
    with _offline_memory(settings) as memory:
        removed = memory.delete_user(args.user_id)
    print(f"Removed {removed} memories of user {args.user_id!r}.")
    return 0


def ingest_transcripts(settings: Settings, args: argparse.Namespace) -> int:
    from codemem.ingest import ingest_transcripts as run
    from codemem.memory import Memory

    memory = Memory(settings)
    try:
        report = run(memory, args.paths, args.user_id, chunk=args.chunk)
    except FileNotFoundError as exc:
        print(f"codemem: {exc}", file=sys.stderr)
        return 2
    finally:
        memory.close()
    print(f"Read {report.sources} transcripts: {report.added} chunks added ({report.messages} messages), "
          f"{report.unchanged} already stored, {report.empty} empty; "
          f"skipped {report.skipped_lines} lines that did not parse.")
    return 0


def ingest_git(settings: Settings, args: argparse.Namespace) -> int:
    from codemem.ingest import ingest_git as run
    from codemem.memory import Memory

    memory = Memory(settings)
    try:
        report = run(memory, args.repo, args.user_id, since=args.since, max_commits=args.max_commits)
    except ValueError as exc:
        print(f"codemem: {exc}", file=sys.stderr)
        return 2
    finally:
        memory.close()
    print(f"Read {report.sources} commits: {report.added} added, {report.unchanged} already stored.")
    return 0


def mcp(settings: Settings, args: argparse.Namespace) -> int:
    from integrations.mcp_server import serve_mcp

    serve_mcp(settings, transport=args.transport)
    return 0


def hook_claude_code(settings: Settings, args: argparse.Namespace) -> int:
    from integrations.claude_code_hook import run_hook

    return run_hook(settings, wait=args.wait)
