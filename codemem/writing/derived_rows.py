"""A session's derived rows: its experience card and step records, rebuilt as its messages
arrive.

The messages of one `session_id` may arrive over many Adds, in any chunk size. After an Add
the whole session is rebuilt from its stored messages plus the new ones, and written in the
same commit as the new messages (an upsert by id, so the card is replaced in place), so a
Search never sees a chunk without its card. Steps the new build no longer has are deleted
right after. Vectors of unchanged steps are reused, and unchanged steps are not rewritten: a
rebuild embeds and writes only what changed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import msgspec
import numpy as np

from codemem import times
from codemem.contract.types import Message
from codemem.encoders import Embedder
from codemem.experience.building.render import code_window
from codemem.experience.types import CONVERSATION, Experience
from codemem.store.schema import CODE_WINDOW, Row, card_id, code_window_id, key_of
from parsers import exact_terms

_ENCODER = msgspec.json.Encoder()

# Rebuilding reads and parses the whole session, so doing it on every Add of a session of
# thousands of messages is quadratic. Up to REBUILD_ALWAYS_UPTO messages it is done on every
# Add; past that, once the session has grown by REBUILD_GROWTH since the last build (linear
# total cost), and a background refresh catches up the rest once the session goes quiet.
REBUILD_ALWAYS_UPTO = 400
REBUILD_GROWTH = 0.25

def rebuild_due(total: int, built: int) -> bool:
    return total <= REBUILD_ALWAYS_UPTO or total - built >= REBUILD_GROWTH * built


def base_row(user_id: str, session_id: str, created_at: int) -> Row:
    """The fields every row of one session shares; derived rows are copies of it."""
    return Row(
        id="", user_key=key_of(user_id), user_id=user_id, session_key=key_of(user_id, session_id),
        session_id=session_id, request_key="", kind="", position=0, role="", text="", refs="",
        content="", metadata="{}", created_at=created_at, timestamp=None,
    )


class Derived(msgspec.Struct):
    """A session's new derived rows, and what they replace."""

    rows: list[Row]
    stale_ids: list[str]  # derived rows stored before that the new build no longer has
    replaces: bool  # the session had derived rows before (the card is updated in place)
    conversation: bool = False  # a session with no code work (`Experience.metadata[CONVERSATION]`)
    # The card kept its stored vector although its embedded text changed (`defer_untasked`):
    # a later rebuild (the session's quiet-time refresh) embeds it.
    vector_deferred: bool = False


