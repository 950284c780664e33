"""Response bodies of the Add/Search contract. Request bodies are the core's own Structs
(`codemem.contract.types.AddRequest`, `SearchRequest`), which already mirror the contract."""

from __future__ import annotations

import msgspec

from codemem.contract.types import Hit


class AddResponse(msgspec.Struct):
    success: bool
    request_id: str
    user_id: str
    session_id: str


class SearchResponse(msgspec.Struct):
    data: list[Hit]


class DeleteResponse(msgspec.Struct):
    user_id: str
    deleted: int


class HealthResponse(msgspec.Struct):
    status: str
    model_loaded: bool
    query_embedding: str  # "onnx", or "loading" before the encoder is in
    encoder: str  # the encoder whose vectors Searches compare (`Embedder.name`)
    reembedding: bool  # whether vectors another encoder wrote are being embedded again
    # The store as this process sees it; None when it could not be read just now.
    fragments: int | None
    small_fragments: int | None
    unindexed_rows: int | None
    compactions: int

