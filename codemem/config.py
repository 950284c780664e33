"""All settings in one tree, read from the environment; CLI flags override them.

`Settings` nests its parts by concern (where the data lives, the server, the embedding model,
writes, what is kept in memory, background maintenance, request limits, search). Every `CODEMEM_*` variable maps onto
one leaf of the tree in `VARIABLES`, the one place names meet paths; the README's
configuration table lists them (a test keeps the two in step).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from codemem.ranking.recipes import DEFAULT_SEARCH
from codemem.ranking.search_config import ConfigTree, SearchConfig

MCP_HTTP_PORT = 8765
LOG_FORMATS = ("auto", "json", "text")


class SettingError(ValueError):
    """A setting that cannot be used: `source` names where it came from (a `CODEMEM_*`
    variable, or a settings path a command-line flag set), `value` is what it held and
    `allowed` says what it may hold. Its text is the one line a person reads."""

    def __init__(self, source: str, value: object, allowed: str) -> None:
        # A part's own check names its field ("Server.port must be ..."): the source says it.
        allowed = re.sub(r"^[\w.]+ (?=must )", "", allowed)
        self.source, self.value, self.allowed = source, value, allowed
        shown = repr(value) if isinstance(value, str) else str(value)
        super().__init__(f"{source}={shown}: {allowed}")


def default_data_dir(environ: Mapping[str, str] | None = None) -> str:
    """One data directory per person, in the XDG data directory, rather than one in whichever
    directory a command ran: each repository is its own user_id in it, and the CLI, the HTTP
    server, the MCP server and the hook (separate processes) must all find the same store."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "codemem")


def is_object_storage(uri: str) -> bool:
    """s3://, gs://, az://...: no shared file system, so no file locks beside the data."""
    return "://" in uri and not uri.startswith("file://")


def _at_least(owner: object, low: int, *names: str) -> None:
    for name in names:
        value = getattr(owner, name)
        if value < low:
            raise ValueError(f"{type(owner).__name__}.{name} must be at least {low}, not {value}")


@dataclass(frozen=True)
class Storage:
    # A local directory, or object storage: s3://bucket/prefix (gs://, az:// too), with the
    # endpoint and credentials from the usual AWS_* (GOOGLE_*, AZURE_*) variables. Default:
    # one directory per person (`default_data_dir`), which every command shares.
    data_dir: str = field(default_factory=lambda: default_data_dir())


@dataclass(frozen=True)
class Server:
    host: str = "127.0.0.1"
    # `codemem mcp --transport http` defaults to MCP_HTTP_PORT, so the two can run together.
    port: int = 8000
    # Server processes sharing the data directory (`codemem serve --workers N`).
    workers: int = 1
    api_key: str | None = field(default=None, repr=False)
    # Serving without a key on an address other than loopback: refused unless this says so
    # (`--allow-open`), since anyone who reaches the port could then read every memory.
    allow_open: bool = False
    # HTTPS served by codemem itself: a PEM certificate (chain) and its private key. Unset:
    # plain HTTP, for loopback or behind a reverse proxy that terminates TLS (deploy/).
    tls_cert: str | None = None
    tls_key: str | None = None
    # Admitted Adds (Searches) worked on at once, each kind on threads of its own, the others
    # waiting their turn holding no thread (0: anyio's shared pool). In the shared pool the
    # waiting Searches hold most threads, so few Adds share a group commit; Searches on a few
    # threads of their own leave Adds the whole pool but starve themselves. These two sizes
    # balance the kinds under mixed load on a small machine (`eval.load`, eval/README.md); a
    # machine with more cores may want more of both.
    add_threads: int = 16
    search_threads: int = 32
    log_level: str = "info"
    # "json": one object a line (ts, level, logger, msg, fields), for a log collector; "text":
    # one readable line; "auto": text when stderr is a terminal (a person watching), else json.
    log_format: str = "auto"

    def __post_init__(self) -> None:
        if self.log_format not in LOG_FORMATS:
            raise ValueError(f"Server.log_format must be one of {', '.join(LOG_FORMATS)}, not {self.log_format!r}")
        if not 0 <= self.port <= 65535:
            raise ValueError(f"Server.port must be between 0 and 65535, not {self.port}")
        _at_least(self, 1, "workers")
        _at_least(self, 0, "add_threads", "search_threads")


# The encoder the service embeds with unless told otherwise: a folder of
# `codemem/encoders/models/`, the one `make train` builds every shipped model on (`train.steps`).
SHIPPED_ENCODER = "minilm"


