"""The LanceDB-backed item store: one table, filtered by user before any ranking.

Everything LanceDB-specific lives here and in `filters.py` (the filter expressions): callers
name what they want (a user's items, a session's messages) and ranking code sees plain
`Candidate` values.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Any, cast

# LanceDB's Rust logger reads its level from LANCEDB_LOG when lancedb is imported and writes
# to stderr, outside our log: at its default it printed "WARN lance::dataset::optimize ...
# Retryable commit conflict" (a retry that then succeeded) into a user's progress bar. Only
# its errors are shown unless the user sets LANCEDB_LOG (e.g. `warn`, `debug`) to see more.
os.environ.setdefault("LANCEDB_LOG", "error")

import lancedb  # noqa: E402 - after its log level is set
import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
from lancedb.background_loop import LOOP  # noqa: E402
from lancedb.index import FTS, Bitmap, BTree  # noqa: E402
from lancedb.query import AsyncQuery, AsyncQueryBase  # noqa: E402

from codemem.errors import StoreMismatch
from codemem.ranking.types import Candidate
from codemem.store.claims import RequestClaims
from codemem.store.filters import (
    encoder_name,
    id_list,
    id_prefix,
    kind_name,
    kinds_filter,
    user_scope,
)
from codemem.store.locks import Locks
from codemem.store.presence import UserPresence
from codemem.store.schema import (
    CANDIDATE_COLUMNS,
    CODE_WINDOW,
    ITEMS_TABLE,
    META_DIM,
    META_MODEL,
    META_SCHEMA,
    RESULT_COLUMNS,
    SCHEMA_VERSION,
    Row,
    card_id,
    items_schema,
    rows_to_table,
)
from codemem.store.top_k import stable_top

log = logging.getLogger(__name__)

# Compaction merges fragments smaller than this into fragments of about this size and leaves
# the larger ones alone (`Store.optimize`).
COMPACT_TARGET_ROWS = 8192
# A full-text index holding this many segments has them merged into one by the next
# compaction (the other indexes, cheap to merge, are kept in one segment).
MAX_INDEX_SEGMENTS = 4
FTS_INDEXES = ("text_idx", "refs_idx")


class Store:
    """Opens (or creates) the items table under `uri` and answers the queries the core needs."""

    def __init__(self, uri: str, model: str, dim: int, cache_mb: tuple[int, int] | None = None) -> None:
        """`model` names the encoder whose vectors this store writes and reads (`Embedder.name`):
        rows record the encoder that wrote their vector, and vectors of any other are read as
        none (`current_vectors`) until they are re-embedded (`codemem/writing/reembedder.py`).

        Every read sees every commit that landed before it, this process's or another's
        (a second worker, a CLI import beside the server, the Claude Code hook).

        LanceDB can check for a newer version at every read (`read_consistency_interval`
        0), but a check lists the table's versions, a few thousand of them under a steady
        stream of Adds (old versions are kept two minutes), which makes every small read
        markedly dearer. On a local data directory every commit is counted instead, in a
        lock file all processes share (`Locks.count_commit`), and a read first compares that
        count, 8 bytes, with the one this process's handle is current at; it checks out the latest version only when
        another process committed since (`_fresh`). On object storage (no shared file)
        every read checks with LanceDB.

        `cache_mb` bounds LanceDB's index and metadata caches (`config.Caches`; None: LanceDB's
        own sizes, for a short-lived process)."""
        self.locks = Locks(uri)
        self._fresh_lock = threading.Lock()
        self._seen = self.locks.commits.generation()  # before opening: the handle holds at least these
        interval = timedelta(0) if self._seen is None else None
        # LanceDB's caches, bounded: their defaults let them grow with every commit.
        self.cache = None if cache_mb is None else lancedb.Session(
            index_cache_size_bytes=cache_mb[0] << 20, metadata_cache_size_bytes=cache_mb[1] << 20)
        self.db = lancedb.connect(uri, read_consistency_interval=interval, session=self.cache)
        self.schema = items_schema(model, dim)
        self.encoder = encoder_name(model)
        # What selects the rows whose vector this store's encoder wrote: the only ones a
        # vector search or a vector read ever sees.
        self.current_vectors = f"has_vector AND encoder = '{self.encoder}'"
        self.other_vectors_filter = f"has_vector AND encoder != '{self.encoder}'"  # to be embedded again
        self._index_lock = threading.Lock()
        self.claims = RequestClaims(uri) if uri.startswith("s3://") else None
        # Held by whoever commits (the writer, the compactor when it must), in every process.
        self.write_lock = self.locks.write
        self._users = UserPresence()
        with self.write_lock:  # workers starting together: one creates the table and indexes
            self.table = self._open_or_create(model, dim)
        self._fresh()  # up to the commits counted meanwhile (its own creation's among them)

    def _open_or_create(self, model: str, dim: int) -> lancedb.table.Table:
        if ITEMS_TABLE in self.db.list_tables().tables:
            table = self.db.open_table(ITEMS_TABLE)
            meta = table.schema.metadata or {}
            found = meta.get(META_DIM, b"?").decode()
            if found != str(dim):
                raise StoreMismatch(
                    f"this data directory holds vectors of {meta.get(META_MODEL, b'?').decode()} ({found} dims); "
                    f"the configured embedder is {model} ({dim} dims). Use another --data-dir."
                )
            if "encoder" not in table.schema.names:
                self._name_the_encoder(table, meta.get(META_MODEL, b"").decode())
        else:
            try:
                table = self.db.create_table(ITEMS_TABLE, schema=self.schema)
                self.locks.count_commit()
            except ValueError:  # another process created it first
                table = self.db.open_table(ITEMS_TABLE)
        self._ensure_indexes(table)
        return table

    def _name_the_encoder(self, table: lancedb.table.Table, model: str) -> None:
        """Bring a table of schema version 1 (one model, named in its metadata) to version 2:
        every row records the model in `encoder`. A name that cannot enter an expression is
        recorded as none, and its vectors are re-embedded like any other encoder's."""
        try:
            named = encoder_name(model)
        except ValueError:
            named = ""
        with contextlib.suppress(ValueError):  # another process added it first
            table.add_columns({"encoder": f"'{named}'"})
            metadata = {k.decode(): v.decode() for k, v in (table.schema.metadata or {}).items()}
            table.to_lance().update_schema_metadata({**metadata, META_SCHEMA.decode(): SCHEMA_VERSION}, replace=True)
            table.checkout_latest()
            self.locks.count_commit()
            log.info("store %s: its vectors now name their encoder (%s)", self.db.uri, named or "unknown")

    def _ensure_indexes(self, table: lancedb.table.Table) -> None:
        with self._index_lock:
            names = {idx.name for idx in table.list_indices()}
            if "text_idx" not in names:
                table.create_index("text", config=FTS(with_position=False), name="text_idx")
            if "refs_idx" not in names:
                # Reference keys are matched whole: no stemming, no stop words, paths kept intact.
                refs = FTS(base_tokenizer="whitespace", stem=False, remove_stop_words=False,
                           ascii_folding=False, max_token_length=200)
                table.create_index("refs", config=refs, name="refs_idx")
            # Scalar indexes keep the pre-filters (user, session, kind) and id lookups from
            # scanning the table; rows added since the last compaction are scanned as usual.
            for column, config in (("user_key", Bitmap()), ("kind", Bitmap()), ("has_vector", Bitmap()), ("encoder", Bitmap()),
                                   ("session_key", BTree()), ("id", BTree()), ("request_key", BTree())):
                if f"{column}_idx" not in names:
                    table.create_index(column, config=config, name=f"{column}_idx")
            if len({idx.name for idx in table.list_indices()}) > len(names):
                self.locks.count_commit()

    # -- what this process's handle is current at --------------------------------------

    def _fresh(self) -> None:
        """Bring the table handle up to every commit counted so far, before a read."""
        if self._seen is None:  # object storage: LanceDB checks at every read
            return
        if self.locks.commits.generation() == self._seen:
            return
        with self._fresh_lock:
            count = self.locks.commits.generation()  # before the checkout: it holds at least these
            if count != self._seen:
                self.table.checkout_latest()
                self._seen = count

    def _commit(self, commit: Callable[[], object]) -> None:
        """Run one commit of this process's and count it for the others.

        A commit lands on top of the latest version, so afterwards the handle holds every
        commit counted before it started; when no other count came in meanwhile, it is
        current at the new count and the next read checks nothing out. No checkout runs
        while a commit of this process's does (`_fresh_lock`): one that read the version
        list before the commit could leave the handle behind it.

        When another process committed since the handle was last brought up, it is brought
        up first: an upsert run on a version behind the latest finds its commit refused as
        a conflict and is run again whole (with two workers under mixed load most of a
        writer's time went to waiting for the write lock and to such re-runs)."""
        if self._seen is None:
            commit()
            return
        with self._fresh_lock:
            before = self.locks.commits.generation()
            if before != self._seen:
                self.table.checkout_latest()
                self._seen = before
            commit()
            after = self.locks.count_commit()
            if before is not None and after == before + 1:
                self._seen = after

    # -- writes ---------------------------------------------------------------------------

    def claim(self, request_key: str, stored: Callable[[], bool]) -> contextlib.AbstractContextManager[bool]:
        """Held while this process stores a request; False when another node stored it
        meanwhile. Only on S3 is there anything to claim (see claims.py): elsewhere the
        session locks already hold across processes."""
        return contextlib.nullcontext(True) if self.claims is None else self.claims.hold(request_key, stored)

    def append(self, rows: list[Row]) -> None:
        """One atomic commit: all rows become visible together, or none do."""
        if rows:
            self._commit(lambda: self.table.add(rows_to_table(rows, self.schema, self.encoder)))

    def upsert(self, rows: list[Row]) -> None:
        """One atomic commit: rows whose id exists are replaced, the others inserted.

        (No `when_not_matched_by_source_delete`: it scans the whole table, a cost that grows
        with it; stale rows are deleted by id instead.)"""
        if rows:
            self._commit(lambda: (
                self.table.merge_insert("id")
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .execute(rows_to_table(rows, self.schema, self.encoder))
            ))

    def revector(self, rows: list[Row]) -> None:
        """One atomic commit: rows whose id still exists are replaced (their vectors written
        by this store's encoder); rows deleted meanwhile stay deleted."""
        if rows:
            self._commit(lambda: (
                self.table.merge_insert("id").when_matched_update_all()
                .execute(rows_to_table(rows, self.schema, self.encoder))
            ))

    def delete_ids(self, ids: list[str]) -> None:
        if quoted := id_list(ids):
            self._commit(lambda: self.table.delete(f"id IN ({quoted})"))

    def delete(self, where: str) -> int:
        """Remove the rows `where` selects; returns how many items (memories people see:
        messages, cards, steps) went, a card's code window (`CODE_WINDOW`) not counted."""
        items = self.count(f"({where}) AND kind != '{CODE_WINDOW}'")
        if items or self.exists(where):
            try:
                self._commit(lambda: self.table.delete(where))
            finally:
                self._users.clear()
        return items

    def delete_user(self, user_key: str) -> int:
        """Remove every row of one user; returns how many items there were."""
        return self.delete(user_scope(user_key))

    def delete_session(self, user_key: str, session_key: str) -> int:
        """Remove every row of one session of one user (messages, card, steps)."""
        return self.delete(f"{user_scope(user_key)} AND session_key = '{session_key}'")

    def delete_older_than(self, created_before_ms: int) -> int:
        """Remove every row stored before a Unix time in ms, for all users."""
        return self.delete(f"created_at < {int(created_before_ms)}")

    # -- reads ----------------------------------------------------------------------------

    def count(self, where: str | None = None) -> int:
        self._fresh()
        return self.table.count_rows(where)

    def exists(self, where: str) -> bool:
        return bool(self._run(self._query().where(where).select(["id"]).limit(1)))

    def rows(self, where: str, columns: Iterable[str] = RESULT_COLUMNS, limit: int = 1_000_000) -> list[dict[str, Any]]:
        """The rows `where` selects. A row's `vector`, where asked for, is None unless this
        store's encoder wrote it: no caller can reuse or compare another encoder's vector."""
        columns = list(columns)
        if "vector" not in columns:
            return self._run(self._query().where(where).select(columns).limit(limit))
        rows = self._run(self._query().where(where).select([*columns, "has_vector", "encoder"]).limit(limit))
        for r in rows:
            current = r["has_vector"] and r["encoder"] == self.encoder
            if not current:
                r["vector"] = None
            for name in ("has_vector", "encoder"):
                if name not in columns:
                    del r[name]
        return rows

    def other_vectors(self, limit: int, ids: list[str] | None = None) -> list[dict[str, Any]]:
        """At most `limit` rows (of those `ids` names, where given) whose vector another
        encoder wrote, to be embedded again: every column but the vector."""
        where = self.other_vectors_filter
        if ids is not None:
            where += f" AND id IN ({id_list(ids) or repr('')})"
        columns = [name for name in self.schema.names if name not in ("vector", "has_vector", "encoder")]
        return self.rows(where, columns, limit)

    def other_vector_count(self) -> int:
        """How many rows hold a vector of another encoder."""
        return self.count(self.other_vectors_filter)

    def cards_without_window(self) -> list[str]:
        """The session keys of the cards (any user's) that show a change (an `## Edited` or
        `## Final diff` section: `render.code_window`) and whose code window has no vector
        (`CODE_WINDOW`): cards stored before cards had one. Two scans of small columns."""
        held = {str(r["session_key"]) for r in self.rows(f"kind = '{CODE_WINDOW}'", ["session_key"])}
        cards = self.rows("kind = 'card' AND (text LIKE '%## Edited%' OR text LIKE '%## Final diff%')", ["session_key"])
        return [key for r in cards if (key := str(r["session_key"])) not in held]

    def _query(self) -> AsyncQuery:
        """A query on this store's own table handle (so it sees every write this process
        committed), in LanceDB's async form: the sync query builders hop to LanceDB's event
        loop several times a query and re-read the table's schema, the async form runs in
        one hop (`_run`). The handle is the sync table's own async table, which lancedb
        (pinned <0.41) keeps as `_table`."""
        self._fresh()
        return cast(lancedb.table.LanceTable, self.table)._table.query()

    @staticmethod
    def _run(query: AsyncQueryBase) -> list[dict[str, Any]]:
        """The query's rows, run on LanceDB's background event loop in one hop. Its Arrow
        result is turned into rows here, in the caller's thread: every query and every
        commit of the process goes through that one loop thread, and rows converted there
        (`to_list`) queued each commit behind every Search's Python work."""
        return cast(list[dict[str, Any]], LOOP.run(query.to_arrow()).to_pylist())

    def holds_user(self, user_key: str) -> bool:
        """Whether the user has any row. A user seen holding rows is not looked up again
        (until this process deletes rows); one seen holding none is looked up again only
        after a commit (any process's, by the shared commit count), so a Search of a memory
        that does not exist yet costs a read of 8 bytes and takes no lock."""
        generation = self.locks.commits.generation()
        known = self._users.get(user_key, generation)
        if known is None:
            known = self.exists(user_scope(user_key))
            self._users.put(user_key, known, generation)
        return known

    def has_kind(self, user_key: str, kind: str) -> bool:
        """Whether the user has a row of this kind (one of ours, e.g. "registration")."""
        return self.exists(f"{user_scope(user_key)} AND kind = '{kind_name(kind)}'")

    def session_ids(self, user_key: str, prefix: str) -> set[str]:
        """The session_ids of one user's experiences (cards) that start with ``prefix``."""
        rows = self.rows(f"{user_scope(user_key)} AND kind = 'card' AND session_id LIKE '{id_prefix(prefix)}%'",
                         columns=["session_id"])
        return {sid for r in rows if (sid := str(r["session_id"])).startswith(prefix)}

    def ids_starting(self, user_key: str, prefix: str, limit: int) -> list[dict[str, Any]]:
        """At most `limit` of one user's items whose id starts with ``prefix``: their id,
        session_id and user_id."""
        rows = self.rows(f"{user_scope(user_key)} AND id LIKE '{id_prefix(prefix)}%'",
                         columns=["id", "session_id", "user_id"], limit=limit)
        return [r for r in rows if str(r["id"]).startswith(prefix)]

    def sessions_present(self, user_key: str, session_keys: list[str]) -> set[str]:
        """Those of these sessions of one user that hold any row."""
        if not (quoted := id_list(session_keys)):
            return set()
        rows = self.rows(f"{user_scope(user_key)} AND session_key IN ({quoted})", columns=["session_key"])
        return {str(r["session_key"]) for r in rows}

    def message_count(self, session_key: str) -> int:
        return self.count(f"session_key = '{session_key}' AND kind = 'message'")

    def session_rows(self, session_key: str, kinds: Iterable[str], columns: Iterable[str] = RESULT_COLUMNS,
                     user_key: str | None = None) -> list[dict[str, Any]]:
        """One session's rows of these kinds (within one user's when `user_key` is given)."""
        scope = f"session_key = '{session_key}'"
        if user_key is not None:
            scope = f"{user_scope(user_key)} AND {scope}"
        return self.rows(f"{scope} AND {kinds_filter(kinds)}", columns=columns)

    def sessions_messages(self, user_key: str, session_keys: Iterable[str], columns: Iterable[str]) -> list[dict[str, Any]]:
        """The messages of several sessions of one user."""
        if not (quoted := id_list(list(session_keys))):
            return []
        return self.rows(f"{user_scope(user_key)} AND kind = 'message' AND session_key IN ({quoted})", columns=columns)

    def row_facts(self) -> pa.Table:
        """Every row's user_id, kind and created_at: cheap, nothing but small columns."""
        self._fresh()
        return self.table.search().select(["user_id", "kind", "created_at"]).limit(None).to_arrow()

    def user_bytes(self) -> dict[str, int]:
        """Each user_id's stored bytes: text, parts, metadata and references, plus a vector
        for each row that has one. The lengths are computed in the scan, but the scan reads
        every text: seconds on a large table."""
        import pyarrow.compute as pc  # slow to import: only the storage figure needs it

        vector_bytes = 4 * self.schema.field("vector").type.list_size
        columns: dict[str, Any] = {
            "user_id": "user_id", "has_vector": "has_vector",
            "bytes": "octet_length(text) + octet_length(content) + octet_length(metadata) + octet_length(refs)"}
        self._fresh()
        rows = self.table.search().select(columns).limit(None).to_arrow()
        if rows.num_rows == 0:
            return {}
        total = pc.add(rows["bytes"].cast(pa.int64()), pc.multiply(rows["has_vector"].cast(pa.int64()), vector_bytes))
        sums = pa.table({"user_id": rows["user_id"], "bytes": total}).group_by("user_id").aggregate([("bytes", "sum")])
        return dict(zip(sums["user_id"].to_pylist(), sums["bytes_sum"].to_pylist(), strict=True))

    def user_rows(self, user_key: str, kind: str, columns: Iterable[str] = RESULT_COLUMNS) -> list[dict[str, Any]]:
        """One user's rows of one kind (e.g. every card)."""
        return self.rows(f"{user_scope(user_key)} AND kind = '{kind_name(kind)}'", columns=columns)

    def by_ids(self, ids: list[str]) -> list[Candidate]:
        if not (quoted := id_list(ids)):
            return []
        return [Candidate(id=r["id"], score=0.0, fields=r) for r in self.rows(f"id IN ({quoted})")]

    def vectors(self, ids: list[str]) -> dict[str, np.ndarray]:
        """The vectors of these items, by id (those that have one)."""
        if not (quoted := id_list(ids)):
            return {}
        return {str(r["id"]): np.asarray(r["vector"], dtype=np.float32)
                for r in self.rows(f"id IN ({quoted}) AND {self.current_vectors}", ["id", "vector"])}

    def fts(self, text: str, user_key: str, limit: int, column: str = "text") -> list[Candidate]:
        """BM25 over `column` ("text", or "refs" for code-reference keys) of one user's items."""
        if not text.strip():
            return []
        def fetch(n: int) -> list[dict[str, Any]]:
            query = self._query().nearest_to_text(text, columns=column).where(user_scope(user_key))  # a prefilter
            return self._run(query.select([*CANDIDATE_COLUMNS, "_score"]).limit(n))

        hits = stable_top(fetch, limit, "_score")
        return [Candidate(id=h["id"], score=float(h["_score"]), fields=h) for h in hits]

    def nearest(self, vector: np.ndarray, user_key: str, limit: int) -> list[Candidate]:
        """One user's items with a vector, nearest (cosine) first. A card's code window is
        read as its card (`schema.CODE_WINDOW`): a card is as near as the nearer of its two."""
        def fetch(n: int) -> list[dict[str, Any]]:
            query = (self._query().nearest_to(vector).column("vector").distance_type("cosine")
                     .where(f"({user_scope(user_key)}) AND {self.current_vectors}"))  # a prefilter
            return self._run(query.select([*CANDIDATE_COLUMNS, "_distance"]).limit(n))

        found: dict[str, Candidate] = {}
        for h in stable_top(fetch, limit, "_distance", higher_is_better=False):
            if h["kind"] == CODE_WINDOW:
                h = {**h, "id": card_id(str(h["session_key"])), "kind": "card"}
            found.setdefault(h["id"], Candidate(id=h["id"], score=1.0 - float(h["_distance"]), fields=h))
        return list(found.values())

    # -- maintenance ----------------------------------------------------------------------

    def optimize(self, keep_versions_for: timedelta, exclusive: bool = False) -> None:
        """Compact small fragments, fold new rows into the indexes, drop old versions.

        Through Lance itself (`pylance`, the Lance that LanceDB is built on), not LanceDB's
        `Table.optimize`, too dear for a round every few seconds under load: it compacts
        every fragment under a million rows, so once the tail compacted last time was
        indexed it rewrote the whole table with the new one, and it merged new rows into
        every index, rewriting the two full-text indexes whole. Here fragments of
        `COMPACT_TARGET_ROWS` rows or more are left as they are, the scalar indexes (cheap) are merged as before,
        and new rows go into a new segment of each full-text index, merged into one once it
        holds `MAX_INDEX_SEGMENTS` (a Search over a few segments costs no more than over one).

        The rewrite of the small fragments holds the write lock (every process's writes wait
        for it, tens of milliseconds): LanceDB refuses a rewrite whose fragments an upsert
        touched meanwhile, which under a steady stream of Adds happens often, each failure
        followed by a round holding the lock throughout. The index work and the clean-up run beside the writes. `exclusive`
        holds the lock for the whole round (after a round failed anyway)."""
        unlocked = contextlib.nullcontext()
        round_lock, rewrite_lock = (self.write_lock, unlocked) if exclusive else (unlocked, self.write_lock)
        with round_lock:
            try:
                with rewrite_lock:
                    self._fresh()
                    dataset = self.table.to_lance()
                    dataset.optimize.compact_files(target_rows_per_fragment=COMPACT_TARGET_ROWS)
                    self.locks.count_commit()  # before the lock goes: the others' next write starts here
                segments = {index.name: len(index.segments) for index in dataset.describe_indices()}
                merge = max(segments.get(name, 0) for name in FTS_INDEXES) >= MAX_INDEX_SEGMENTS
                dataset.optimize.optimize_indices(index_names=list(FTS_INDEXES),
                                                  num_indices_to_merge=MAX_INDEX_SEGMENTS if merge else 0)
                dataset.optimize.optimize_indices(index_names=[name for name in segments if name not in FTS_INDEXES])
                dataset.cleanup_old_versions(older_than=keep_versions_for)
            finally:  # what did commit (a round may fail midway) is counted, once for the index work
                self.locks.count_commit()
                self._fresh()

    def stats(self) -> dict[str, int]:
        """Rows, fragments, the fragments a compaction would merge (under
        `COMPACT_TARGET_ROWS`), rows outside the full-text index, and the version."""
        self._fresh()
        s = cast(dict[str, Any], self.table.stats())  # a dict at run time, whatever the annotation says
        sizes = [fragment.metadata.physical_rows for fragment in self.table.to_lance().get_fragments()]
        idx = self.table.index_stats("text_idx")
        return {
            "rows": int(s.get("num_rows", 0)),
            "fragments": len(sizes),
            "small_fragments": sum(size < COMPACT_TARGET_ROWS for size in sizes),
            "unindexed_rows": int(idx.num_unindexed_rows) if idx else 0,
            "version": self.version(),
        }

    def version(self) -> int:
        self._fresh()
        return int(self.table.version)

    def changes(self) -> int:
        """A number that changes whenever anything is committed, by this process or another:
        the shared commit count on a local data directory (8 bytes read, no round trip to
        LanceDB's event loop), else the table's version."""
        count = self.locks.commits.generation()
        return self.version() if count is None else count
