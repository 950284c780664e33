"""All settings in one place, read from the environment; CLI flags override them.

Every setting has an environment variable `CODEMEM_<NAME>`; the README's configuration
table lists them (a test keeps the two in step).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields

from codemem.ranking.recipes import DEFAULT_SEARCH, RECIPES, SearchConfig

ENV_PREFIX = "CODEMEM_"


@dataclass(frozen=True)
class Settings:
    # A local directory, or object storage: s3://bucket/prefix (gs://, az:// too), with the
    # endpoint and credentials from the usual AWS_* (GOOGLE_*, AZURE_*) variables. Default:
    # one directory per person (`default_data_dir`), which every command shares.
    data_dir: str = field(default_factory=lambda: default_data_dir())
    host: str = "127.0.0.1"
    # `codemem mcp --transport http` defaults to MCP_HTTP_PORT, so the two can run together.
    port: int = 8000
    # Server processes sharing the data directory (`codemem serve --workers N`).
    workers: int = 1
    api_key: str | None = field(default=None, repr=False)
    # Embedding: the packaged offline model by default.
    embedder: str = "minilm"
    embed_threads: int = 1
    embed_max_tokens: int = 256
    # A session's card is always embedded (its task: later tasks are compared with it). Its
    # steps and raw messages are BM25- and reference-indexed, and embedded only when these
    # are on: embedding every step would take most of an Add's time on a small CPU
    # (eval/README.md, "One Add's reads").
    embed_steps: bool = False
    embed_messages: bool = False
    # A query's opening says what it asks; embedding costs grow with its length.
    query_max_tokens: int = 64
    # One text at a time (a query, a single card) runs through ONNX Runtime: the same vector
    # (checked at start-up), with less per-operator overhead than torch (`onnx_encoder.py`).
    onnx_queries: bool = True
    # Writes: concurrent Adds are joined into one LanceDB commit of at most this many rows.
    write_batch_rows: int = 4096
    # A session whose card is owed a rebuild (a long session between scheduled rebuilds, a
    # card without a task whose vector was kept) is rebuilt once it has had no Add for this
    # many seconds.
    refresh_quiet_s: float = 2.0
    # Background maintenance: every compact_interval_s, compact and fold new rows into the
    # indexes once compact_min_writes commits piled up (or writes went quiet). Every commit
    # adds a fragment that each filtered query opens, so a few hundred make every Add's
    # lookups dearer. Every second: a round is cheap since it leaves large fragments and
    # full-text index segments alone, and fewer loose fragments make the Adds' merges and
    # the Searches cheaper (`eval.load`; eval/README.md, "Compaction at 20k rows").
    compact_interval_s: float = 1.0
    compact_min_writes: int = 50
    # A store past either bound is compacted whatever the commit count says, at start-up
    # too: a server restarted on a store a bulk import left un-compacted answers Searches
    # slower until then (`eval.restart`).
    compact_max_small_fragments: int = 8
    compact_max_unindexed_rows: int = 500
    # Requests in flight past which the service answers 503 with Retry-After (0 = no bound);
    # above what an evaluation platform sends at once (64 Adds, 256 Searches).
    max_inflight_adds: int = 256
    max_inflight_searches: int = 1024
    # Admitted Adds (Searches) worked on at once, each kind on threads of its own, the
    # others waiting their turn holding no thread (0: anyio's shared pool of 40). In the
    # shared pool the waiting Searches hold most threads, so few Adds share a group commit;
    # Searches on a few threads of their own leave Adds the whole pool but starve
    # themselves. These two sizes balance the kinds under mixed load on a 2-core machine
    # (`eval.load`; eval/README.md, "Worker threads per kind"); a machine with more cores
    # may want more of both.
    add_threads: int = 16
    search_threads: int = 32
    # Search: the ranking ("fused" or "learned", `ranking/strategy.py`) picks its recipe
    # (codemem/ranking/recipes.py, where the values are explained), and a deployment may set
    # three of its knobs; the relevance floor and the quiet threshold are the recipe's own
    # unless set (they read that ranking's scores).
    ranking: str = DEFAULT_SEARCH.ranking
    candidates: int = DEFAULT_SEARCH.candidates
    relevance_floor: float | None = None
    quiet_below: float | None = None
    # A Search answer is read by a model with a limited window: it stops at this many
    # tokens (~4 characters each; 0 = top_k alone bounds it), and no single item is longer
    # than max_item_chars (its head and tail are kept).
    search_token_budget: int = 32_000
    max_item_chars: int = 6_000
    max_body_bytes: int = 30 * 1024 * 1024
    max_image_bytes: int = 10 * 1024 * 1024
    log_level: str = "info"
    # "json": one object a line (ts, level, logger, msg, fields); "text" for a terminal.
    log_format: str = "json"

    def __post_init__(self) -> None:
        if self.log_format not in ("json", "text"):
            raise ValueError(f"{ENV_PREFIX}LOG_FORMAT={self.log_format!r} must be json or text")
        self.search_config()  # SearchConfig checks its own ranges
        if self.workers < 1:
            raise ValueError(f"workers must be at least 1, not {self.workers}")

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, defaults: Mapping[str, object] | None = None,
        **overrides: object,
    ) -> Settings:
        """Defaults (`defaults` over the class's), then `CODEMEM_*` variables, then explicit
        overrides that are not None."""
        values: dict[str, object] = {"data_dir": default_data_dir(environ), **(defaults or {})}
        values.update(read_env(cls, ENV_PREFIX, environ))
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)  # type: ignore[arg-type]

    def replace(self, **changes: object) -> Settings:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    def search_config(self) -> SearchConfig:
        """The ranking's recipe with this deployment's candidate depth, and its relevance floor
        and quiet threshold where they are set."""
        if self.ranking not in RECIPES:
            raise ValueError(f"{ENV_PREFIX}RANKING={self.ranking!r} must be one of {', '.join(RECIPES)}")
        set_here = {"relevance_floor": self.relevance_floor, "quiet_below": self.quiet_below}
        return RECIPES[self.ranking].replace(candidates=self.candidates,
                                             **{k: v for k, v in set_here.items() if v is not None})

    def to_env(self) -> dict[str, str]:
        """These settings as `CODEMEM_*` variables, for worker processes to read back."""
        return {
            ENV_PREFIX + f.name.upper(): str(value).lower() if isinstance(value, bool) else str(value)
            for f in fields(self)
            if (value := getattr(self, f.name)) is not None
        }


def is_object_storage(uri: str) -> bool:
    """s3://, gs://, az://...: no shared file system, so no file locks beside the data."""
    return "://" in uri and not uri.startswith("file://")


MCP_HTTP_PORT = 8765


def default_data_dir(environ: Mapping[str, str] | None = None) -> str:
    """One data directory per person, in the XDG data directory, rather than one in whichever
    directory a command ran: each repository is its own user_id in it, and the CLI, the HTTP
    server, the MCP server and the hook (separate processes) must all find the same store."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "codemem")


def agent_defaults() -> dict[str, object]:
    """Defaults of the commands that run inside a coding agent (`mcp`, `hook`): a Search
    answer (~4 characters a token) stays under the 50,000 characters past which Claude Code
    moves a tool's output out of the conversation into a file. A `CODEMEM_*` variable or a
    flag still overrides it."""
    return {"search_token_budget": 10_000}


def env_names(cls: type = Settings, prefix: str = ENV_PREFIX) -> list[str]:
    """The variables that set a settings dataclass: `prefix` + each field's name in capitals."""
    return [prefix + f.name.upper() for f in fields(cls)]


def read_env(cls: type, prefix: str, environ: Mapping[str, str] | None = None) -> dict[str, object]:
    """The fields of settings dataclass `cls` that `prefix`-ed variables set (unset or empty
    ones are left out), coerced to the field's type."""
    env = os.environ if environ is None else environ
    values: dict[str, object] = {}
    for f in fields(cls):
        raw = env.get(prefix + f.name.upper())
        if raw:
            values[f.name] = _coerce(f, raw, prefix)
    return values


def _coerce(f: dataclasses.Field[object], raw: str, prefix: str) -> object:
    kind = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
    try:
        if kind.startswith("bool"):
            if raw.lower() not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
                raise ValueError
            return raw.lower() in ("1", "true", "yes", "on")
        if kind.startswith("int"):
            return int(raw)
        if kind.startswith("float"):
            return float(raw)
    except ValueError as exc:
        raise ValueError(f"{prefix}{f.name.upper()}={raw!r} is not a valid {kind}") from exc
    return raw
