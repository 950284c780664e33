"""What each `codemem` subcommand does, given the settings and its parsed arguments.

Heavy modules (LanceDB, the model, the HTTP and MCP edges, an HTTP client) are imported by
the subcommand that needs them, so `codemem hook` answers quickly."""

from __future__ import annotations

import argparse
import difflib
import os
import pwd
import shutil
import sys
import threading
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from cli import exposure
from codemem.config import Settings, is_object_storage
from codemem.contract.types import SearchRequest
from codemem.git.repo_id import git_top_level, repo_user_id

if TYPE_CHECKING:
    # Imported where used: it loads LanceDB (slow to import), and the Claude Code hook must answer
    # well inside the 1.5 s Claude Code gives a SessionEnd hook by default.
    from codemem.memory import Memory


def serve(settings: Settings, args: argparse.Namespace) -> int:
    """Serve the HTTP API; with several workers, each is a process with its own Memory over
    the same data, reading its settings back from the environment. A reachable address needs
    a key (`exposure.check_key`); with a certificate and key it answers HTTPS."""
    try:
        exposure.check_key(settings.server, "serve")
        tls = exposure.tls_files(settings.server)
    except exposure.Refused as exc:
        print(f"codemem: {exc}", file=sys.stderr)
        return 2

    import uvicorn

    from api.app import create_app
    from api.logs import prepare_workers
    from api.memoryarena import MemoryArenaSettings
    from cli import local_server

    memoryarena = MemoryArenaSettings.from_env()  # read before serving: a bad value stops here, in every worker's stead

    scheme = "https" if tls else "http"
    print(f"codemem serving on {scheme}://{settings.server.host}:{settings.server.port} (data: {settings.storage.data_dir}, "
          f"workers: {settings.server.workers}, auth: {'API key' if settings.server.api_key else 'open'})", file=sys.stderr)
    common = server_options(settings, tls)
    with local_server.announced(settings, scheme):  # `codemem search` uses this server while it runs
        if settings.server.workers <= 1:
            uvicorn.run(create_app(settings, memoryarena=memoryarena), **common)
        else:
            prepare_workers(settings)
            uvicorn.run("api.app:create_app", factory=True, workers=settings.server.workers, **common)
    return 0


def server_options(settings: Settings, tls: exposure.TLSFiles | None) -> dict[str, Any]:
    """uvicorn's options for `serve`: the address, the logs, the grace given to requests in
    flight at shutdown, and the certificate and key when it answers HTTPS itself."""
    from api.logs import log_config

    options: dict[str, Any] = {"host": settings.server.host, "port": settings.server.port,
                               "log_config": log_config(settings), "access_log": False, "timeout_graceful_shutdown": 30}
    if tls:
        options |= {"ssl_certfile": tls.cert, "ssl_keyfile": tls.key}
    return options


def _offline_memory(settings: Settings, query: bool = False) -> Memory:
    """A Memory for one short command: no background compaction. For a `query`, the encoder
    loads on a thread of its own while LanceDB is imported."""
    _refuse_foreign_owner(settings)  # before any work
    from codemem.encoders import make_embedder

    embedder = make_embedder(settings.embedding.model, settings.embedding.threads)
    if query:
        threading.Thread(target=embedder.warm, name="codemem-encoder", daemon=True).start()
    from codemem.memory import Memory

    return Memory(settings.replace({"maintenance.interval_s": 0}), embedder=embedder)


def _user_id(args: argparse.Namespace, where: str = ".") -> str:
    """--user-id, else the memory of the repository (or directory) at `where`, as the MCP
    server and the hook name it."""
    return str(args.user_id) if args.user_id else repo_user_id(where)


# The exit status of a command that reads (`search`, `memories`) when it has nothing to show,
# as grep's: no data directory, no memory by that name, nothing that matches alike. A command
# that deletes exits 0 when there was nothing to delete: what it was asked for holds.
NOTHING_FOUND = 1
# Where deploy/codemem.service keeps its memory (its CODEMEM_DATA_DIR).
SERVICE_DATA_DIR = "/var/lib/codemem/data"


def _missing(settings: Settings) -> bool:
    """True (said on stderr) when a command finds no data directory: it then creates
    nothing, and one that reads exits `NOTHING_FOUND`."""
    if is_object_storage(settings.storage.data_dir) or Path(settings.storage.data_dir).expanduser().exists():
        return False
    print(f"codemem: no memory at {settings.storage.data_dir}: nothing has been stored there yet "
          "(`codemem ingest-git .` imports this repository's history; --data-dir or "
          "CODEMEM_DATA_DIR names another directory; a service's memory is where its CODEMEM_DATA_DIR "
          f"points, {SERVICE_DATA_DIR} for deploy/codemem.service: "
          f"sudo -u codemem codemem ... --data-dir {SERVICE_DATA_DIR}).", file=sys.stderr)
    return True


