"""The memory service's core: Add, Search, delete and purge, with no knowledge of HTTP.

One `Memory` owns the store, the embedder and the per-user card indexes, and hands each
job to the part that does it: writes to a `SessionWriter` (`codemem/writing/`), Searches
and browsing to a `Searcher` (`codemem/ranking/searcher.py`), both over the same store and
indexes. Its methods are blocking and thread-safe; the HTTP edge calls them from worker
threads. Constructing one starts no thread: the writer's start with the first write (or
`start`, in a server), the search pool's with the first Search.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import timedelta

import numpy as np

from codemem.config import Settings
from codemem.contract.types import AddRequest, AddResult, Hit, SearchRequest
from codemem.encoders import Embedder, make_embedder
from codemem.experience.types import Experience
from codemem.ranking.relevance import Ranker, SessionSignals
from codemem.ranking.search_config import SearchConfig
from codemem.ranking.searcher import Searcher
from codemem.ranking.types import Candidate
from codemem.ranking.user_indexes import UserIndexes
from codemem.store.figures import StoreFigures
from codemem.store.inventory import ExperienceRecord, Inventory, StoredItem, UserSummary
from codemem.store.lance import Store
from codemem.store.maintenance import Compactor
from codemem.store.schema import key_of
from codemem.store.writer import GroupWriter
from codemem.timeline import turns
from codemem.writing.reembedder import Reembedder
from codemem.writing.session_refresher import SessionRefresher
from codemem.writing.session_writer import SessionWriter

log = logging.getLogger(__name__)


class Memory:
    def __init__(self, settings: Settings, embedder: Embedder | None = None,
                 search: SearchConfig | None = None, ranker: Ranker | None = None) -> None:
        """`search`: how to search (default: the settings' `search.config()`); `ranker`: what
        orders the candidates (default: the packaged relevance model; an evaluation compares
        another on the same Search)."""
        self.settings = settings
        self.embedder = embedder or make_embedder(settings.embedding.model, settings.embedding.threads)
        caches = settings.caches
        self.store = Store(settings.storage.data_dir, self.embedder.name, self.embedder.dim,
                           (caches.index_mb, caches.metadata_mb))
        self.indexes = UserIndexes(caches.user_mb << 20)
        self.writing = SessionWriter(settings, self.embedder, self.store, self.indexes)
        self.searcher = Searcher(settings, self.embedder, self.store, self.indexes,
                                 search or settings.search.config(), ranker)
        self.figures = StoreFigures(lambda: self.store.stats())

    def warm_up(self) -> None:
        """Load the model (and its query encoder) now rather than on the first request."""
        try:
            self.embedder.warm()
        except Exception:  # noqa: BLE001 - a request that needs the model reports it again
            log.exception("embedding model failed to load")

    def start(self) -> None:
        """Start the background writing threads now rather than with the first write (a server)."""
        self.writing.start()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.writing.close()
        self.searcher.close()

    # -- the parts, by the names callers know them ----------------------------------------

    @property
    def search_config(self) -> SearchConfig:
        """How a Search searches when it does not say."""
        return self.searcher.search_config

    @search_config.setter
    def search_config(self, config: SearchConfig) -> None:
        self.searcher.search_config = config

    @property
    def inventory(self) -> Inventory:
        return self.searcher.inventory

    @property
    def writer(self) -> GroupWriter:
        """The group-commit writer (started by its first use)."""
        return self.writing.writer

    @property
    def refresher(self) -> SessionRefresher:
        """The deferred-rebuild thread (started by its first use)."""
        return self.writing.refresher

    @property
    def compactor(self) -> Compactor:
        return self.writing.compactor

    @property
    def reembedder(self) -> Reembedder:
        """The thread that embeds again the vectors another encoder wrote (started with the writer)."""
        return self.writing.reembedder

    # -- Add ------------------------------------------------------------------------------

    def add(self, req: AddRequest, experience: Experience | None = None) -> AddResult:
        """Store one chunk durably, with its session's rebuilt experience (`SessionWriter.add`)."""
        return self.writing.add(req, experience)

    def add_sessions(self, items: list[tuple[AddRequest, Experience]], embed_max_tokens: int | None = None,
                     embedded: Mapping[str, np.ndarray] | None = None) -> list[AddResult]:
        """Store a batch of whole sessions for importers (`SessionWriter.add_sessions`)."""
        return self.writing.add_sessions(items, embed_max_tokens, embedded)

    def refresh_session(self, user_id: str, session_id: str) -> None:
        """Rebuild a session's card and steps from everything stored."""
        self.writing.refresh_session(user_id, session_id)

    # -- Search ---------------------------------------------------------------------------

    def search(self, req: SearchRequest, config: SearchConfig | None = None,
               budget_tokens: int | None = None) -> list[Hit]:
        """At most top_k items of this user's memory, best first (`Searcher.search`)."""
        return self.searcher.search(req, config, budget_tokens)

    def dialogue_reading(self, req: SearchRequest, config: SearchConfig | None = None) -> turns.Reading | None:
        """What a Search of a memory of dialogue reads before it chooses turns
        (`Searcher.dialogue_reading`): `turns.decide` answers from it under another turn
        configuration without searching again."""
        return self.searcher.dialogue_reading(req, config)

    def signals(self, user_id: str, text: str, config: SearchConfig, limit: int) -> tuple[SessionSignals, list[Candidate]]:
        """What each retriever says about this user's sessions for `text` (`Searcher.signals`)."""
        return self.searcher.signals(user_id, text, config, limit)

    def experience(self, user_id: str, ref: str) -> list[Hit]:
        """One whole experience of this user, by any id a Search returned (`Searcher.experience`)."""
        return self.searcher.experience(user_id, ref)

    # -- data handling --------------------------------------------------------------------

    def message_count(self, user_id: str, session_id: str) -> int:
        """How many messages of a session are stored (an importer of a transcript that
        grows adds only what follows them)."""
        return self.store.message_count(key_of(user_id, session_id))

    def session_ids(self, user_id: str, prefix: str) -> set[str]:
        """This user's experiences whose session_id starts with `prefix` (an importer skips
        what it stored before: a git import's sessions are "git:<sha>")."""
        return self.store.session_ids(key_of(user_id), prefix)

    def delete_user(self, user_id: str) -> int:
        """Remove every memory of one user; returns how many items were removed."""
        return self.writing.delete_user(user_id)

    def delete_experience(self, user_id: str, session_id: str) -> int:
        """Remove one experience of one user, by its whole session_id (`SessionWriter.delete_experience`)."""
        return self.writing.delete_experience(user_id, session_id)

    def purge(self, older_than: timedelta) -> int:
        """Remove every memory stored more than `older_than` ago, for all users (`SessionWriter.purge`)."""
        return self.writing.purge(older_than)

    def store_health(self) -> dict[str, int]:
        """The store's figures for a health check, as last read (`StoreFigures`): never waits
        for the store; empty before the first read and when they cannot be read just now."""
        return self.figures.latest()

    # -- browsing (for people: everything stored, unranked) -----------------------------------

    def list_users(self, sizes: bool = True) -> list[UserSummary]:
        """Every user_id with its experience and message counts (`Searcher.list_users`)."""
        return self.searcher.list_users(sizes)

    def list_experiences(self, user_id: str) -> list[StoredItem]:
        """Every experience card of one user, newest first."""
        return self.searcher.list_experiences(user_id)

    def experience_record(self, user_id: str, session_id: str, with_messages: bool = False) -> ExperienceRecord:
        """One experience whole: card, every step and (when asked) every message."""
        return self.searcher.experience_record(user_id, session_id, with_messages)

    def stats(self) -> dict[str, int]:
        return self.store.stats() | {"pending_writes": self.writing.pending, "compactions": self.compactor.runs,
                                       "compaction_failures": self.compactor.failures}