@dataclass(frozen=True)
class Embedding:
    # A folder of `codemem/encoders/models/` (or the path of an encoder's folder).
    model: str = SHIPPED_ENCODER
    threads: int = 1
    max_tokens: int = 256  # tokens of a stored item the model reads
    # A session's card is always embedded (its task: later tasks are compared with it). Its
    # steps and raw messages are BM25- and reference-indexed, and embedded only when these
    # are on: embedding every step would take most of an Add's time on a small CPU.
    steps: bool = False
    messages: bool = False
    # A coding card has a second vector, of its code window (the files and symbols it edited
    # and its diff, `render.code_window`) read to this many tokens; a Search takes the nearer
    # of the two. Chosen on the training data: eval/results/windows-trial.json. 0: none.
    code_window_tokens: int = 128
    # A query's opening says what it asks; embedding costs grow with its length.
    query_max_tokens: int = 64

    def __post_init__(self) -> None:
        _at_least(self, 1, "threads", "max_tokens", "query_max_tokens")
        _at_least(self, 0, "code_window_tokens")


@dataclass(frozen=True)
class Writes:
    # Concurrent Adds are joined into one LanceDB commit of at most this many rows.
    batch_rows: int = 4096
    # A session whose card is owed a rebuild (a long session between scheduled rebuilds, a
    # card without a task whose vector was kept) is rebuilt once it has had no Add for this
    # many seconds.
    refresh_quiet_s: float = 2.0

    def __post_init__(self) -> None:
        _at_least(self, 1, "batch_rows")
        _at_least(self, 0, "refresh_quiet_s")


@dataclass(frozen=True)
class Caches:
    """What a long-running process keeps in memory beyond what each request needs, each part
    bounded, so that its memory stays flat however many users and tokens it takes in
    (`eval.load.scale` measures it)."""

    # LanceDB's caches of index pages (full-text posting lists, scalar indexes) and of table
    # metadata (manifests, fragment lists). Their defaults (GBs) let them grow with every
    # commit an ingest made; least recently used entries go past these sizes.
    index_mb: int = 256
    metadata_mb: int = 64
    # What is kept of a session for its next chunks (its stored state, its messages for the
    # next rebuild) goes once the session has had no Add for `session_s` seconds; the
    # messages kept for all sessions together stay under `session_mb` MB of text.
    session_s: float = 20.0
    session_mb: int = 64
    # Each user's card indexes (code locations, subjects, releases, fields, conversations)
    # are built on a Search and kept while this many MB of card text (per kind of index)
    # covers them; the least recently searched user's are let go first.
    user_mb: int = 256

    def __post_init__(self) -> None:
        _at_least(self, 1, "index_mb", "metadata_mb", "session_mb", "user_mb")
        _at_least(self, 0, "session_s")


@dataclass(frozen=True)
class Maintenance:
    """When the background compactor compacts (`Settings.maintenance`)."""

    # Every `interval_s` (0: never), compact and fold new rows into the indexes once
    # `min_writes` commits piled up (or writes went quiet). Every commit adds a fragment that
    # each filtered query opens, so a few hundred make every Add's lookups dearer; a round is
    # cheap since it leaves large fragments and full-text index segments alone, and fewer
    # loose fragments make the Adds' merges and the Searches cheaper (`eval.load`).
    interval_s: float = 1.0
    min_writes: int = 50
    # A store holding more than this outside its compacted, indexed part is compacted whatever
    # the commit count says, at start-up too: a server restarted on a store a bulk import left
    # un-compacted answers Searches slower until then (`eval.load.restart`).
    max_small_fragments: int = 8
    max_unindexed_rows: int = 500

    def __post_init__(self) -> None:
        _at_least(self, 0, "interval_s", "min_writes", "max_small_fragments", "max_unindexed_rows")

    def exceeded(self, stats: Mapping[str, int]) -> bool:
        """Whether a store with these `Store.stats` is past the bounds."""
        return (stats["small_fragments"] > self.max_small_fragments
                or stats["unindexed_rows"] > self.max_unindexed_rows)


@dataclass(frozen=True)
class Limits:
    """What one request may carry, and how many may be in flight."""

    max_body_bytes: int = 30 * 1024 * 1024
    max_image_bytes: int = 10 * 1024 * 1024
    # Requests in flight past which the service answers 503 with Retry-After (0 = no bound);
    # above what an evaluation platform sends at once.
    max_inflight_adds: int = 256
    max_inflight_searches: int = 1024
    # Add bodies read, parsed and stored at once (0 = no bound); the Adds beyond it wait their
    # turn. Each byte in flight costs a few in memory: docs/deploy.md gives the memory a
    # setting needs, measured (eval.load.proxy). The default fits a 4 GB machine.
    max_add_bytes_inflight: int = 96 * 1024 * 1024

    def __post_init__(self) -> None:
        _at_least(self, 1, "max_body_bytes", "max_image_bytes")
        _at_least(self, 0, "max_inflight_adds", "max_inflight_searches", "max_add_bytes_inflight")


