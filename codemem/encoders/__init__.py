"""What turns text into vectors: the encoders, each with its name (what the store records
beside every vector it wrote), its dimensions, and its ONNX form.

A vector is only ever compared with vectors of the encoder that wrote it: the store keeps
the writer of each (`codemem/store/schema.py`), a Search reads only the current encoder's
vectors, and a store written by another encoder of the same dimensions is re-embedded in the
background (`codemem/writing/reembedder.py`).

Importing this package loads no model: sentence-transformers takes seconds to import, so it
is imported on first use, never at module import, and start-up paths that do not embed (the
CLI's help, `purge`) stay fast.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from codemem.encoders.minilm import MINILM_DIM, MINILM_NAME, MiniLMEmbedder, query_encoder_path

__all__ = ["MINILM_DIM", "MINILM_NAME", "Embedder", "MiniLMEmbedder", "make_embedder", "query_encoder_path"]


class Embedder(Protocol):
    name: str
    dim: int

    @property
    def loaded(self) -> bool: ...

    @property
    def query_path(self) -> str:
        """What embeds a query now: "onnx", "torch", or "loading" before the model is in."""
        ...

    def load(self) -> object: ...

    def warm(self) -> None:
        """Load everything a long-lived process wants ready before its first request."""
        ...

    def ready(self) -> bool:
        """Whether texts can be embedded now, without waiting for the model to load."""
        ...

    def warm_queries(self) -> bool:
        """Make queries fast without loading the model where that can be had (a cached query
        encoder); whether it could."""
        ...

    def embed(self, texts: list[str], max_tokens: int) -> np.ndarray:
        """Unit-normalised float32 vectors, one row per text, reading at most max_tokens each."""
        ...

    def fingerprints(self, texts: list[str], max_tokens: int) -> list[str]:
        """Keys equal exactly when the model would read the same input, so vectors can be reused."""
        ...


def make_embedder(name: str, threads: int = 1, onnx_queries: bool = True) -> Embedder:
    """The embedder named by the `embedder` setting."""
    choices = {"minilm": MiniLMEmbedder}
    try:
        return choices[name](threads=threads, onnx_queries=onnx_queries)
    except KeyError:
        raise ValueError(f"unknown embedder {name!r}; choose one of {sorted(choices)}") from None
