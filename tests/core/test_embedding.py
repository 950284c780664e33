"""One-text embedding through ONNX Runtime gives torch's vectors, and is really used."""

from __future__ import annotations

import numpy as np

from codemem import embedding
from codemem.embedding import MINILM_NAME, MiniLMEmbedder

TEXTS = [
    "QuerySet.bulk_create() crashes with a TypeError when ignore_conflicts=True",
    "Traceback (most recent call last):\n  File \"django/db/models/query.py\", line 512, in bulk_create\n" * 30,
    "ü 🙂 日本語 \x00 tabs\tand\nnewlines",
]


def test_one_text_vectors_equal_torch_and_come_from_onnx(embedder: MiniLMEmbedder) -> None:
    assert embedder.onnx_queries and embedding._ONNX.get(MINILM_NAME) is not None  # no silent fallback
    torch_only = MiniLMEmbedder(onnx_queries=False)
    for max_tokens in (64, 256):
        onnx = np.vstack([embedder.embed([t], max_tokens) for t in TEXTS])
        reference = np.vstack([torch_only.embed([t], max_tokens) for t in TEXTS])
        assert onnx.dtype == np.float32 and onnx.shape == (len(TEXTS), 384)
        assert np.abs(onnx - reference).max() < 1e-5
    # A batch (an Add's cards and steps) still runs on torch, and agrees too.
    assert np.abs(embedder.embed(TEXTS, 64) - torch_only.embed(TEXTS, 64)).max() < 1e-5
