"""The encoders this package ships, each a folder of `models/`: its ONNX graph
(`model.onnx`), tokenizer (`tokenizer.json`), the reference vector of a probe text
(`probe.npy`) and its card (`card.json`, whose `encoder` is the name the store records beside
every vector it wrote). All-MiniLM-L6-v2 (`models/minilm/`) is exported from its published
weights by `make train`'s `encoder` step; a fine-tuned one by its `encoder-tuned` step
(`train/encoder/`). Run by ONNX Runtime: serving needs no torch."""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path

import numpy as np

from codemem.config import SHIPPED_ENCODER
from codemem.encoders.onnx_graph import EncoderUnavailable, OnnxEncoder

MODELS = Path(__file__).resolve().parent / "models"
SHIPPED_DIR = MODELS / SHIPPED_ENCODER

_LOAD_LOCK = threading.Lock()
_ENCODERS: dict[Path, OnnxEncoder] = {}  # the process's encoder of each folder, once loaded and checked


def _load(folder: Path, threads: int, wait: bool = True) -> OnnxEncoder | None:
    """The process's encoder of `folder`, loaded and checked against its probe vector once,
    however many embedders use it (None without `wait` while another thread loads one)."""
    if (encoder := _ENCODERS.get(folder)) is not None:
        return encoder
    if not _LOAD_LOCK.acquire(blocking=wait):
        return None
    try:
        if folder not in _ENCODERS:
            encoder = OnnxEncoder.load(folder / "model.onnx", folder / "tokenizer.json", threads)
            encoder.check(np.load(folder / "probe.npy"))
            _ENCODERS[folder] = encoder
        return _ENCODERS[folder]
    finally:
        _LOAD_LOCK.release()


def card_of(folder: Path) -> dict:
    """The card of the encoder in `folder` (`EncoderUnavailable` where there is none)."""
    try:
        return json.loads((folder / "card.json").read_text())
    except (OSError, ValueError) as e:
        raise EncoderUnavailable(f"no readable encoder card in {folder}: {e}") from e


class PackagedEmbedder:
    """The encoder of one folder, from its own files (no hub access, no torch). Its name and
    dimensions are read from the folder (the card and the probe vector) without loading the
    graph, so that a store can be opened before the encoder is in."""

    def __init__(self, folder: Path, threads: int = 1) -> None:
        # One intra-op thread by default: with two, a single query's latency swings by an
        # order of magnitude whenever anything else wants a core.
        self.folder = folder.resolve()
        self.threads = threads
        self.name = str(card_of(self.folder)["encoder"])
        try:
            self.dim = int(np.load(self.folder / "probe.npy").shape[-1])
        except (OSError, ValueError) as e:
            raise EncoderUnavailable(f"no readable probe vector in {self.folder}: {e}") from e

    @property
    def loaded(self) -> bool:
        return self.folder in _ENCODERS

    @property
    def query_path(self) -> str:
        """"onnx" once the encoder is loaded, "loading" before."""
        return "onnx" if self.loaded else "loading"

    def load(self) -> OnnxEncoder:
        """The loaded, checked encoder (`EncoderUnavailable` where the packaged graph cannot be
        used: that is an installation fault, named in the error)."""
        encoder = _load(self.folder, self.threads)
        assert encoder is not None  # waited for
        return encoder

    def warm(self) -> None:
        self.load()

    def ready(self) -> bool:
        """Whether texts can be embedded now: loaded here unless another thread is loading
        one (never waited for: an Add whose card cannot be embedded now stores it without a
        vector, embedded when its session goes quiet)."""
        return _load(self.folder, self.threads, wait=False) is not None

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


class ShippedEmbedder(PackagedEmbedder):
    """The encoder the service embeds with by default (`codemem.config.SHIPPED_ENCODER`, its
    folder in `models/`): what the tests, the benchmarks and a store opened without a memory's
    settings use, whichever encoder that is."""

    def __init__(self, threads: int = 1) -> None:
        super().__init__(SHIPPED_DIR, threads)


def packaged_folder(name: str) -> Path:
    """The folder of the encoder `name`: one of `models/` by its folder's name ("minilm"), or
    the path of a folder holding an encoder's files (`make train` builds with one from its cache)."""
    folder = MODELS / name if "/" not in name and (MODELS / name / "card.json").is_file() else Path(name).expanduser()
    if not (folder / "card.json").is_file():
        shipped = sorted(p.name for p in MODELS.iterdir() if (p / "card.json").is_file())
        raise ValueError(f"unknown embedder {name!r}: choose one of {shipped}, or the path of a folder holding an "
                         "encoder's model.onnx, tokenizer.json, probe.npy and card.json")
    return folder


def _prefix_for_tokenizer(text: str, max_tokens: int) -> str:
    """Characters beyond ~8 per token can never reach the model: cut before tokenising."""
    return text[: max_tokens * 8]


def _fingerprint(token_ids: list[int]) -> str:
    return hashlib.blake2b(np.asarray(token_ids, dtype=np.int32).tobytes(), digest_size=16).hexdigest()