@dataclass(frozen=True)
class SearchSettings:
    """The few values of the search recipe (`codemem/ranking/recipes.py`, where they are
    explained) a deployment may set; unset (None) ones are the recipe's own (the relevance
    floor and the quiet threshold read the relevance model's P(related))."""

    candidates: int | None = None
    relevance_floor: float | None = None
    quiet_below: float | None = None
    # False: where the model reads nothing in memory as related, a quiet answer (the nearest
    # experiences) instead of an empty one.
    empty_when_unrelated: bool | None = None
    # A Search answer is read by a model with a limited window: it stops at this many tokens
    # (~4 characters each; 0 = top_k alone bounds it), and no single item is longer than
    # max_item_chars (its head and tail are kept).
    token_budget: int | None = None
    max_item_chars: int | None = None

    def __post_init__(self) -> None:
        self.config()  # the recipe's parts check the values set here

    def config(self) -> SearchConfig:
        """The recipe with the values set here."""
        paths = {"retrieval.candidates": self.candidates, "calibration.relevance_floor": self.relevance_floor,
                 "calibration.quiet_below": self.quiet_below, "calibration.empty_when_unrelated": self.empty_when_unrelated,
                 "answer.budget_tokens": self.token_budget,
                 "answer.max_item_chars": self.max_item_chars}
        return DEFAULT_SEARCH.replace({k: v for k, v in paths.items() if v is not None})


@dataclass(frozen=True)
class Settings(ConfigTree):
    """Every setting of a process, by part; `from_env` reads them, `replace` varies one by path."""

    storage: Storage = field(default_factory=Storage)
    server: Server = field(default_factory=Server)
    embedding: Embedding = field(default_factory=Embedding)
    writes: Writes = field(default_factory=Writes)
    caches: Caches = field(default_factory=Caches)
    maintenance: Maintenance = field(default_factory=Maintenance)
    limits: Limits = field(default_factory=Limits)
    search: SearchSettings = field(default_factory=SearchSettings)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, defaults: Mapping[str, object] | None = None,
                 overrides: Mapping[str, object] | None = None) -> Settings:
        """The defaults (`defaults`, by path, over the tree's own), then the `CODEMEM_*`
        variables set in `environ` (default: the process's), then `overrides` (by path) that are
        not None. A variable that cannot be read or is out of range is a `SettingError` naming
        it, its value and what it may hold; an override out of range names its path."""
        settings = cls().replace({"storage.data_dir": default_data_dir(environ), **(defaults or {})})
        for name, (path, value) in read_variables(VARIABLES, environ).items():
            try:
                settings = settings.replace({path: value})
            except ValueError as exc:
                raise SettingError(name, value, str(exc)) from exc
        for path, value in (overrides or {}).items():
            if value is None:
                continue
            try:
                settings = settings.replace({path: value})
            except ValueError as exc:
                raise SettingError(path, value, str(exc)) from exc
        return settings

    def to_env(self) -> dict[str, str]:
        """These settings as `CODEMEM_*` variables, for worker processes to read back."""
        return {name: show(value) for name, var in VARIABLES.items()
                if (value := self.value_at(var.path)) is not None}


def agent_defaults() -> dict[str, object]:
    """Defaults of the commands that run inside a coding agent (`mcp`, `hook`): a Search
    answer (~4 characters a token) stays under the size past which Claude Code moves a tool's
    output out of the conversation into a file. A `CODEMEM_*` variable or a flag still
    overrides it."""
    return {"search.token_budget": 10_000}


# -- variables ------------------------------------------------------------------------------

Parser = Callable[[str], object]


def _flag(raw: str) -> bool:
    if raw.lower() not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
        raise ValueError(raw)
    return raw.lower() in ("1", "true", "yes", "on")


# What each parser reads, for the error a value it cannot read gets.
PARSERS: dict[Parser, str] = {str: "text", int: "a whole number (int)", float: "a number (float)",
                              _flag: "a bool: true or false (also 1/0, yes/no, on/off)"}


@dataclass(frozen=True)
class Variable:
    """Where an environment variable lands in a settings tree, and how its text is read."""

    path: str
    parse: Parser = str