def _refuse_foreign_owner(settings: Settings) -> None:
    """As root, refuse to write into a data directory another user owns (a service's): files
    root creates there would be ones the service can no longer write or remove."""
    folder = Path(settings.storage.data_dir).expanduser()
    if is_object_storage(settings.storage.data_dir) or os.geteuid() != 0 or not folder.exists():
        return
    owner = folder.stat().st_uid
    if owner != 0:
        name = _user_name(owner)
        raise SystemExit(f"codemem: {folder} belongs to {name}; run this as that user so that it can still write "
                         f"what this changes: sudo -u {name} codemem ... --data-dir {folder}")


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def search(settings: Settings, args: argparse.Namespace) -> int:
    """The experiences that bear on a query, each in brief (`codemem.compact`), then how many
    more matched; `--json`: the raw answer of `POST /search`."""
    # Imported here: urllib's HTTP client alone is a noticeable share of the hook's start-up.
    from cli import local_server, results
    from codemem import compact

    user_id = _user_id(args)
    if _missing(settings):
        return NOTHING_FOUND
    asked = args.top_k if args.json else args.top_k + compact.LOOKAHEAD
    req = SearchRequest(user_id=user_id, query=args.query, top_k=asked)
    config = settings.search.config()  # the server's too: it reads the same settings
    hits = None
    if url := local_server.running_server(settings.storage.data_dir):
        try:
            hits = local_server.search(url, req, settings.server.api_key)
        except OSError as exc:
            print(f"codemem: the server at {url} did not answer ({exc}); searching here", file=sys.stderr)
    memory = None
    try:
        if hits is None:
            print(f"codemem: searching {settings.storage.data_dir} here (`codemem serve` beside it answers "
                  "faster)...", file=sys.stderr, flush=True)
            memory = _offline_memory(settings, query=True)
            hits = memory.search(req, None if args.json else compact.search_config(config))
        if args.json:
            print(msgspec.json.encode({"data": hits}).decode())
            return 0 if hits else NOTHING_FOUND
        if not hits:
            memory = memory or _offline_memory(settings)
            print(no_match(user_id, [u.user_id for u in memory.list_users(sizes=False)], settings.storage.data_dir))
            return NOTHING_FOUND
    finally:
        if memory is not None:
            memory.close()
    answer = compact.compact(hits, args.top_k, 0, lambda item: "", asked, config.calibration.quiet_below)
    print(f"{len(answer.shown)} {'result' if len(answer.shown) == 1 else 'results'} from the memory of {user_id}"
          + (" (none stands out as the one this query is about: these are the nearest)" if answer.quiet else "") + ":\n")
    for rank, item in enumerate(answer.shown, 1):
        print(results.format_brief(rank, item))
    if answer.left_out:
        more = f"{len(answer.left_out)}{'+' if answer.more else ''}"
        print(f"{more} more matched: --top-k {args.top_k + len(answer.left_out)} shows them; "
              f"--json prints the whole answer.")
    return 0


def no_match(user_id: str, names: Sequence[str], data_dir: str) -> str:
    """Why a search found nothing: nothing in a memory that holds something came close
    enough to answer (a conversation's turns, `codemem.timeline.turns`), or no memory by that
    name (with the names it might have meant, from the user ids stored: `names`)."""
    if user_id in names:
        return f"Nothing closely related in the memory of {user_id}: nothing there came close to this query."
    lower = {name.lower(): name for name in names}
    near = [lower[n] for n in difflib.get_close_matches(user_id.lower(), list(lower), n=3, cutoff=0.6)]
    text = f"The memory of {user_id} is empty: {data_dir} holds nothing for that user_id."
    if near:
        text += " Did you mean " + " or ".join(f"--user-id {n}" for n in near) + "?"
    elif names:
        text += f" `codemem memories` lists the {len(names)} it holds."
    return text


