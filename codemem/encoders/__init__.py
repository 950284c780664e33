"""What turns text into vectors: the encoders, each with its name (what the store records
beside every vector it wrote), its dimensions, and its ONNX graph, shipped in `models/` and
run by ONNX Runtime (no torch at run time).

A vector is only ever compared with vectors of the encoder that wrote it: the store keeps
the writer of each (`codemem/store/schema.py`), a Search reads only the current encoder's
vectors, and a store written by another encoder of the same dimensions is re-embedded in the
background (`codemem/writing/reembedder.py`).

Importing this package loads no model: ONNX Runtime and the graph are loaded on first use,
so start-up paths that do not embed (the CLI's help, `purge`) stay fast.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from codemem.encoders.onnx_graph import EncoderUnavailable
from codemem.encoders.packaged import PackagedEmbedder, ShippedEmbedder, packaged_folder

__all__ = ["Embedder", "EncoderUnavailable", "PackagedEmbedder", "ShippedEmbedder", "make_embedder"]


class Embedder(Protocol):
    name: str
    dim: int

    @property
    def loaded(self) -> bool: ...

    @property
    def query_path(self) -> str:
        """What embeds a query now: "onnx", or "loading" before the encoder is in."""
        ...

    def load(self) -> object: ...

    def warm(self) -> None:
        """Load the encoder now rather than on the first request (`EncoderUnavailable` where
        it cannot be)."""
        ...

    def ready(self) -> bool:
        """Whether texts can be embedded now, without waiting for the encoder to load."""
        ...

    def embed(self, texts: list[str], max_tokens: int) -> np.ndarray:
        """Unit-normalised float32 vectors, one row per text, reading at most max_tokens each."""
        ...

    def fingerprints(self, texts: list[str], max_tokens: int) -> list[str]:
        """Keys equal exactly when the model would read the same input, so vectors can be reused."""
        ...


def make_embedder(name: str, threads: int = 1) -> Embedder:
    """The embedder named by the `embedder` setting (`CODEMEM_EMBEDDER`): a packaged encoder by
    its folder's name in `models/`, or the path of an encoder's folder (`packaged_folder`)."""
    return PackagedEmbedder(packaged_folder(name), threads=threads)
