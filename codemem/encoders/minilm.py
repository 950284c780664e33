"""all-MiniLM-L6-v2 as this package ships it: its ONNX graph, tokenizer and probe vector in
`models/minilm/` (exported from torch by `make train`, `train/encoder/export.py`), run by ONNX
Runtime. Serving needs no torch: it is installed only by the `train` extra."""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

import numpy as np

from codemem.encoders.onnx_graph import OnnxEncoder

MINILM_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MINILM_DIM = 384
MODEL_DIR = Path(__file__).resolve().parent / "models" / "minilm"

_LOAD_LOCK = threading.Lock()
_ENCODER: list[OnnxEncoder] = []  # the process's one encoder, once loaded and checked


def _load(threads: int, wait: bool = True) -> OnnxEncoder | None:
    """The process's encoder, loaded and checked against its probe vector once, however many
    embedders use it (None without `wait` while another thread loads it)."""
    if _ENCODER:
        return _ENCODER[0]
    if not _LOAD_LOCK.acquire(blocking=wait):
        return None
    try:
        if not _ENCODER:
            encoder = OnnxEncoder.load(MODEL_DIR / "model.onnx", MODEL_DIR / "tokenizer.json", threads)
            encoder.check(np.load(MODEL_DIR / "probe.npy"))
            _ENCODER.append(encoder)
        return _ENCODER[0]
    finally:
        _LOAD_LOCK.release()


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from this package's own files (no hub access, no torch)."""

    name = MINILM_NAME
    dim = MINILM_DIM

    def __init__(self, threads: int = 1) -> None:
        # One intra-op thread by default: with two, a single query's latency swings by an
        # order of magnitude whenever anything else wants a core.
        self.threads = threads

    @property
    def loaded(self) -> bool:
        return bool(_ENCODER)

    @property
    def query_path(self) -> str:
        """"onnx" once the encoder is loaded, "loading" before."""
        return "onnx" if _ENCODER else "loading"

    def load(self) -> OnnxEncoder:
        """The loaded, checked encoder (`EncoderUnavailable` where the packaged graph cannot be
        used: that is an installation fault, named in the error)."""
        encoder = _load(self.threads)
        assert encoder is not None  # waited for
        return encoder

    def warm(self) -> None:
        self.load()

    def ready(self) -> bool:
        """Whether texts can be embedded now: loaded here unless another thread is loading
        it (never waited for: an Add whose card cannot be embedded now stores it without a
        vector, embedded when its session goes quiet)."""
        return _load(self.threads, wait=False) is not None

    def embed(self, texts: list[str], max_tokens: int) -> np.ndarray:
        """Unit-normalised float32 vectors, one row per text, each read to `max_tokens`; a
        single text (a query) runs unpadded, several in batches of like length."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        encoder = self.load()
        clipped = [_prefix_for_tokenizer(t, max_tokens) for t in texts]
        if len(clipped) == 1:
            return encoder.embed_one(clipped[0], max_tokens).reshape(1, self.dim).astype(np.float32)
        return encoder.embed_many(clipped, max_tokens)

    def fingerprints(self, texts: list[str], max_tokens: int) -> list[str]:
        """Tokenising is far cheaper than a forward pass; a card whose first max_tokens
        tokens did not change keeps its vector."""
        if not texts:
            return []
        clipped = [_prefix_for_tokenizer(t, max_tokens) for t in texts]
        return [_fingerprint(ids) for ids in self.load().token_ids(clipped, max_tokens)]


def _prefix_for_tokenizer(text: str, max_tokens: int) -> str:
    """Characters beyond ~8 per token can never reach the model: cut before tokenising."""
    return text[: max_tokens * 8]


def _fingerprint(token_ids: list[int]) -> str:
    return hashlib.blake2b(np.asarray(token_ids, dtype=np.int32).tobytes(), digest_size=16).hexdigest()
