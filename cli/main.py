"""The `codemem` command: a thin shell over the same objects the server uses.

This package sits above the core, as the composition root: it is the one place that joins
`codemem` to its edges (`api` for `serve`, `integrations` for `mcp` and `hook`). Each
subparser names the function that runs it (`set_defaults(handler=...)`, in
`cli/subcommands.py`).
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
from datetime import UTC, datetime, timedelta

from cli import subcommands
from codemem.config import MCP_HTTP_PORT, SettingError, Settings, agent_defaults

_AGE = re.compile(r"^(\d+)\s*([smhdw])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_age(text: str) -> timedelta:
    """'30d', '12h', '90m', '2w' -> timedelta."""
    m = _AGE.match(text.strip().lower())
    if m is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not an age like 30d, 12h, 90m or 2w")
    return timedelta(**{_UNITS[m.group(2)]: int(m.group(1))})


def parse_date(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date like 2024-01-31") from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


class _Version(argparse.Action):
    """`--version`, its package metadata read only when asked (every command's start-up counts)."""

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        from importlib.metadata import version

        print(f"codemem {version('codemem')}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="codemem", description="Memory for coding agents.",
        epilog=f"Every command uses one data directory ({_DATA}) unless --data-dir or CODEMEM_DATA_DIR "
               "says otherwise; inside a git work tree, the user_id defaults to the repository's "
               "(repo:<host>/<owner>/<name>), as the MCP server and the hook name it.")
    parser.add_argument("--version", action=_Version, nargs=0, help="the installed version (CHANGELOG.md says what each changes)")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the HTTP service (Add/Search contract)")
    serve.set_defaults(handler=subcommands.serve)
    serve.add_argument("--host", default=None, help="bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=None, help="port (default 8000)")
    serve.add_argument("--workers", type=int, default=None,
                       help="server processes sharing the data directory (default 1)")
    serve.add_argument("--tls-cert", default=None, metavar="FILE",
                       help="answer HTTPS with this PEM certificate (chain); or CODEMEM_TLS_CERT")
    serve.add_argument("--tls-key", default=None, metavar="FILE",
                       help="the certificate's unencrypted PEM private key; or CODEMEM_TLS_KEY")
    _allow_open(serve)
    _data_dir(serve)

    search = sub.add_parser("search", help="search a user's memory and print ranked results")
    search.set_defaults(handler=subcommands.search)
    _data_dir(search)
    _user_id(search)
    search.add_argument("--top-k", type=int, default=5)
    search.add_argument("--json", action="store_true", help="print the raw JSON response")
    search.add_argument("query")

    memories = sub.add_parser("memories", help="list the memories stored: user ids, experiences, messages, last write")
    memories.set_defaults(handler=subcommands.memories)
    _data_dir(memories)

    purge = sub.add_parser("purge", help="delete every memory older than an age, for all users")
    purge.set_defaults(handler=subcommands.purge)
    _data_dir(purge)
    purge.add_argument("--older-than", type=parse_age, required=True, help="e.g. 30d, 12h")

    transcripts = sub.add_parser("ingest-transcripts", help="import Claude Code JSONL transcripts")
    transcripts.set_defaults(handler=subcommands.ingest_transcripts)
    _data_dir(transcripts)
    _user_id(transcripts)
    transcripts.add_argument("--chunk", type=int, default=50, help="messages per Add (default 50)")
    transcripts.add_argument("paths", nargs="+", help="JSONL files, directories of them, or .tar.xz archives")

    git = sub.add_parser("ingest-git", help="import a git repository's history, one experience per change (a commit or a merged pull request)")
    git.set_defaults(handler=subcommands.ingest_git)
    _data_dir(git)
    _user_id(git, "the repository's id, repo:<host>/<owner>/<name>")
    git.add_argument("--since", type=parse_date, default=None, help="only commits after this date (YYYY-MM-DD)")
    git.add_argument("--max-commits", type=int, default=None)
    git.add_argument("repo", help="path to the repository")

    delete = sub.add_parser("delete-user", help="delete every memory of one user_id")
    delete.set_defaults(handler=subcommands.delete_user)
    _data_dir(delete)
    _user_id(delete)

    # `mcp` and `hook` run inside a coding agent: their defaults are config.agent_defaults().
    mcp = sub.add_parser("mcp", help="serve memory to agents over MCP (stdio by default)")
    _data_dir(mcp)
    mcp.add_argument("--transport", choices=("stdio", "http"), default="stdio",
                     help="stdio (an agent starts the server) or http (streamable HTTP at /mcp)")
    mcp.add_argument("--host", default=None, help="bind address with --transport http (default 127.0.0.1)")
    mcp.add_argument("--port", type=int, default=None,
                     help=f"port with --transport http (default {MCP_HTTP_PORT}, beside `serve`'s 8000)")
    _allow_open(mcp)
    mcp.set_defaults(handler=subcommands.mcp, agent=True)

    hook = sub.add_parser("hook", help="capture an agent's sessions into its repository's memory")
    agents = hook.add_subparsers(dest="agent_name", required=True)
    claude = agents.add_parser("claude-code", help="ingest the transcript named by a Claude Code hook payload on stdin")
    claude.set_defaults(handler=subcommands.hook_claude_code)
    _data_dir(claude)
    claude.add_argument("--wait", action="store_true",
                        help="ingest before exiting (default: check the payload, then ingest in a background process)")
    hook.set_defaults(agent=True)
    return parser


_DATA = "$XDG_DATA_HOME/codemem, else ~/.local/share/codemem"


def _data_dir(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data-dir", default=None, help=f"LanceDB data directory (default {_DATA}; or CODEMEM_DATA_DIR)")


def _allow_open(p: argparse.ArgumentParser) -> None:
    p.add_argument("--allow-open", action="store_true", default=None,
                   help="serve an address other than loopback without CODEMEM_API_KEY: anyone who reaches the "
                        "port reads and writes every memory (or CODEMEM_ALLOW_OPEN=true)")


def _user_id(p: argparse.ArgumentParser, default: str = "the git repository of the current directory") -> None:
    p.add_argument("--user-id", default=None, help=f"whose memory (default: {default})")


# Commands that store nothing: once their answer is out, the process may end without the
# interpreter's teardown (see `run`).
READ_ONLY = frozenset({"search", "memories"})


def run() -> None:
    """The `codemem` command (console script and `python -m cli`): `main`, after which a
    read-only command's process ends at once. Tearing down the modules LanceDB imported
    (thousands of pydantic classes and their validators) costs more CPU at every exit than
    the search itself; a search has written nothing that needs it, and
    its output is flushed first."""
    args = build_parser().parse_args()
    try:
        code = dispatch(args)
    except BrokenPipeError:  # `codemem search ... | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no error at exit either
        code = 1
    if args.command in READ_ONLY:
        logging.shutdown()
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except OSError:  # a closed pipe (`| head`): nothing more can be said
            code = code or 1
        os._exit(code)
    sys.exit(code)


def main(argv: list[str] | None = None) -> int:
    return dispatch(build_parser().parse_args(argv))


# The settings paths the flags set, by flag.
FLAGS = {"--data-dir": "storage.data_dir", "--host": "server.host", "--port": "server.port", "--workers": "server.workers",
         "--allow-open": "server.allow_open", "--tls-cert": "server.tls_cert", "--tls-key": "server.tls_key"}
# The exit status of a command given something it cannot use (argparse's own).
USAGE_ERROR = 2


def dispatch(args: argparse.Namespace) -> int:
    """Run the subcommand `args` names, with its settings. A setting that cannot be used (a
    variable or a flag; read here or by the subcommand, as `serve` reads its MemoryArena
    variables) is one line on stderr naming it, its value and what it may hold, and exit 2."""
    defaults: dict[str, object] = agent_defaults() if getattr(args, "agent", False) else {}
    if args.command == "mcp":
        defaults["server.port"] = MCP_HTTP_PORT
    try:
        settings = Settings.from_env(defaults=defaults, overrides={
            path: getattr(args, flag[2:].replace("-", "_"), None) for flag, path in FLAGS.items()})
        return int(args.handler(settings, args) or 0)
    except SettingError as exc:
        source = next((flag for flag, path in FLAGS.items() if path == exc.source), exc.source)
        print(f"codemem: {source}={exc.value}: {exc.allowed}" if source.startswith("--") else f"codemem: {exc}",
              file=sys.stderr)
        return USAGE_ERROR
    except KeyboardInterrupt:
        return 130
