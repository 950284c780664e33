"""An encoder's forward pass run by ONNX Runtime, from a graph shipped as package data.

The graph (the transformer, mean pooling, normalisation) is exported from torch by `make
train` (`train/encoder/export.py`), checked there against sentence-transformers, and shipped
with its tokenizer and the reference vector of a probe text. The service loads it with ONNX
Runtime and the `tokenizers` library alone: torch is never installed for serving. On loading,
the graph must give the probe's reference vector, so a damaged file, or a runtime that computes
something else, stops the encoder with a clear error instead of writing vectors no other
process would give.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from onnxruntime import InferenceSession
    from tokenizers import Tokenizer

INPUTS = ("input_ids", "attention_mask", "token_type_ids")
PROBE = "QuerySet.filter(None) raises TypeError in django/db/models/query.py " * 8
PROBE_TOKENS = 256
_TOLERANCE = 1e-5  # largest difference per component accepted from the reference (seen: 3e-7)


class EncoderUnavailable(RuntimeError):
    """The packaged graph cannot be used: missing, unreadable, or not giving its probe vector."""


class OnnxEncoder:
    """Mean-pooled, normalised sentence vectors, one text at a time or in padded batches."""

    def __init__(self, session: InferenceSession, tokenizer: Tokenizer) -> None:
        """`tokenizer`: without padding (enabled for a batch only)."""
        self._session = session
        self._tokenizer = tokenizer
        self._lock = threading.Lock()  # a `tokenizers.Tokenizer`'s truncation and padding are its state

    @classmethod
    def load(cls, graph_path: Path, tokenizer_path: Path, threads: int) -> OnnxEncoder:
        """The encoder of the graph at `graph_path` (read by path: ONNX Runtime then reads the
        file itself, which is faster than from bytes)."""
        try:
            import onnxruntime
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_file(str(tokenizer_path))
            tokenizer.no_padding()
            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            options.log_severity_level = 3
            session = onnxruntime.InferenceSession(str(graph_path), options, providers=["CPUExecutionProvider"])
        except Exception as e:  # noqa: BLE001 - what failed is named in the error
            raise EncoderUnavailable(f"cannot load the encoder graph {graph_path}: {e}") from e
        return cls(session, tokenizer)

    def check(self, reference: np.ndarray) -> None:
        """Raise `EncoderUnavailable` unless this encoder gives `reference` for the probe text."""
        drift = float(np.abs(self.embed_one(PROBE, PROBE_TOKENS) - reference).max())
        if drift > _TOLERANCE:
            raise EncoderUnavailable(f"the encoder graph's probe vector differs from its reference by {drift:.2g}")

    def embed_one(self, text: str, max_tokens: int) -> np.ndarray:
        return self._session.run(None, self._features([text], max_tokens))[0][0]

    def embed_many(self, texts: list[str], max_tokens: int, batch: int = 16) -> np.ndarray:
        """One vector per text, in order: texts of like length are padded and run together
        (the mask keeps padding out of the mean, so each vector is the one `embed_one` gives)."""
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out: np.ndarray | None = None
        for start in range(0, len(order), batch):
            idx = order[start: start + batch]
            vectors = self._session.run(None, self._features([texts[i] for i in idx], max_tokens))[0]
            if out is None:
                out = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
            out[idx] = vectors
        return out if out is not None else np.zeros((0, 0), dtype=np.float32)

    def token_ids(self, texts: list[str], max_tokens: int) -> list[list[int]]:
        """Each text's token ids as the model reads them (cut to `max_tokens`, special
        tokens included)."""
        tokenizer = self._tokenizer
        with self._lock:
            tokenizer.enable_truncation(max_tokens)
            return [list(e.ids) for e in tokenizer.encode_batch(texts)]

    def _features(self, texts: list[str], max_tokens: int) -> dict[str, np.ndarray]:
        """The graph's inputs for `texts`, each cut to `max_tokens`, padded to the longest."""
        tokenizer = self._tokenizer
        with self._lock:
            tokenizer.enable_truncation(max_tokens)
            if len(texts) == 1:  # a query: nothing to pad
                encodings = [tokenizer.encode(texts[0])]
            else:
                tokenizer.enable_padding()
                try:
                    encodings = tokenizer.encode_batch(texts)
                finally:
                    tokenizer.no_padding()
        return {name: np.asarray([getattr(e, attr) for e in encodings], dtype=np.int64)
                for name, attr in zip(INPUTS, ("ids", "attention_mask", "type_ids"), strict=True)}
