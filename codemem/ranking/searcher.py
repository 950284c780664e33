"""The reading side of a `Memory`: Search, the signals it ranks by, and browsing.

A `Searcher` plans one Search's reads of the store (the retrievers, the card indexes it
shares with the session writer), ranks the candidate sessions with the relevance model
(`learned.py`) and builds the answer (`answer.build`); it opens one experience whole and lists what is stored for
people. It writes nothing, and starts no thread but its search pool, whose threads
start with the first Search.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from codemem.config import Settings
from codemem.contract.types import Hit, SearchRequest
from codemem.contract.validation import validate_search
from codemem.encoders import Embedder
from codemem.errors import InvalidInput, NotFound
from codemem.experience.types import CONVERSATION
from codemem.ranking import answer
from codemem.ranking.assemble import FoundExperience, group_by_session
from codemem.ranking.features import candidates
from codemem.ranking.fields import CardFields, field_matches
from codemem.ranking.locations import ticket_refs
from codemem.ranking.merged import name_matched_commits
from codemem.ranking.query import Query, parse_query
from codemem.ranking.releases import ReleaseIndex
from codemem.ranking.relevance import (
    RETRIEVERS,
    Ranker,
    SessionSignals,
    session_ranks,
    session_scores,
)
from codemem.ranking.rrf import rrf
from codemem.ranking.search_config import SearchConfig
from codemem.ranking.subjects import SubjectIndex
from codemem.ranking.time_features import TIME_FEATURES, covered_by, time_matches
from codemem.ranking.types import Candidate, Ranking
from codemem.ranking.user_indexes import UserIndexes
from codemem.store import inventory
from codemem.store import short_ids as ids
from codemem.store.lance import Store
from codemem.store.schema import DERIVED_KINDS, RESULT_COLUMNS, card_id, key_of
from codemem.timeline import questions, turns
from codemem.timeline.index import DialogueIndex
from parsers import exact_terms

T = TypeVar("T")
# top_k may be any positive integer (10**30 included); the retrievers need a bound.
MAX_CANDIDATES = 10_000
# The first experiences of an answer whose metadata names the features that carried them.
EXPLAINED = 10


def names_what_it_holds(text: str, signals: SessionSignals) -> bool:
    """Whether the query is a lookup of exact identifiers (error codes, ids, snake_case and
    dotted names, hashes: `parsers.exact`, at least one per two of its words) and the
    references index found one of them whole: the memory holds what it named, so the
    nothing-related decision (which reads scores, not which terms matched) does not answer it
    empty. A task that mentions a few identifiers among its prose is judged as any other."""
    exact = exact_terms(text)
    return bool(exact) and 2 * len(exact) >= len(text.split()) and bool(signals.ranks.get("refs"))


@dataclass(frozen=True)
class _Found:
    """A Search's candidates before its answer is built."""

    user_key: str
    version: int
    cards: Callable[[], list[dict[str, Any]]]
    signals: SessionSignals
    items: list[Candidate]
    ranking: Ranking
    dialogue: DialogueIndex | None  # the user's conversations where its best sessions are some: the answer is turns


