"""The LanceDB table layout and the typed row that fills it.

Only hex digests (`user_key`, `session_key`, `request_key`) and integers are ever placed
in a filter expression, so a hostile `user_id` can never change what a query selects.
"""

from __future__ import annotations

import hashlib

import msgspec
import numpy as np
import pyarrow as pa

ITEMS_TABLE = "items"
# 2: each row names the encoder that wrote its vector (`encoder`); 1 named one, in META_MODEL.
SCHEMA_VERSION = "2"
META_MODEL = b"codemem.embedding_model"  # the encoder the table was created with
META_DIM = b"codemem.embedding_dim"
META_SCHEMA = b"codemem.schema_version"


def key_of(*parts: str) -> str:
    """A stable hex key for a tuple of strings (NUL-separated, so ("a", "bc") != ("ab", "c"))."""
    return hashlib.sha256("\x00".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:32]


class Row(msgspec.Struct):
    """One stored item: a raw message, an experience card or a step record."""

    id: str
    user_key: str
    user_id: str
    session_key: str
    session_id: str
    request_key: str
    kind: str
    position: int
    role: str
    text: str  # what is indexed (BM25 and vector) and returned for text-only items
    refs: str  # space-separated code-reference keys (files, symbols, errors) for exact matching
    content: str  # JSON of the original content parts when they are not plain text, else ""
    metadata: str  # JSON object
    created_at: int  # Unix ms when stored (what purging goes by)
    # The source's own time, Unix ms (what people and rankings see, `codemem/times.py`): a
    # message's timestamp as sent; a card's, its session's latest message's (a commit's date);
    # a step's, its message's. None: the source gave none.
    timestamp: int | None
    vector: np.ndarray | None = None  # float32, unit-normalised; None = not embedded


def items_schema(model: str, dim: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("user_key", pa.string(), nullable=False),
            pa.field("user_id", pa.string(), nullable=False),
            pa.field("session_key", pa.string(), nullable=False),
            pa.field("session_id", pa.string(), nullable=False),
            pa.field("request_key", pa.string(), nullable=False),
            pa.field("kind", pa.string(), nullable=False),
            pa.field("position", pa.int32(), nullable=False),
            pa.field("role", pa.string(), nullable=False),
            pa.field("text", pa.string(), nullable=False),
            pa.field("refs", pa.string(), nullable=False),
            pa.field("content", pa.large_string(), nullable=False),
            pa.field("metadata", pa.string(), nullable=False),
            pa.field("created_at", pa.int64(), nullable=False),
            pa.field("timestamp", pa.int64(), nullable=True),
            pa.field("has_vector", pa.bool_(), nullable=False),
            pa.field("vector", pa.list_(pa.float32(), dim), nullable=False),
            # The encoder that wrote `vector` (`Embedder.name`), read only where `has_vector`:
            # a vector is compared only with vectors of the same encoder.
            pa.field("encoder", pa.string(), nullable=False),
        ],
        metadata={META_MODEL: model.encode(), META_DIM: str(dim).encode(), META_SCHEMA: SCHEMA_VERSION.encode()},
    )


# The rows a session's build writes (its messages are stored as they came). A "code_window"
# row holds nothing but the second vector of its session's card, of the card's code window
# (`render.code_window`): no words (the card holds them, for BM25), never an item of an
# answer (a vector search reads it as its card, `Store.nearest`).
CODE_WINDOW = "code_window"
DERIVED_KINDS = ("card", "step", CODE_WINDOW)


def card_id(session_key: str) -> str:
    """The id of a session's card: one per session, replaced in place by each rebuild."""
    return "c_" + session_key[:24]


def code_window_id(session_key: str) -> str:
    """The id of the row holding the vector of a session's card's code window."""
    return "cw_" + session_key[:24]


# What the retrievers read of each candidate: enough to rank and group; the full row is
# fetched only for the items a Search returns.
CANDIDATE_COLUMNS = ["id", "session_key", "kind"]
# Columns a search reads back (everything but the vector).
RESULT_COLUMNS = [
    "id", "user_id", "session_id", "session_key", "kind", "position", "role", "text", "content",
    "metadata", "created_at", "timestamp",
]


def rows_to_table(rows: list[Row], schema: pa.Schema, encoder: str) -> pa.Table:
    """The rows as a table of `schema`, their vectors written by `encoder`."""
    dim = schema.field("vector").type.list_size
    arrays = []
    for field in schema:
        if field.name == "encoder":
            arrays.append(pa.array([encoder if r.vector is not None else "" for r in rows], pa.string()))
        elif field.name == "has_vector":
            arrays.append(pa.array([r.vector is not None for r in rows], pa.bool_()))
        elif field.name == "vector":
            flat = np.concatenate([_vector(r.vector, dim) for r in rows]) if rows else np.zeros(0, np.float32)
            arrays.append(pa.FixedSizeListArray.from_arrays(pa.array(flat, pa.float32()), dim))
        else:
            arrays.append(pa.array([getattr(r, field.name) for r in rows], field.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def _vector(v: np.ndarray | None, dim: int) -> np.ndarray:
    if v is None:
        return np.zeros(dim, dtype=np.float32)
    if v.shape != (dim,):
        raise ValueError(f"vector has shape {v.shape}, the table holds {dim} dimensions")
    return v.astype(np.float32, copy=False)
