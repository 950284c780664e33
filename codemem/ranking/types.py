"""What ranking works on: plain values, whichever store produced them."""

from __future__ import annotations

import msgspec


class Candidate(msgspec.Struct):
    """One item as a retriever returned it, with that retriever's raw score."""

    id: str
    score: float
    fields: dict[str, object]  # the store's candidate columns from a retriever, result columns from a read by id