def experience_rows(
    experience: Experience,
    base: Row,
    stored: list[dict[str, object]],
    embedder: Embedder,
    max_tokens: int,
    message_count: int,
    embed_steps: bool,
    vectors: dict[str, np.ndarray] | None = None,
    defer_untasked: bool = False,
    message_times: Sequence[int | None] = (),
    defer_vectors: bool = False,
    code_window_tokens: int = 0,
) -> Derived:
    """Rows for the card and steps of one session; `base` carries the ids and timestamps
    (the card's source time is `base.timestamp`), `stored` the session's derived rows before
    (their vectors are reused where unchanged). A step whose message has a time in
    `message_times` (by position) is dated at it, any other at the card's time.

    With `embed_steps` off only the card gets a vector and steps stay BM25- and
    reference-indexed: embedding every step would be most of an Add's cost. `vectors`
    (fingerprint -> vector) are embeddings a batch computed beforehand.

    A card with no task (no user text in the session yet: a stream that starts mid-session)
    embeds its whole text, which every Add changes; with `defer_untasked` it keeps its stored
    vector instead (`Derived.vector_deferred`), so such a session costs one embedding when it
    goes quiet rather than one per Add (a model pass over its whole text, as dear as the
    Add itself). With `defer_vectors` (the model is not
    loaded yet) nothing is embedded: the card keeps its stored vector, or has none, and the
    session's quiet-time refresh embeds it.

    With `code_window_tokens`, a coding card whose work changed code has a second vector, of
    its code window (`render.code_window`) read to that many tokens, on a row of its own
    (`schema.CODE_WINDOW`), written with the card."""
    card = experience.card
    conversation = bool(experience.metadata.get(CONVERSATION))
    # A conversation's card carries no coding fields: they would only say "none".
    coding: dict[str, object] = {} if conversation else {
        "edited_files": card.edited_files,
        "edited_symbols": card.edited_symbols,
        "tests_passed": card.tests_passed,
        "errors": card.errors[:10],
    }
    if card.mentioned_files:
        coding["mentioned_files"] = card.mentioned_files
    if card.merged:  # a merge's commits, for naming the ones a Search matched (`ranking/merged.py`)
        coding["merged"] = card.merged
    card_meta = {
        **coding,
        "outcome": card.outcome,
        "messages": message_count,
        "steps": len(experience.steps),
        **experience.metadata,
    }
    rows = [
        msgspec.structs.replace(
            base, id=card_id(base.session_key), kind="card", position=-1, role="assistant",
            text=card.text, refs=" ".join(experience.terms), metadata=_ENCODER.encode(card_meta).decode(),
        )
    ]
    for i, step in enumerate(experience.steps):
        meta = {"step": step.kind, "files": step.files, "symbols": step.symbols, "errors": step.errors[:5],
                **experience.metadata}
        refs = dict.fromkeys([*(t.lower() for t in (*step.files, *step.symbols)), *exact_terms(step.text)])
        at = message_times[step.position] if 0 <= step.position < len(message_times) else None
        rows.append(
            msgspec.structs.replace(
                base, id="st_" + key_of(base.session_key, str(i), step.kind)[:24], kind="step",
                position=step.position, role="assistant", text=step.text, refs=" ".join(refs),
                metadata=_ENCODER.encode(meta).decode(), timestamp=base.timestamp if at is None else at,
            )
        )
    # The card's vector reads the task alone: a later task is compared with earlier tasks,
    # and the task does not change as the session's chunks arrive, so it is embedded once.
    texts = [card.task or card.text] + ([st.text for st in experience.steps] if embed_steps else [])
    kept = _stored_card(stored) if defer_vectors or (defer_untasked and not card.task) else None
    if not defer_vectors and kept is not None and embedder.fingerprints(texts[:1], max_tokens)[0] == _vec_key(kept):
        kept = None  # the model's input did not change: its vector is reused below, none is owed
    if kept is not None:  # the card keeps its vector (and its fingerprint)
        rows[0].vector = np.asarray(kept["vector"], dtype=np.float32)
        rows[0].metadata = _ENCODER.encode(card_meta | {"vec": _vec_key(kept)}).decode()
    if not defer_vectors:  # the steps are embedded, and the card unless it kept its vector
        start = 0 if kept is None else 1
        _embed(rows[start: len(texts)], texts[start:], stored, embedder, max_tokens, vectors or {})
    written = rows[:1]
    if code_window_tokens and not conversation and (window := code_window(card.text)):
        written.append(_code_window(rows[0], window, stored, embedder, code_window_tokens, defer_vectors, vectors or {}))
    new_ids = {r.id for r in rows} | {r.id for r in written}
    stale = [str(r["id"]) for r in stored if r["id"] not in new_ids]
    return Derived(rows=written + _changed(rows[1:], stored), stale_ids=stale, replaces=bool(stored),
                   conversation=conversation, vector_deferred=defer_vectors or kept is not None)


def code_window_row(card: Row) -> Row:
    """The row that holds the vector of `card`'s code window, still without it: no words of
    its own (the card's are indexed once)."""
    return msgspec.structs.replace(card, id=code_window_id(card.session_key), kind=CODE_WINDOW, text="", refs="",
                                   metadata="{}", vector=None)


