"""Vectors written by another encoder, embedded again in the background; coding cards
written before cards had a second vector (of their code window), given one.

A store records which encoder wrote each vector (`codemem/store/schema.py`), and reads only
its own encoder's (`Store.current_vectors`): once a release ships a new encoder, every
vector written before it is read as none, and its row is found by BM25 and references
alone until this thread has embedded it again. Searches go on answering meanwhile; the
thread takes a few dozen rows at a time and pauses between them, so it never holds a core
for long.

A store written before cards had a second vector (of their code window, `schema.CODE_WINDOW`)
gets one for each coding card that shows a change, the same way, a batch at a time.

What a row's vector reads is what the writer embedded: a message's or a step's text, a
card's task (`render.task_of`, the task as the card shows it; the card's whole text where it
has none), and for a card's second vector (`schema.CODE_WINDOW`) the card's code window
(`render.code_window`). A card whose task was longer than its card's task section is
embedded from that section's head; its next rebuild (an Add to its session) embeds the task
itself again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import msgspec
import numpy as np

from codemem.encoders import Embedder
from codemem.experience.building.render import code_window, task_of
from codemem.store.filters import id_list
from codemem.store.lance import Store
from codemem.store.schema import CODE_WINDOW, Row, card_id
from codemem.store.writer import Revector, Upsert, WriteOp
from codemem.writing.derived_rows import code_window_row

log = logging.getLogger(__name__)

_ENCODER = msgspec.json.Encoder()
_NO_ROW = ("vector", "has_vector", "encoder")  # the columns a Row does not take as they are stored


def vector_input(row: dict[str, Any], card_texts: dict[str, str]) -> str:
    """What the writer embedded for this stored row (`derived_rows.experience_rows`);
    `card_texts` holds the text of each card by session key, for a card's code window."""
    if row["kind"] == CODE_WINDOW:
        return code_window(card_texts.get(str(row["session_key"]), ""))
    text = str(row["text"])
    return (task_of(text) or text) if row["kind"] == "card" else text


class Reembedder:
    """Embeds again, `batch` rows at a time, every vector another encoder wrote, then gives
    each coding card that shows a change and has no code window vector one; started with the
    writing side's threads (`start`), it stops once nothing is owed."""

    def __init__(self, store: Store, embedder: Embedder, max_tokens: int, code_window_tokens: int,
                 write: Callable[[WriteOp], None], writing: Callable[[str], None], batch: int = 32,
                 pause_s: float = 0.05) -> None:
        """`max_tokens` and `code_window_tokens`: what the writer reads of an item and of a
        card's code window (`config.Embedding`); `write` commits a write (`store.writer`);
        `writing(session_key)` is told before each session's rows are written (the writer's
        state cache lets go of them)."""
        self.store = store
        self.embedder = embedder
        self.max_tokens = max_tokens
        self.code_window_tokens = code_window_tokens
        self._write = write
        self._writing = writing
        self.batch = batch
        self.pause_s = pause_s
        self.embedded = 0  # rows embedded again by this process
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._missing: list[str] | None = None  # cards found with no code window vector, not yet looked at

    def start(self) -> None:
        """Start the thread, which looks for work and stops once it finds none."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="codemem-reembedder", daemon=True)
            self._thread.start()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def run_once(self) -> int:
        """Embed one batch again; how many rows it found to embed (0: none is left). Another
        process may have embedded some of them meanwhile: those are left alone."""
        found = self.store.other_vectors(self.batch)
        if not found:
            return 0
        sessions = sorted({str(r["session_key"]) for r in found})
        with self.store.locks.sessions(sessions):
            # Read again under the sessions' locks: an Add may have rebuilt a card meanwhile.
            rows = self.store.other_vectors(len(found), ids=[str(r["id"]) for r in found])
            if not rows:
                return len(found)
            card_texts = self._card_texts(rows)
            jobs = [(r, vector_input(r, card_texts),
                     self.code_window_tokens if r["kind"] == CODE_WINDOW else self.max_tokens) for r in rows]
            embedded: dict[tuple[int, str], tuple[np.ndarray, str]] = {}
            for tokens in {t for _, text, t in jobs if text and t}:
                texts = list(dict.fromkeys(text for _, text, t in jobs if text and t == tokens))
                keys = self.embedder.fingerprints(texts, tokens)
                embedded.update(zip(((tokens, t) for t in texts),
                                    zip(self.embedder.embed(texts, tokens), keys, strict=True), strict=True))
            out = []
            for r, text, tokens in jobs:
                if (tokens, text) not in embedded:  # a code window with no card, or none wanted now
                    out.append(Row(**r))  # written with no vector
                    continue
                vector, key = embedded[(tokens, text)]
                row = Row(**r, vector=vector)
                if row.kind != "message":  # a derived row keeps the fingerprint of what it read
                    row.metadata = _ENCODER.encode(msgspec.json.decode(row.metadata) | {"vec": key}).decode()
                out.append(row)
            for session_key in sessions:
                self._writing(session_key)
            self._write(Revector(out))
        self.embedded += len(out)
        return len(found)

    def _card_texts(self, rows: list[dict[str, Any]]) -> dict[str, str]:
        """The text of the cards whose code window is among `rows`, by session key."""
        ids = [card_id(str(r["session_key"])) for r in rows if r["kind"] == CODE_WINDOW]
        if not ids:
            return {}
        found = self.store.rows(f"id IN ({id_list(ids)})", ["session_key", "text"])
        return {str(r["session_key"]): str(r["text"]) for r in found}

    def add_card_windows(self) -> int:
        """Give a batch of the cards that showed a change and had no code window vector when
        this thread looked one; how many it took (0: none is left)."""
        if not self.code_window_tokens:
            return 0
        if self._missing is None:
            self._missing = self.store.cards_without_window()
        sessions = sorted(self._missing[-self.batch:])
        del self._missing[-self.batch:]
        if not sessions:
            return 0
        with self.store.locks.sessions(sessions):
            # Read again under the sessions' locks: an Add may have rebuilt them meanwhile.
            held = {str(r["session_key"]) for r in self.store.rows(
                f"kind = '{CODE_WINDOW}' AND session_key IN ({id_list(sessions)})", ["session_key"])}
            cards = [r for r in self.store.rows(f"id IN ({id_list([card_id(k) for k in sessions])})",
                                                [n for n in self.store.schema.names if n not in _NO_ROW])
                     if str(r["session_key"]) not in held]
            windows = [(r, window) for r in cards if (window := code_window(str(r["text"])))]
            texts = [window for _, window in windows]
            vectors = self.embedder.embed(texts, self.code_window_tokens)
            keys = self.embedder.fingerprints(texts, self.code_window_tokens)
            rows = []
            for (card, _), vector, key in zip(windows, vectors, keys, strict=True):
                row = code_window_row(Row(**card))
                row.vector, row.metadata = vector, _ENCODER.encode({"vec": key}).decode()
                rows.append(row)
            for session_key in sessions:
                self._writing(session_key)
            if rows:
                self._write(Upsert(rows))
        self.embedded += len(rows)
        return len(sessions)

    def _run(self) -> None:
        for step in (self.run_once, self.add_card_windows):
            while not self._stop.is_set():
                try:
                    if not step():
                        break
                except Exception:  # noqa: BLE001 - tried again after a pause; Searches are unaffected
                    log.exception("re-embedding failed; trying again")
                    self._stop.wait(5.0)
                self._stop.wait(self.pause_s)
        if self.embedded:
            log.info("embedded %d vectors again with %s", self.embedded, self.embedder.name)