def memories(settings: Settings, args: argparse.Namespace) -> int:
    """The user ids stored, with their experiences, messages and last write."""
    if _missing(settings):
        return NOTHING_FOUND
    with _offline_memory(settings) as memory:
        users = memory.list_users(sizes=False)
    print(f"{len(users)} {'memory' if len(users) == 1 else 'memories'} in {settings.storage.data_dir}")
    if not users:
        return NOTHING_FOUND
    width = max(len("user_id"), *(len(u.user_id) for u in users))
    print(f"{'user_id':<{width}}  {'experiences':>11}  {'messages':>8}  last write (UTC)")
    for u in users:
        when = datetime.fromtimestamp(u.last_write_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M")
        print(f"{u.user_id:<{width}}  {u.experiences:>11}  {u.messages:>8}  {when}")
    return 0


def purge(settings: Settings, args: argparse.Namespace) -> int:
    if _missing(settings):
        return 0
    with _offline_memory(settings) as memory:
        removed = memory.purge(args.older_than)
    cutoff = (datetime.now(UTC) - args.older_than).strftime("%Y-%m-%d %H:%M UTC")
    age = _age(args.older_than)
    if removed:
        print(f"Removed {removed} memories stored more than {age} ago (before {cutoff}) from {settings.storage.data_dir}.")
    else:
        print(f"Nothing in {settings.storage.data_dir} was stored more than {age} ago (before {cutoff}): nothing removed.")
    return 0


def _age(age: timedelta) -> str:
    """30 days, 12 hours, 90 minutes: the largest unit the age is a whole number of."""
    seconds = int(age.total_seconds())
    for unit, size in (("week", 604800), ("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds % size == 0 and seconds >= size:
            count = seconds // size
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{seconds} seconds"


def delete_user(settings: Settings, args: argparse.Namespace) -> int:
    user_id = _user_id(args)
    if _missing(settings):
        return 0
    with _offline_memory(settings) as memory:
        removed = memory.delete_user(user_id)
    print(f"Removed {removed} memories of user {user_id!r}.")
    return 0


def ingest_transcripts(settings: Settings, args: argparse.Namespace) -> int:
    from codemem.importers.transcripts import ingest_transcripts as run
    from codemem.memory import Memory

    user_id = _user_id(args)
    memory = Memory(settings)
    try:
        report = run(memory, args.paths, user_id, chunk=args.chunk)
    except FileNotFoundError as exc:
        print(f"codemem: {exc}", file=sys.stderr)
        return 2
    finally:
        memory.close()
    print(f"Read {report.sources} transcripts into the memory of {user_id}: {report.added} chunks added "
          f"({report.messages} messages), {report.unchanged} already stored, {report.empty} empty; "
          f"skipped {report.skipped_lines} lines that did not parse{_where(report.skipped_where, report.skipped_lines)}.")
    return 0


def _where(places: list[str], total: int) -> str:
    """' (file:line, ...)' naming the skipped lines, or nothing when none was skipped."""
    if not places:
        return ""
    return f" ({', '.join(places)}{', ...' if total > len(places) else ''})"


def ingest_git(settings: Settings, args: argparse.Namespace) -> int:
    from codemem.importers.git import ingest_git as run
    from codemem.memory import Memory

    top = git_top_level(args.repo)
    if top is None:
        why = "not a git repository (nor inside one)" if Path(args.repo).expanduser().is_dir() else "no such directory"
        print(f"codemem: {why}: {args.repo}", file=sys.stderr)
        return 2
    user_id = _user_id(args, top)
    print(f"codemem: importing {top} into the memory of {user_id} in {settings.storage.data_dir}", file=sys.stderr)
    memory = Memory(settings)
    try:
        report = run(memory, top, user_id, since=args.since, max_commits=args.max_commits)
    except ValueError as exc:
        print(f"codemem: {exc}", file=sys.stderr)
        return 2
    finally:
        memory.close()
    skipped = report.skipped_commits
    named = f"{', '.join(sha[:12] for sha in skipped[:5])}{', ...' if len(skipped) > 5 else ''}"
    if not report.sources and skipped:
        print(f"codemem: imported nothing: git could not read any of the {_count_of(len(skipped), 'commit')} "
              f"to import ({named}); objects they need are missing. A shallow or partial clone? "
              "`git fetch --unshallow` (or a full clone) makes them readable.", file=sys.stderr)
        return 1
    if not report.sources:
        after = f" after {args.since:%Y-%m-%d}" if args.since else ""
        print(f"No commits to import: {top} has none{after}.")
        return 0
    print(f"Read {report.changes_read()}: {report.added:,} added, {report.unchanged:,} already stored. "
          f"`{command_name()} search \"...\"` in the repository searches them.")
    if skipped:
        print(f"codemem: skipped {_count_of(len(skipped), 'commit')} whose git objects are missing ({named}); "
              "the rest was imported.", file=sys.stderr)
    return 0


def command_name() -> str:
    """How to run this command again: `codemem` where that is on the PATH (`make install`),
    else the path it was run by."""
    if shutil.which("codemem"):
        return "codemem"
    run_by = Path(sys.argv[0])
    return str(run_by) if run_by.name == "codemem" else f"{Path(sys.executable).name} -m cli"


def _count_of(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def mcp(settings: Settings, args: argparse.Namespace) -> int:
    if args.transport == "http":
        try:
            exposure.check_key(settings.server, "mcp --transport http")
        except exposure.Refused as exc:
            print(f"codemem: {exc}", file=sys.stderr)
            return 2

    from integrations.mcp_server import serve_mcp

    serve_mcp(settings, transport=args.transport)
    return 0


def hook_claude_code(settings: Settings, args: argparse.Namespace) -> int:
    from integrations.claude_code_hook import run_hook

    return run_hook(settings, wait=args.wait)