def _code_window(card: Row, window: str, stored: list[dict[str, object]], embedder: Embedder, max_tokens: int,
                 defer_vectors: bool, computed: dict[str, np.ndarray]) -> Row:
    """The row holding the vector of the card's code window `window`. While the model loads it
    keeps the vector stored before, if any."""
    row = code_window_row(card)
    if defer_vectors:
        before = next((r for r in stored if r["id"] == row.id and r.get("vector") is not None), None)
        if before is not None:
            row.vector = np.asarray(before["vector"], dtype=np.float32)
            row.metadata = _ENCODER.encode({"vec": _vec_key(before)}).decode()
        return row
    _embed([row], [window], stored, embedder, max_tokens, computed)
    return row


def _changed(steps: list[Row], stored: list[dict[str, object]]) -> list[Row]:
    """The step rows that are new or differ from their stored copy. A rebuild after an Add
    changes the last steps at most, and the store's merge costs by the rows it writes (a card
    with its steps about twice the card alone). Each step's metadata
    keeps a digest of what it stores (`h`) to compare with."""
    held = {r["id"]: msgspec.json.decode(str(r["metadata"])).get("h") for r in stored if r["kind"] == "step"}
    out = []
    for r in steps:
        meta = msgspec.json.decode(r.metadata)
        meta["h"] = hashlib.blake2b(_ENCODER.encode([r.text, r.refs, r.position, r.role, r.content, meta]),
                                    digest_size=8).hexdigest()
        r.metadata = _ENCODER.encode(meta).decode()
        if held.get(r.id) != meta["h"]:
            out.append(r)
    return out


def _stored_card(stored: list[dict[str, object]]) -> dict[str, object] | None:
    """The stored card row, when it has a vector."""
    return next((r for r in stored if r["kind"] == "card" and r.get("vector") is not None), None)


def _vec_key(row: dict[str, object]) -> object:
    """The fingerprint of the input the row's vector was embedded from (None: no vector)."""
    return msgspec.json.decode(str(row["metadata"])).get("vec")


def _embed(rows: list[Row], texts: list[str], stored: list[dict[str, object]], embedder: Embedder, max_tokens: int,
           computed: dict[str, np.ndarray]) -> None:
    """Set each row's vector to the embedding of its text in `texts`, reusing stored vectors
    wherever the model's input is unchanged (the fingerprint is kept in `metadata.vec`)."""
    # A stored row read back with no vector (none written, or another encoder's) offers none.
    known: dict[object, np.ndarray] = {
        _vec_key(r): np.asarray(r["vector"], dtype=np.float32) for r in stored if r.get("vector") is not None}
    known.update(computed)
    keys = embedder.fingerprints(texts, max_tokens)
    missing = {k: t for k, t in zip(keys, texts, strict=True) if k not in known}
    vectors = embedder.embed(list(missing.values()), max_tokens)
    known.update(zip(missing, vectors, strict=True))
    for key, r in zip(keys, rows, strict=True):
        r.vector = known[key]
        meta = msgspec.json.decode(r.metadata)
        meta["vec"] = key
        r.metadata = _ENCODER.encode(meta).decode()


def rebuild(
    embedder: Embedder,
    max_tokens: int,
    base: Row,
    stored: list[dict[str, object]],
    history: list[Message],
    new_messages: list[Message],
    embed_steps: bool,
    defer_untasked: bool = False,
    defer_vectors: bool = False,
    code_window_tokens: int = 0,
) -> Derived:
    """The session's card and step rows after `new_messages` join its `history`."""
    # Imported here: building an experience parses trajectories, which a search never does.
    from codemem.experience import build_experience

    messages = history + new_messages
    experience = build_experience(messages)
    stamps = [m.timestamp for m in messages]
    # The experience is as recent as its latest message (`codemem/times.py`).
    base = msgspec.structs.replace(base, timestamp=times.latest(stamps))
    return experience_rows(experience, base, stored, embedder, max_tokens, len(messages), embed_steps,
                           defer_untasked=defer_untasked, message_times=stamps, defer_vectors=defer_vectors,
                           code_window_tokens=code_window_tokens)
