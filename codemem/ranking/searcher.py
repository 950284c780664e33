"""The reading side of a `Memory`: Search, the signals it ranks by, and browsing.

A `Searcher` plans one Search's reads of the store (the retrievers, the card indexes it
shares with the session writer), ranks the sessions (`strategy.rank_sessions`) and builds
the answer (`answer.build`); it opens one experience whole and lists what is stored for
people. It writes nothing, and starts no thread but its search pool, whose threads
start with the first Search.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from codemem.config import Settings
from codemem.contract.types import Hit, SearchRequest
from codemem.contract.validation import validate_search
from codemem.embedding import Embedder
from codemem.errors import InvalidInput, NotFound
from codemem.experience.types import CONVERSATION
from codemem.ranking import answer
from codemem.ranking.assemble import group_by_session
from codemem.ranking.evidence import ITEMS_READ, nothing_related
from codemem.ranking.fields import FieldIndex, field_matches
from codemem.ranking.locations import ticket_refs
from codemem.ranking.merged import name_matched_commits
from codemem.ranking.query import Query, parse_query
from codemem.ranking.releases import ReleaseIndex
from codemem.ranking.relevance import (
    SessionSignals,
    explain,
    learned_applies,
    runner_up,
    session_ranks,
)
from codemem.ranking.rrf import rrf
from codemem.ranking.search_config import SearchConfig
from codemem.ranking.strategy import rank_sessions
from codemem.ranking.subjects import SubjectIndex
from codemem.ranking.types import Candidate
from codemem.ranking.user_indexes import UserIndexes
from codemem.store import inventory
from codemem.store import short_ids as ids
from codemem.store.lance import Store
from codemem.store.schema import DERIVED_KINDS, RESULT_COLUMNS, card_id, key_of
from codemem.timeline import turns

T = TypeVar("T")
# top_k may be any positive integer (10**30 included); the retrievers need a bound.
MAX_CANDIDATES = 10_000
# The first experiences of an answer whose metadata names the features that carried them.
EXPLAINED = 10


class Searcher:
    """Every read of one `Memory` that ranks or shows what it holds. Blocking and thread-safe."""

    def __init__(self, settings: Settings, embedder: Embedder, store: Store, indexes: UserIndexes,
                 search: SearchConfig) -> None:
        """`search`: how to search when a call does not say."""
        self.settings = settings
        self.search_config = search
        self.embedder = embedder
        self.store = store
        self.indexes = indexes
        self.inventory = inventory.Inventory(store)
        self._pool = ThreadPoolExecutor(8, thread_name_prefix="codemem-search")

    def close(self) -> None:
        self._pool.shutdown()

    # -- Search ---------------------------------------------------------------------------

    def search(self, req: SearchRequest, config: SearchConfig | None = None,
               budget_tokens: int | None = None) -> list[Hit]:
        """At most top_k items of this user's memory, best first, searched as `config` says
        (default: this Memory's `search_config`). Each experience's metadata says why it was
        returned (`relevance.explain`); when none is relevant enough the answer is quiet:
        short cards and little evidence (`answer.build`). The answer stops at the config's
        `answer.budget_tokens`, or at `budget_tokens` where that is smaller (a tool's compact
        answer); the first experience's card is kept whatever its size."""
        config = config or self.search_config
        validate_search(req, self.settings.limits.max_image_bytes)
        if budget_tokens is not None and budget_tokens < 1:
            raise InvalidInput(f"the token budget must be at least 1, not {budget_tokens}")
        shape = config.answer.fitted(budget_tokens)
        text = req.text
        if not text.strip() or not self.store.holds_user(key_of(req.user_id)):
            return []  # a memory that does not exist yet: no model, no pool, no lock
        user_key, version = key_of(req.user_id), self.store.changes()
        cards = self._cards(user_key)
        signals, items = self._signals(user_key, text, config, min(max(req.top_k, config.retrieval.candidates), MAX_CANDIDATES),
                                       cards, version)
        ranking = rank_sessions(signals, config, EXPLAINED)
        scores = ranking.scores
        dialogue = self.indexes.dialogue.get(user_key, cards, version)
        if turns.is_dialogue(scores, dialogue):  # people talking: answered turn by turn, dated
            return turns.answer(text, items, scores, max(signals.cosine.values(), default=0.0), dialogue,
                                self.store.by_ids, req.user_id, req.top_k, shape.budget_tokens, answer.MAX_RESPONSE_BYTES,
                                config.turns, quiet=config.calibration.quiet_below > 0)
        # Like quietness, judged for experiences of work, not for people talking (above).
        if config.calibration.empty_when_unrelated and nothing_related(
                signals, text, lambda: (str(c.fields["text"]) for c in self.store.by_ids([c.id for c in items[:ITEMS_READ]])),
                lambda: self._fields(user_key, version)):
            return []  # nothing closely related: no code, no close text, no item that holds most of its words
        groups = group_by_session(items, scores, card_id, req.top_k, config.fusion.relevance_floor)
        others = runner_up(scores)
        why = {g.session_key: explain(signals, g.session_key, g.score, others[g.session_key], config) for g in groups}
        for key, carried in ranking.reasons.items():
            if key in why:
                why[key]["features"] = carried
        quiet_below = config.calibration.quiet_below
        quiet = quiet_below > 0 and all(why[g.session_key]["relevance"] < quiet_below  # type: ignore[operator]
                                               for g in groups)
        hits = answer.build(groups, self.store.by_ids, req.user_id, req.top_k, shape, why=why, quiet=quiet)
        if quiet and hits and hits[0].metadata.get(CONVERSATION):
            # The calibration was fitted on coding experiences and says nothing about a
            # conversation: an answer whose best experience is one is never quiet. Known
            # once its card is read, so only such answers are built twice.
            hits = answer.build(groups, self.store.by_ids, req.user_id, req.top_k, shape, why=why)
        return name_matched_commits(hits, text)

    def signals(self, user_id: str, text: str, config: SearchConfig, limit: int) -> tuple[SessionSignals, list[Candidate]]:
        """What each retriever and the code-location index say about this user's sessions
        for `text`, and every item found, fused (`rrf`) to order each session's evidence."""
        user_key = key_of(user_id)
        return self._signals(user_key, text, config, limit, self._cards(user_key), self.store.changes())

    def _cards(self, user_key: str) -> Callable[[], list[dict[str, Any]]]:
        """The user's card rows, read at most once whichever card indexes need them."""
        return _once(lambda: self.store.user_rows(user_key, "card", CARD_INDEX_COLUMNS))

    def _signals(self, user_key: str, text: str, config: SearchConfig, limit: int,
                 cards: Callable[[], list[dict[str, Any]]], version: int) -> tuple[SessionSignals, list[Candidate]]:
        query = parse_query(text)
        refs = list(dict.fromkeys([*query.refs, *ticket_refs(text)]))
        # The lexical retrievers run in Rust (no GIL) while this thread embeds the query.
        lexical = self._pool.submit(self.store.fts, query.bm25, user_key, limit)
        by_refs = self._pool.submit(self.store.fts, " ".join(refs), user_key, limit, "refs")
        # The card indexes are read from the user's cards, once when several need a read.
        index = self._pool.submit(self.indexes.locations.get, user_key, cards, version)
        subjects = self._pool.submit(self.indexes.subjects.get, user_key, cards, version)
        vector = self.embedder.embed([text], self.settings.embedding.query_max_tokens)[0]
        found = {"lexical": lexical.result(), "dense": self.store.nearest(vector, user_key, limit),
                 "refs": by_refs.result()}
        items = rrf(list(found.values()), config.fusion.item_rrf_k)  # orders each session's evidence
        location = index.result().scores(refs)
        commit_ranks = self._commit_ranks(user_key, query, subjects.result(), config, limit)
        if commit_ranks:
            candidates = {str(c.fields["session_key"]) for c in items} | location.keys()
            candidates.update(k for ranks in commit_ranks.values() for k in ranks)
            # Only a memory of commits reads the releases index (its cards are read by now).
            commit_ranks["since"] = self._since(text, self.indexes.releases.get(user_key, cards, version), candidates)
        signals = SessionSignals.of(found, location, commit_ranks)
        if learned_applies(signals, config):
            self._match_fields(text, signals, config, self._fields(user_key, version))
        return signals, items

    def _fields(self, user_key: str, version: int) -> FieldIndex:
        """The words of each field of the user's cards (`ranking/fields.py`), read once per user."""
        return self.indexes.fields.get(user_key, lambda: self.store.user_rows(user_key, "card", ["session_key", "text", "metadata"]),
                                       version)

    @staticmethod
    def _match_fields(text: str, signals: SessionSignals, config: SearchConfig, index: FieldIndex) -> None:
        """The learned ranker's candidates' field-wise matches with `text`; or, where every
        candidate is a conversation, that they are."""
        from codemem.ranking.learned import packaged

        cards = {k: index.cards[k] for k in packaged().candidates(signals, config) if k in index.cards}
        if cards and all(card.conversation for card in cards.values()):
            signals.conversations = True
        else:
            signals.fields = field_matches(text, cards)

    def _commit_ranks(self, user_key: str, query: Query, subjects: SubjectIndex, config: SearchConfig,
                      limit: int) -> dict[str, dict[str, int]]:
        """Where the memory holds commit experiences, its experiences ranked by the query's
        title: BM25 of the title and the prose's first words over their items' text (every
        experience's, so that a session competes with the commits on the same terms in a
        memory holding both), and the commits by their subjects (`ranking/subjects.py`).
        Nothing, and no query run, in a memory without commits: there the weights were
        never chosen."""
        if not subjects.commits or not query.title_bm25.strip():
            return {}
        by_title = self.store.fts(query.summary(config.retrieval.title_prose_words), user_key, limit)
        return {"title": session_ranks(by_title), "subject": subjects.ranks(query.title, limit)}

    @staticmethod
    def _since(text: str, releases: ReleaseIndex, candidates: set[str]) -> dict[str, int]:
        """The candidate experiences released since the version the report names, all
        first (`ranking/releases.py`); none when it names none."""
        version = releases.reported(text)
        return {} if version is None else dict.fromkeys(releases.since(version, candidates), 1)

    def experience(self, user_id: str, ref: str) -> list[Hit]:
        """One whole experience of this user: its card, then its evidence in session order
        (its step records, or its messages when it has none), within the answer budget.

        `ref` is any id a Search returned (card, step or message) or a session_id, so a
        reader can open the experience behind any item it was shown; or a unique prefix of
        one, or of a commit's SHA, as people are shown them (`codemem.store.short_ids`)."""
        if not user_id or not ref:
            raise InvalidInput("user_id and id must be non-empty strings")
        named = [c.fields for c in self.store.by_ids([ref]) if c.fields["user_id"] == user_id]
        session_key = str(named[0]["session_key"]) if named else key_of(user_id, ref)
        user_key = key_of(user_id)
        derived = self.store.session_rows(session_key, DERIVED_KINDS, user_key=user_key)
        card = next((r for r in derived if r["kind"] == "card"), None)
        if card is None:  # no whole id: a shortened one
            session_key = key_of(user_id, ids.session_of(self.store, user_id, ref))
            derived = self.store.session_rows(session_key, DERIVED_KINDS, user_key=user_key)
            card = next((r for r in derived if r["kind"] == "card"), None)
        if card is None:  # deleted meanwhile
            raise NotFound(f"no experience {ref!r} in the memory of {user_id!r}")
        evidence = sorted((r for r in derived if r["kind"] == "step"), key=lambda r: int(r["position"]))
        if not evidence:
            evidence = self.store.session_rows(session_key, ["message"], user_key=user_key,
                                               columns=[*RESULT_COLUMNS, "request_key"])
            evidence.sort(key=lambda r: (r["created_at"], r["request_key"], r["position"]))
        return answer.whole(card, evidence, self.search_config.answer.fitted())

    # -- browsing (for people: everything stored, unranked) -----------------------------------

    def list_users(self, sizes: bool = True) -> list[inventory.UserSummary]:
        """Every user_id with its experience and message counts, last write and (unless
        `sizes` is False: it reads every text) storage, most recently written first."""
        return self.inventory.users(sizes)

    def list_experiences(self, user_id: str) -> list[inventory.StoredItem]:
        """Every experience card of one user, newest first."""
        if not user_id:
            raise InvalidInput("user_id must be a non-empty string")
        return inventory.cards_of(self.store, user_id)

    def experience_record(self, user_id: str, session_id: str, with_messages: bool = False) -> inventory.ExperienceRecord:
        """One experience whole: card, every step and (when asked) every message.
        `session_id` may be a unique prefix of one, as `experience` takes it."""
        if not user_id or not session_id:
            raise InvalidInput("user_id and session_id must be non-empty strings")
        record = inventory.experience_record(self.store, user_id, session_id, with_messages)
        if record is None:  # no whole id: a shortened one
            whole = ids.session_of(self.store, user_id, session_id)
            record = inventory.experience_record(self.store, user_id, whole, with_messages)
        if record is None:
            raise NotFound(f"no experience {session_id!r} in the memory of {user_id!r}")
        return record


# What the per-user card indexes (locations, subjects, releases, dialogue) read of each card.
CARD_INDEX_COLUMNS = ["session_key", "session_id", "refs", "metadata", "timestamp"]


def _once(read: Callable[[], T]) -> Callable[[], T]:
    """``read``, called at most once however many threads ask for its result."""
    lock = threading.Lock()
    held: list[T] = []

    def get() -> T:
        with lock:
            if not held:
                held.append(read())
            return held[0]

    return get
