"""The memory service's core: Add, Search, delete and purge, with no knowledge of HTTP.

One `Memory` owns the store, the group-commit writer and the compactor. Its methods are
blocking and thread-safe; the HTTP edge calls them from worker threads.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import TypeVar

import msgspec
import numpy as np

from codemem import sessions
from codemem.config import Settings
from codemem.contract.types import AddRequest, AddResult, Hit, Message, SearchRequest
from codemem.contract.validation import validate_add, validate_search
from codemem.embedding import Embedder, make_embedder
from codemem.errors import InvalidInput, NotFound
from codemem.experience.types import CONVERSATION, Experience
from codemem.ranking import answer
from codemem.ranking.assemble import group_by_session
from codemem.ranking.card_indexes import CardIndexes
from codemem.ranking.fields import FieldIndex, field_matches
from codemem.ranking.locations import LocationIndex, ticket_refs
from codemem.ranking.merged import name_matched_commits
from codemem.ranking.query import Query, parse_query
from codemem.ranking.recipes import SearchConfig
from codemem.ranking.releases import ReleaseIndex
from codemem.ranking.relevance import (
    SessionSignals,
    explain,
    learned_applies,
    runner_up,
    session_ranks,
)
from codemem.ranking.rrf import rrf
from codemem.ranking.strategy import rank_sessions
from codemem.ranking.subjects import SubjectIndex
from codemem.ranking.types import Candidate
from codemem.store import inventory
from codemem.store import short_ids as ids
from codemem.store.lance import Store
from codemem.store.maintenance import Bounds, Compactor
from codemem.store.schema import RESULT_COLUMNS, Row, key_of
from codemem.store.writer import Append, GroupWriter, Upsert
from codemem.timeline import turns
from codemem.timeline.index import DialogueIndex
from codemem.writing.add_leader import AddLeader
from codemem.writing.session_refresher import SessionRefresher
from parsers import exact_terms

log = logging.getLogger(__name__)

_ENCODER = msgspec.json.Encoder()
T = TypeVar("T")
# top_k may be any positive integer (10**30 included); the retrievers need a bound.
MAX_CANDIDATES = 10_000
# The first experiences of an answer whose metadata names the features that carried them.
EXPLAINED = 10


class Memory:
    def __init__(self, settings: Settings, embedder: Embedder | None = None,
                 search: SearchConfig | None = None) -> None:
        """`search`: how to search (default: the settings' `search_config()`)."""
        self.settings = settings
        self.search_config = search or settings.search_config()
        self._locations = CardIndexes(LocationIndex)
        self._subjects = CardIndexes(SubjectIndex)
        self._releases = CardIndexes(ReleaseIndex)
        self._fields = CardIndexes(FieldIndex)  # built only where the learned ranking is asked for
        self._dialogue = CardIndexes(DialogueIndex)  # conversations and the facts they state
        self.turn_config = turns.DEFAULT_TURNS  # how a memory of dialogue is answered
        self.embedder = embedder or make_embedder(settings.embedder, settings.embed_threads, settings.onnx_queries)
        self.store = Store(settings.data_dir, self.embedder.name, self.embedder.dim)
        self.compactor = Compactor(
            self.store, settings.compact_interval_s, settings.compact_min_writes,
            Bounds(settings.compact_max_small_fragments, settings.compact_max_unindexed_rows),
        )
        self.writer = GroupWriter(self.store, settings.write_batch_rows)
        self.compactor.start()
        self.refresher = SessionRefresher(self.refresh_session, settings.refresh_quiet_s)
        self._histories = sessions.MessageCache()
        self._states = sessions.StateCache(self.store.locks)
        self.inventory = inventory.Inventory(self.store)
        self._pool = ThreadPoolExecutor(8, thread_name_prefix="codemem-search")
        # Server workers sharing a local data directory: one of them runs every Add.
        lock_dir = self.store.locks.root
        self._leader = AddLeader(lock_dir, self._add_here) if settings.workers > 1 and lock_dir else None

    def warm_up(self) -> None:
        """Load the model (and its query encoder) now rather than on the first request."""
        try:
            self.embedder.warm()
        except Exception:  # noqa: BLE001 - a request that needs the model reports it again
            log.exception("embedding model failed to load")

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._leader is not None:
            self._leader.close()  # the other workers' Adds are run by them from now on
        self.refresher.close()  # deferred rebuilds are written before the writer stops
        self.writer.close()
        self.compactor.stop()
        self._pool.shutdown()

    # -- Add ------------------------------------------------------------------------------

    def add(self, req: AddRequest, experience: Experience | None = None) -> AddResult:
        """Store one chunk durably, with its session's rebuilt experience, in one commit:
        here, or with several server workers in the worker that runs them all (`writing.add_leader`)."""
        if experience is None and self._leader is not None:
            return self._leader.add(req)
        return self._add_here(req, experience)

    def _add_here(self, req: AddRequest, experience: Experience | None = None) -> AddResult:
        """Store one chunk durably, with its session's rebuilt experience, in one commit.

        A retry of a request_id stored in the session stores nothing again (a retry carries
        the same body, so the same session). `experience` replaces the built one for sources
        that are not agent sessions (a git commit); its steps are BM25-indexed, only its
        card is embedded.
        """
        validate_add(req, self.settings.max_image_bytes)
        user_key = key_of(req.user_id)
        request_key = key_of(req.user_id, req.request_id)
        session_key = key_of(req.user_id, req.session_id)

        # Under the session's lock, which other threads and the other processes on this data
        # directory take too (and, on S3, the request's claim for nodes sharing the bucket):
        # a retry, wherever it is answered, sees the first copy.
        with self.store.locks.session(session_key):
            before = self._session_state(session_key)
            if request_key in before.requests:
                return self._result(req, stored=0, duplicate=True)

            def stored() -> bool:  # read again: another node may store it meanwhile
                return request_key in sessions.state(self.store, session_key).requests

            with self.store.claim(request_key, stored) as mine:
                if not mine:  # another node stored it
                    return self._result(req, stored=0, duplicate=True)
                rows = self._message_rows(req, user_key, request_key)
                derived = self._derived_rows(req, rows[0], experience, before)
                if derived is not None and derived.conversation:
                    self._embed_messages(rows)
                self._write_session(session_key, before, rows, derived)
                if derived is None:  # the rebuild waits for the session's quiet time
                    self.refresher.mark(req.user_id, req.session_id)
        return self._result(req, stored=len(rows))

    def _session_state(self, session_key: str) -> sessions.SessionState:
        """What is stored of the session: from memory when this process holds it current,
        else one store read (`sessions.StateCache`). Called holding the session's lock."""
        held = self._states.get(session_key)
        if held is None:
            held = sessions.state(self.store, session_key)
            self._states.put(session_key, held)
        return held

    def _write_session(self, session_key: str, before: sessions.SessionState, messages: list[Row],
                       derived: sessions.Derived | None) -> None:
        """Commit a session's new messages and derived rows (held under its lock), and keep
        what the session then holds."""
        self._states.writing(session_key)
        if derived is None:
            self.writer.write(Append(messages))
        else:
            self._write_derived(derived, messages)
        self._states.put(session_key, before.after(messages, derived))

    def add_sessions(self, items: list[tuple[AddRequest, Experience]], embed_max_tokens: int | None = None,
                     embedded: Mapping[str, np.ndarray] | None = None) -> list[AddResult]:
        """Store a batch of whole sessions (one request each, with its experience: a git
        change), for importers: one look-up of what is stored, one embedding batch of the
        cards' tasks, one commit. A request whose session holds anything already stores
        nothing (``duplicate``), as does a retry of a stored request.

        ``embed_max_tokens`` caps the card's embedded task (default: the settings');
        ``embedded`` holds vectors of card texts embedded beforehand at that cap by this
        embedder (text -> vector; an importer's second process embeds them)."""
        for req, _ in items:
            validate_add(req, self.settings.max_image_bytes)
        keyed = [(req, exp, key_of(req.user_id, req.session_id)) for req, exp in items]
        results: dict[int, AddResult] = {}
        with self.store.locks.sessions(key for _, _, key in keyed):
            present: set[str] = set()
            for user_key in {key_of(req.user_id) for req, _ in items}:
                present |= self.store.sessions_present(
                    user_key, [k for r, _, k in keyed if key_of(r.user_id) == user_key])
            todo = []
            for i, (req, exp, key) in enumerate(keyed):
                if key in present:
                    results[i] = self._result(req, stored=0, duplicate=True)
                else:
                    present.add(key)  # the same session twice in one batch: stored once
                    todo.append((i, req, exp))
            max_tokens = embed_max_tokens or self.settings.embed_max_tokens
            texts = [exp.card.task or exp.card.text for _, _, exp in todo]
            missing = [t for t in dict.fromkeys(texts) if t not in (embedded or {})]
            by_text = {**(embedded or {}), **dict(zip(missing, self.embedder.embed(missing, max_tokens), strict=True))}
            vectors = dict(zip(self.embedder.fingerprints(texts, max_tokens), (by_text[t] for t in texts), strict=True))
            rows: list[Row] = []
            for i, req, exp in todo:
                messages = self._message_rows(req, key_of(req.user_id), key_of(req.user_id, req.request_id))
                derived = sessions.experience_rows(exp, messages[0], [], self.embedder, max_tokens,
                                                   len(req.messages), embed_steps=False, vectors=vectors)
                rows += messages + derived.rows
                results[i] = self._result(req, stored=len(messages))
            if rows:
                for _, req, _ in todo:
                    self._states.writing(key_of(req.user_id, req.session_id))
                self.writer.write(Append(rows))
                self._cards_written(rows)
        return [results[i] for i in range(len(keyed))]

    def _write_derived(self, derived: sessions.Derived, messages: list[Row]) -> None:
        """New messages and the session's derived rows in one commit: an append when the
        session had none yet (cheapest), else an upsert that replaces the card in place."""
        rows = messages + derived.rows
        self.writer.write(Upsert(rows, derived.stale_ids) if derived.replaces else Append(rows))
        self._cards_written(derived.rows)

    def _cards_written(self, rows: list[Row]) -> None:
        """Bring the card indexes (locations, subjects) up to the cards among `rows`, just committed."""
        by_user: dict[str, list[dict[str, object]]] = {}
        for r in rows:
            if r.kind == "card":
                by_user.setdefault(r.user_key, []).append({"session_key": r.session_key, "refs": r.refs,
                                                           "metadata": r.metadata, "text": r.text,
                                                           "session_id": r.session_id, "timestamp": r.timestamp})
        for user_key, cards in by_user.items():
            self._locations.put(user_key, cards)
            self._subjects.put(user_key, cards)
            self._releases.put(user_key, cards)
            self._fields.put(user_key, cards)
            self._dialogue.put(user_key, cards)

    def _forget_indexes(self, user_key: str | None) -> None:
        """Rows were deleted: the card indexes of `user_key` (every user's: None) are read again."""
        self._locations.forget(user_key)
        self._subjects.forget(user_key)
        self._releases.forget(user_key)
        self._fields.forget(user_key)
        self._dialogue.forget(user_key)

    def _derived_rows(self, req: AddRequest, base: Row, experience: Experience | None,
                      before: sessions.SessionState) -> sessions.Derived | None:
        """The session's card and steps after this Add, or None when the rebuild is deferred."""
        if experience is not None:
            return sessions.experience_rows(
                experience, base, before.derived, self.embedder,
                self.settings.embed_max_tokens, len(req.messages), embed_steps=False,
            )
        if not sessions.rebuild_due(before.messages + len(req.messages), before.built):
            self._histories.forget(base.session_key)
            return None
        # A card is not embedded while the model is still loading (`Embedder.ready`).
        derived = self._rebuild(base, before, req.messages, defer_untasked=True, defer_vectors=not self.embedder.ready())
        if derived.vector_deferred:  # its card's vector catches up when the session goes quiet
            self.refresher.mark(req.user_id, req.session_id)
        else:  # built from every message, its vector current: no refresh is owed
            self.refresher.forget(req.user_id, req.session_id)
        return derived

    def _rebuild(self, base: Row, before: sessions.SessionState, new_messages: list[Message],
                 defer_untasked: bool = False, defer_vectors: bool = False) -> sessions.Derived:
        history = self._histories.messages(self.store, base.user_key, base.session_key, before.messages)
        derived = sessions.rebuild(
            self.embedder, self.settings.embed_max_tokens, base, before.derived, history, new_messages,
            self.settings.embed_steps, defer_untasked, defer_vectors,
        )
        # Cached before the write: if the write fails, the store holds fewer messages than
        # this entry, and the next rebuild reads them back instead.
        self._histories.put(base.session_key, history + new_messages)
        return derived

    def refresh_session(self, user_id: str, session_id: str) -> None:
        """Rebuild a session's card and steps from everything stored (deferred rebuilds)."""
        base = sessions.base_row(user_id, session_id, int(time.time() * 1000))
        with self.store.locks.session(base.session_key):
            before = self._session_state(base.session_key)
            if before.messages == 0:  # deleted meanwhile: nothing to rebuild, nothing to revive
                return
            self._write_session(base.session_key, before, [], self._rebuild(base, before, []))

    @staticmethod
    def _result(req: AddRequest, stored: int, duplicate: bool = False) -> AddResult:
        return AddResult(req.request_id, req.user_id, req.session_id, stored=stored, duplicate=duplicate)

    def _embed_messages(self, rows: list[Row]) -> None:
        """Give message rows that have none a vector. A conversation's messages are each
        embedded: there the answer to a question is one turn, said in other words than the
        question's (`python -m eval.locomo`; eval/README.md), while a coding session's
        messages stay BM25-only
        (`Settings.embed_messages`: embedding them is most of an Add's cost)."""
        todo = [r for r in rows if r.vector is None and r.kind == "message" and r.text.strip()]
        for r, v in zip(todo, self.embedder.embed([r.text for r in todo], self.settings.embed_max_tokens), strict=True):
            r.vector = v

    def _message_rows(self, req: AddRequest, user_key: str, request_key: str) -> list[Row]:
        now = int(time.time() * 1000)
        session_key = key_of(req.user_id, req.session_id)
        texts = [m.text for m in req.messages]
        vectors = (
            list(self.embedder.embed(texts, self.settings.embed_max_tokens))
            if self.settings.embed_messages
            else [None] * len(texts)
        )
        return [
            Row(
                # The session is in the id: a request_id is one request within its session.
                id="m_" + key_of(session_key, request_key, str(i))[:24],
                user_key=user_key,
                user_id=req.user_id,
                session_key=session_key,
                session_id=req.session_id,
                request_key=request_key,
                kind="message",
                position=i,
                role=msg.role,
                text=text,
                refs=" ".join(exact_terms(text)),  # error codes, test ids, snake_case names: whole
                content=_content_json(msg),
                metadata=_ENCODER.encode({"request_id": req.request_id}).decode(),
                created_at=now,
                timestamp=msg.timestamp,
                vector=vectors[i],
            )
            for i, (msg, text) in enumerate(zip(req.messages, texts, strict=True))
        ]

    # -- Search ---------------------------------------------------------------------------

    @property
    def shape(self) -> answer.Shape:
        """How much an answer carries, with the default search configuration."""
        return self._shape(self.search_config)

    def _shape(self, config: SearchConfig, budget_tokens: int | None = None) -> answer.Shape:
        budget = self.settings.search_token_budget
        if budget_tokens is not None:  # a smaller answer than the settings', never a larger one
            budget = min(budget, budget_tokens) if budget else budget_tokens
        return answer.Shape.of(config, budget, self.settings.max_item_chars)

    def search(self, req: SearchRequest, config: SearchConfig | None = None,
               budget_tokens: int | None = None) -> list[Hit]:
        """At most top_k items of this user's memory, best first, searched as `config` says
        (default: this Memory's `search_config`). Each experience's metadata says why it was
        returned (`relevance.explain`); when none is relevant enough the answer is quiet:
        short cards and little evidence (`answer.build`). The answer stops at the settings'
        `search_token_budget`, or at `budget_tokens` where that is smaller (a tool's compact
        answer); the first experience's card is kept whatever its size."""
        config = config or self.search_config
        validate_search(req, self.settings.max_image_bytes)
        if budget_tokens is not None and budget_tokens < 1:
            raise InvalidInput(f"the token budget must be at least 1, not {budget_tokens}")
        shape = self._shape(config, budget_tokens)
        text = req.text
        if not text.strip() or not self.store.holds_user(key_of(req.user_id)):
            return []  # a memory that does not exist yet: no model, no pool, no lock
        signals, items = self.signals(req.user_id, text, config, min(max(req.top_k, config.candidates), MAX_CANDIDATES))
        ranking = rank_sessions(signals, config, EXPLAINED)
        scores = ranking.scores
        dialogue = self._dialogue.get(key_of(req.user_id), lambda: self.store.user_rows(
            key_of(req.user_id), "card", ["session_key", "session_id", "metadata", "timestamp"]), self.store.changes())
        if turns.is_dialogue(scores, dialogue):  # people talking: answered turn by turn, dated
            return turns.answer(text, items, scores, max(signals.cosine.values(), default=0.0), dialogue,
                                self.store.by_ids, req.user_id, req.top_k, shape.budget_tokens, answer.MAX_RESPONSE_BYTES,
                                self.turn_config, quiet=config.quiet_below > 0)
        groups = group_by_session(items, scores, sessions.card_id, req.top_k, config.relevance_floor)
        others = runner_up(scores)
        why = {g.session_key: explain(signals, g.session_key, g.score, others[g.session_key], config) for g in groups}
        for key, carried in ranking.reasons.items():
            if key in why:
                why[key]["features"] = carried
        quiet = config.quiet_below > 0 and all(why[g.session_key]["relevance"] < config.quiet_below  # type: ignore[operator]
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
        query = parse_query(text)
        refs = list(dict.fromkeys([*query.refs, *ticket_refs(text)]))
        # The lexical retrievers run in Rust (no GIL) while this thread embeds the query.
        lexical = self._pool.submit(self.store.fts, query.bm25, user_key, limit)
        by_refs = self._pool.submit(self.store.fts, " ".join(refs), user_key, limit, "refs")
        # The card indexes are read from the user's cards, once when several need a read.
        version = self.store.changes()
        cards = _once(lambda: self.store.user_rows(user_key, "card", ["session_key", "refs", "metadata"]))
        index = self._pool.submit(self._locations.get, user_key, cards, version)
        subjects = self._pool.submit(self._subjects.get, user_key, cards, version)
        vector = self.embedder.embed([text], self.settings.query_max_tokens)[0]
        found = {"lexical": lexical.result(), "dense": self.store.nearest(vector, user_key, limit),
                 "refs": by_refs.result()}
        items = rrf(list(found.values()), config.item_rrf_k)  # orders each session's evidence
        location = index.result().scores(refs)
        commit_ranks = self._commit_ranks(user_key, query, subjects.result(), config, limit)
        if commit_ranks:
            candidates = {str(c.fields["session_key"]) for c in items} | location.keys()
            candidates.update(k for ranks in commit_ranks.values() for k in ranks)
            # Only a memory of commits reads the releases index (its cards are read by now).
            commit_ranks["since"] = self._since(text, self._releases.get(user_key, cards, version), candidates)
        signals = SessionSignals.of(found, location, commit_ranks)
        if learned_applies(signals, config):
            fields = self._fields.get(user_key, lambda: self.store.user_rows(user_key, "card", ["session_key", "text", "metadata"]),
                                      version)
            self._match_fields(text, signals, config, fields)
        return signals, items

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
        by_title = self.store.fts(query.summary(config.title_prose_words), user_key, limit)
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
        derived = self.store.session_rows(session_key, sessions.DERIVED_KINDS, user_key=user_key)
        card = next((r for r in derived if r["kind"] == "card"), None)
        if card is None:  # no whole id: a shortened one
            session_key = key_of(user_id, ids.session_of(self.store, user_id, ref))
            derived = self.store.session_rows(session_key, sessions.DERIVED_KINDS, user_key=user_key)
            card = next((r for r in derived if r["kind"] == "card"), None)
        if card is None:  # deleted meanwhile
            raise NotFound(f"no experience {ref!r} in the memory of {user_id!r}")
        evidence = sorted((r for r in derived if r["kind"] == "step"), key=lambda r: int(r["position"]))
        if not evidence:
            evidence = self.store.session_rows(session_key, ["message"], user_key=user_key,
                                               columns=[*RESULT_COLUMNS, "request_key"])
            evidence.sort(key=lambda r: (r["created_at"], r["request_key"], r["position"]))
        return answer.whole(card, evidence, self.shape)

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
        if not user_id:
            raise InvalidInput("user_id must be a non-empty string")
        self._histories.clear()
        try:
            with self._deleting():
                return self.store.delete_user(key_of(user_id))
        finally:
            self._forget_indexes(key_of(user_id))

    def delete_experience(self, user_id: str, session_id: str) -> int:
        """Remove one experience of one user (its messages, card and steps); returns how
        many items were removed (0 when there was none). Unlike the readers, it takes the
        session_id whole, never a prefix: a retried delete must not remove another session
        whose id begins with the one removed (the /ui asks with the id it resolved)."""
        if not user_id or not session_id:
            raise InvalidInput("user_id and session_id must be non-empty strings")
        session_key = key_of(user_id, session_id)
        with self.store.locks.session(session_key):
            self._histories.forget(session_key)
            self._states.writing(session_key)
            try:
                return self.store.delete_session(key_of(user_id), session_key)
            finally:
                self._forget_indexes(key_of(user_id))

    def purge(self, older_than: timedelta) -> int:
        """Remove every memory stored more than `older_than` ago, for all users: by when it
        was stored (`created_at`), not by its source's time (`codemem/times.py`), so that
        data is kept for as long as it has been held here, a 2019 commit imported today too."""
        cutoff = int((datetime.now(UTC) - older_than).timestamp() * 1000)
        self._histories.clear()
        try:
            with self._deleting():
                return self.store.delete_older_than(cutoff)
        finally:
            self._forget_indexes(None)

    @contextlib.contextmanager
    def _deleting(self) -> Iterator[None]:
        """Around a delete that no session lock covers: the `deletes` lock is held throughout
        and its generation raised first, so every process drops what it kept of any session
        (`sessions.StateCache`) and keeps nothing it reads while the delete runs, even if
        this process dies before the delete is done."""
        with self.store.locks.deletes:
            self.store.locks.deletes.bump()
            yield

    def store_health(self) -> dict[str, int]:
        """The store's figures for a health check; empty when they cannot be read just now
        (object storage unreachable), which a health check reports rather than fails on."""
        try:
            return self.store.stats()
        except Exception:  # noqa: BLE001 - the health answer says what it could not read
            log.warning("store figures unavailable for /health", exc_info=True)
            return {}

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

    def stats(self) -> dict[str, int]:
        return self.store.stats() | {"pending_writes": self.writer.pending, "compactions": self.compactor.runs,
                                       "compaction_failures": self.compactor.failures}


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


def _content_json(msg: Message) -> str:
    if isinstance(msg.content, str):
        return ""
    return _ENCODER.encode(msg.content).decode()