def show(value: object) -> str:
    """A setting's value as a variable holds it (booleans in lower case)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def read_variables(variables: Mapping[str, Variable], environ: Mapping[str, str] | None = None,
                   ) -> dict[str, tuple[str, object]]:
    """Each variable of `variables` set (not empty) in `environ` (default: the process's), as
    its path and parsed value; a value its parser cannot read is a `SettingError` naming it."""
    env = os.environ if environ is None else environ
    found: dict[str, tuple[str, object]] = {}
    for name, var in variables.items():
        raw = env.get(name)
        if not raw:
            continue
        try:
            found[name] = (var.path, var.parse(raw))
        except ValueError as exc:
            raise SettingError(name, raw, f"must be {PARSERS.get(var.parse, 'another value')}") from exc
    return found


VARIABLES: dict[str, Variable] = {
    "CODEMEM_DATA_DIR": Variable("storage.data_dir"),
    "CODEMEM_HOST": Variable("server.host"),
    "CODEMEM_PORT": Variable("server.port", int),
    "CODEMEM_WORKERS": Variable("server.workers", int),
    "CODEMEM_API_KEY": Variable("server.api_key"),
    "CODEMEM_ALLOW_OPEN": Variable("server.allow_open", _flag),
    "CODEMEM_TLS_CERT": Variable("server.tls_cert"),
    "CODEMEM_TLS_KEY": Variable("server.tls_key"),
    "CODEMEM_ADD_THREADS": Variable("server.add_threads", int),
    "CODEMEM_SEARCH_THREADS": Variable("server.search_threads", int),
    "CODEMEM_LOG_LEVEL": Variable("server.log_level"),
    "CODEMEM_LOG_FORMAT": Variable("server.log_format"),
    "CODEMEM_EMBEDDER": Variable("embedding.model"),
    "CODEMEM_EMBED_THREADS": Variable("embedding.threads", int),
    "CODEMEM_EMBED_MAX_TOKENS": Variable("embedding.max_tokens", int),
    "CODEMEM_EMBED_STEPS": Variable("embedding.steps", _flag),
    "CODEMEM_EMBED_MESSAGES": Variable("embedding.messages", _flag),
    "CODEMEM_EMBED_CODE_WINDOW_TOKENS": Variable("embedding.code_window_tokens", int),
    "CODEMEM_QUERY_MAX_TOKENS": Variable("embedding.query_max_tokens", int),
    "CODEMEM_WRITE_BATCH_ROWS": Variable("writes.batch_rows", int),
    "CODEMEM_REFRESH_QUIET_S": Variable("writes.refresh_quiet_s", float),
    "CODEMEM_INDEX_CACHE_MB": Variable("caches.index_mb", int),
    "CODEMEM_METADATA_CACHE_MB": Variable("caches.metadata_mb", int),
    "CODEMEM_SESSION_CACHE_S": Variable("caches.session_s", float),
    "CODEMEM_SESSION_CACHE_MB": Variable("caches.session_mb", int),
    "CODEMEM_USER_CACHE_MB": Variable("caches.user_mb", int),
    "CODEMEM_COMPACT_INTERVAL_S": Variable("maintenance.interval_s", float),
    "CODEMEM_COMPACT_MIN_WRITES": Variable("maintenance.min_writes", int),
    "CODEMEM_COMPACT_MAX_SMALL_FRAGMENTS": Variable("maintenance.max_small_fragments", int),
    "CODEMEM_COMPACT_MAX_UNINDEXED_ROWS": Variable("maintenance.max_unindexed_rows", int),
    "CODEMEM_MAX_BODY_BYTES": Variable("limits.max_body_bytes", int),
    "CODEMEM_MAX_IMAGE_BYTES": Variable("limits.max_image_bytes", int),
    "CODEMEM_MAX_INFLIGHT_ADDS": Variable("limits.max_inflight_adds", int),
    "CODEMEM_MAX_INFLIGHT_SEARCHES": Variable("limits.max_inflight_searches", int),
    "CODEMEM_MAX_ADD_BYTES_INFLIGHT": Variable("limits.max_add_bytes_inflight", int),
    "CODEMEM_CANDIDATES": Variable("search.candidates", int),
    "CODEMEM_RELEVANCE_FLOOR": Variable("search.relevance_floor", float),
    "CODEMEM_QUIET_BELOW": Variable("search.quiet_below", float),
    "CODEMEM_EMPTY_WHEN_UNRELATED": Variable("search.empty_when_unrelated", _flag),
    "CODEMEM_SEARCH_TOKEN_BUDGET": Variable("search.token_budget", int),
    "CODEMEM_MAX_ITEM_CHARS": Variable("search.max_item_chars", int),
}


def env_names() -> list[str]:
    """Every variable that sets a `Settings` value."""
    return list(VARIABLES)
