"""Vectors written by another encoder, embedded again in the background.

A store records which encoder wrote each vector (`codemem/store/schema.py`), and reads only
its own encoder's (`Store.current_vectors`): once a release ships a new encoder, every
vector written before it is read as none, and its row is found by BM25 and references
alone until this thread has embedded it again. Searches go on answering meanwhile; the
thread takes a few dozen rows at a time and pauses between them, so it never holds a core
for long.

What a row's vector reads is what the writer embedded: a message's or a step's text, and a
card's task (`render.task_of`, the task as the card shows it; the card's whole text where it
has none). A card whose task was longer than its card's task section is embedded from that
section's head; its next rebuild (an Add to its session) embeds the task itself again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import msgspec

from codemem.encoders import Embedder
from codemem.experience.building.render import task_of
from codemem.store.lance import Store
from codemem.store.schema import Row
from codemem.store.writer import Revector

log = logging.getLogger(__name__)

_ENCODER = msgspec.json.Encoder()


def vector_input(row: dict[str, Any]) -> str:
    """What the writer embedded for this stored row (`derived_rows.experience_rows`)."""
    text = str(row["text"])
    return (task_of(text) or text) if row["kind"] == "card" else text


class Reembedder:
    """Embeds again, `batch` rows at a time, every vector another encoder wrote; started by
    the writing side when its store holds any (`start`), it stops once none is left."""

    def __init__(self, store: Store, embedder: Embedder, max_tokens: int, write: Callable[[Revector], None],
                 writing: Callable[[str], None], batch: int = 32, pause_s: float = 0.05) -> None:
        """`write` commits a `Revector`; `writing(session_key)` is told before each session's
        rows are written (the writer's state cache lets go of them)."""
        self.store = store
        self.embedder = embedder
        self.max_tokens = max_tokens
        self._write = write
        self._writing = writing
        self.batch = batch
        self.pause_s = pause_s
        self.embedded = 0  # rows embedded again by this process
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> bool:
        """Start the thread where the store holds another encoder's vectors; whether it did."""
        if self._thread is not None or self.store.other_vector_count() == 0:
            return False
        log.info("re-embedding %d vectors of another encoder with %s", self.store.other_vector_count(),
                 self.embedder.name)
        self._thread = threading.Thread(target=self._run, name="codemem-reembedder", daemon=True)
        self._thread.start()
        return True

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
            inputs = [vector_input(r) for r in rows]
            vectors = self.embedder.embed(inputs, self.max_tokens)
            keys = self.embedder.fingerprints(inputs, self.max_tokens)
            out = []
            for r, vector, key in zip(rows, vectors, keys, strict=True):
                row = Row(**r, vector=vector)
                if row.kind != "message":  # a derived row keeps the fingerprint of what it read
                    row.metadata = _ENCODER.encode(msgspec.json.decode(row.metadata) | {"vec": key}).decode()
                out.append(row)
            for session_key in sessions:
                self._writing(session_key)
            self._write(Revector(out))
        self.embedded += len(out)
        return len(found)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                if not self.run_once():
                    log.info("re-embedding done: %d vectors", self.embedded)
                    return
            except Exception:  # noqa: BLE001 - tried again after a pause; Searches are unaffected
                log.exception("re-embedding failed; trying again")
                self._stop.wait(5.0)
            self._stop.wait(self.pause_s)