class Searcher:
    """Every read of one `Memory` that ranks or shows what it holds. Blocking and thread-safe."""

    def __init__(self, settings: Settings, embedder: Embedder, store: Store, indexes: UserIndexes,
                 search: SearchConfig, ranker: Ranker | None = None) -> None:
        """`search`: how to search when a call does not say; `ranker`: what orders the
        candidates (default: the packaged relevance model)."""
        self.settings = settings
        self.search_config = search
        self._ranker = ranker
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
        (default: this Memory's `search_config`). The relevance model ranks the candidates
        by their calibrated P(related), which decides how much of each is shown and whether
        the answer is quiet (`answer.build`), or empty where the model reads nothing in memory
        as related (`ranking/absence.py`); each experience's metadata gives its P and the
        features that carried it. The answer stops at the config's `answer.budget_tokens`,
        or at `budget_tokens` where that is smaller (a tool's compact answer); the first
        experience's card is kept whatever its size."""
        config = config or self.search_config
        validate_search(req, self.settings.limits.max_image_bytes)
        if budget_tokens is not None and budget_tokens < 1:
            raise InvalidInput(f"the token budget must be at least 1, not {budget_tokens}")
        shape = config.answer.fitted(budget_tokens)
        text = req.text
        found = self._found(req, config)
        if found is None:
            return []
        signals, items, ranking = found.signals, found.items, found.ranking
        if found.dialogue is not None:  # people talking: answered turn by turn, dated
            reading = self._turns(req, config, found)
            return turns.decide(text, reading, req.top_k, shape.budget_tokens, answer.MAX_RESPONSE_BYTES, config.turns,
                                quiet=config.calibration.quiet_below > 0) if reading is not None else []
        scores = ranking.scores
        if ranking.nothing_related and config.calibration.empty_when_unrelated and not names_what_it_holds(text, signals):
            return []  # nothing in memory bears on the query: an empty answer says so
        user_key, version, cards = found.user_key, found.version, found.cards
        groups = group_by_session(items, scores, card_id, req.top_k, config.calibration.relevance_floor,
                                  kept=shape.named_experiences)
        why = {g.session_key: explain(signals, g.session_key, ranking) for g in groups}
        quiet_below = config.calibration.quiet_below
        related = {g.session_key for g in groups if ranking.relevance.get(g.session_key, 0.0) >= quiet_below}
        quiet = quiet_below > 0 and not related
        about_now = signals.asked is not None and signals.asked.about_now
        if about_now and config.calibration.newest_first_when_now != "off":
            block = related if config.calibration.newest_first_when_now == "related" \
                else {g.session_key for g in groups[:shape.named_experiences]}
            groups = newest_first(groups, block, self.indexes.fields.get(user_key, cards, version).cards)
        hits = answer.build(groups, self.store.by_ids, req.user_id, req.top_k, shape, why=why, related=related,
                            quiet=quiet)
        if quiet and hits and hits[0].metadata.get(CONVERSATION):
            # The model's calibration says nothing about a conversation among coding
            # experiences: an answer whose best experience is one is never quiet. Known once
            # its card is read, so only such answers are built twice.
            hits = answer.build(groups, self.store.by_ids, req.user_id, req.top_k, shape, why=why,
                                related={g.session_key for g in groups})
        if about_now:
            held = self.indexes.fields.get(user_key, cards, version).cards
            answered = {g.session_key: held[g.session_key] for g in groups if g.session_key in held}
            _mark_superseded(hits, req.user_id, covered_by(text, answered), related)
        return name_matched_commits(hits, text)

    def dialogue_reading(self, req: SearchRequest, config: SearchConfig | None = None) -> turns.Reading | None:
        """What `search` reads of a memory of dialogue before it chooses turns (`turns.Reading`),
        so that turn configurations can be weighed without searching again (`turns.decide`
        answers as `search` would); None where the answer is experiences, not turns."""
        config = config or self.search_config
        validate_search(req, self.settings.limits.max_image_bytes)
        found = self._found(req, config)
        return self._turns(req, config, found) if found is not None and found.dialogue is not None else None

    def _found(self, req: SearchRequest, config: SearchConfig) -> _Found | None:
        """The Search's candidates, ranked, and whether its answer is turns (None: no memory)."""
        user_key = key_of(req.user_id)
        if not req.text.strip() or not self.store.holds_user(user_key):
            return None  # a memory that does not exist yet: no model, no pool, no lock
        version = self.store.changes()
        cards = self._cards(user_key)
        signals, items = self._signals(user_key, req.text, config, min(max(req.top_k, config.retrieval.candidates), MAX_CANDIDATES),
                                       cards, version)
        ranking = self.ranker.rank(signals, EXPLAINED)
        # A conversation is as close to the question as its closest turn: the model, which
        # never saw a conversation, does not weigh its sessions (`timeline/turns.py`).
        dialogue = self.indexes.dialogue.get(user_key, cards, version)
        return _Found(user_key, version, cards, signals, items, ranking,
                      dialogue if turns.is_dialogue(ranking.scores, dialogue) else None)

    def _turns(self, req: SearchRequest, config: SearchConfig, found: _Found) -> turns.Reading | None:
        assert found.dialogue is not None  # only a Search answered by turns reads them
        return turns.read(req.text, found.items, session_scores(found.items), max(found.signals.cosine.values(), default=0.0),
                          found.dialogue, self.store.by_ids, self.store.vectors, req.user_id, self.embedder.name,
                          config.turns, asked=found.signals.asked)

    @property
    def ranker(self) -> Ranker:
        """The ranker given at construction, else the packaged relevance model (loaded by the
        first Search)."""
        if self._ranker is None:
            from codemem.ranking.learned import packaged  # the model is read by the first Search

            self._ranker = packaged()
        return self._ranker

    def signals(self, user_id: str, text: str, config: SearchConfig, limit: int) -> tuple[SessionSignals, list[Candidate]]:
        """What each retriever, the code-location index and (in a memory of commits) the commit
        rankings say about this user's sessions for `text`, with the ranker's candidates' card
        fields; and every item found (`rrf`: each session's evidence in order)."""
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
        fields = self._pool.submit(self.indexes.fields.get, user_key, cards, version)
        vector = self.embedder.embed([text], self.settings.embedding.query_max_tokens)[0]
        found = {"lexical": lexical.result(), "dense": self.store.nearest(vector, user_key, limit),
                 "refs": by_refs.result()}
        items = rrf(list(found.values()))  # orders each session's evidence
        locations = index.result()
        location = locations.scores(refs)
        commit_ranks = self._commit_ranks(user_key, query, subjects.result(), limit)
        if commit_ranks:
            found_keys = {str(c.fields["session_key"]) for c in items} | location.keys()
            found_keys.update(k for ranks in commit_ranks.values() for k in ranks)
            # Only a memory of commits reads the releases index (its cards are read by now).
            commit_ranks["since"] = self._since(text, self.indexes.releases.get(user_key, cards, version), found_keys)
        signals = SessionSignals.of(found, location, commit_ranks)
        keys = candidates(signals)
        signals.commits = subjects.result().commits.intersection(keys)
        signals.refs_held = locations.held(refs, keys)
        held = fields.result().cards
        signals.fields = field_matches(text, {k: held[k] for k in keys if k in held})
        if any(held[k].ms > 0 for k in keys if k in held):  # what the question asks of time matters among dated sessions
            # It is read from the query's vector: only by a question reader trained on this
            # encoder's vectors (else nothing is read as asked of time).
            reader = questions.packaged()
            signals.asked = reader.read(text, vector) if reader.embedder == self.embedder.name else questions.NOT_ASKED
            if not set(TIME_FEATURES).isdisjoint(self.ranker.features):
                # A commit's time features read "not known", as in training: a past-fix history
                # is cut around its fix, so its dates would say how it was cut (`train.ranker.train`).
                signals.time = time_matches(text, {k: held[k] for k in keys if k in held and k not in signals.commits},
                                            signals.asked)
        return signals, items

    def _commit_ranks(self, user_key: str, query: Query, subjects: SubjectIndex, limit: int) -> dict[str, dict[str, int]]:
        """Where the memory holds commit experiences, its experiences ranked by the query's
        title: BM25 of the title and the prose's first words over their items' text (every
        experience's, so that a session competes with the commits on the same terms in a
        memory holding both), and the commits by their subjects (`ranking/subjects.py`).
        Nothing, and no query run, in a memory without commits (those features read 0)."""
        if not subjects.commits or not query.title_bm25.strip():
            return {}
        by_title = self.store.fts(query.summary(), user_key, limit)
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


def newest_first(groups: list[FoundExperience], block: set[str], cards: dict[str, CardFields]) -> list[FoundExperience]:
    """The experiences of `block` with a date, newest first, then every other in the model's
    order (a question about now is answered by the newest that says what holds)."""
    dated = [g for g in groups if g.session_key in block and g.session_key in cards and cards[g.session_key].ms > 0]
    first = sorted(dated, key=lambda g: -cards[g.session_key].ms)
    return first + [g for g in groups if g not in first]


def _mark_superseded(hits: list[Hit], user_id: str, covered: dict[str, str], related: set[str]) -> None:
    """For a question about the current state: an experience whose words of the question a
    newer related one of the answer holds, all of them, is marked `superseded_by` it (its
    session and date). The order stays the model's; this only says which is newer."""
    by_key = {key_of(user_id, h.session_id): h for h in hits if h.metadata.get("kind") == "card"}
    for key, newer in covered.items():
        if key in by_key and newer in by_key and newer in related:
            later = by_key[newer]
            by_key[key].metadata["superseded_by"] = {"session_id": later.session_id, "date": later.created_at[:10]}


def explain(signals: SessionSignals, key: str, ranking: Ranking) -> dict[str, object]:
    """Why an experience was returned: its P(related), the features that carried it (for the
    first experiences) and the raw signals (ranks 1 = best)."""
    why: dict[str, object] = {
        "relevance": round(ranking.relevance.get(key, 0.0), 4),
        "signals": {
            **{f"{name}_rank": signals.ranks.get(name, {}).get(key) for name in RETRIEVERS},
            **{f"{name}_rank": ranks.get(key) for name, ranks in signals.commit_ranks.items()},
            "cosine": round(signals.cosine[key], 4) if key in signals.cosine else None,
            "bm25": round(signals.bm25[key], 3) if key in signals.bm25 else None,
            "location": round(sum(signals.location.get(key, (0.0, 0.0))), 3),
        },
    }
    if key in ranking.reasons:
        why["features"] = ranking.reasons[key]
    return why


# What the per-user card indexes (locations, subjects, releases, dialogue, fields) read of each card.
CARD_INDEX_COLUMNS = ["session_key", "session_id", "text", "refs", "metadata", "timestamp", "created_at"]


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
