"""The embedding model's forward pass for one text, run by ONNX Runtime.

A Search embeds one short text, and on one CPU core torch's eager mode spends much of that
on per-operator overhead, which ONNX Runtime running the same graph does not. The graph is
exported from the loaded model at start-up, in memory, and checked against torch on a probe
text: a vector that differs (the export of torch's fused attention did) means no ONNX path,
never a different vector. Batches (an Add's cards and steps, an import's cards) run on the
same checked graph (`embed_many`), for less CPU than torch's batches, and the import's
converter process embeds with it, without torch (``codemem/importers/git.py``).

A checked export is also saved to a cache file keyed by the model's files, with torch's
vector of the probe text beside it, so any later process (a server's start included) loads it
with ONNX Runtime and the `tokenizers` library alone and checks it against that saved vector,
with no torch import, whose seconds would hold the GIL from the requests a new server is
already answering.
"""

from __future__ import annotations

import copy
import io
import logging
import os
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

log = logging.getLogger(__name__)

_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_PROBE = "QuerySet.filter(None) raises TypeError in django/db/models/query.py " * 8
_TOLERANCE = 1e-5  # largest difference per component accepted from the export (seen: 3e-7)


class OnnxEncoder:
    """Mean-pooled, normalised sentence vectors for one text at a time."""

    def __init__(self, session: object, tokenizer: object, graph: bytes | None = None) -> None:
        """`tokenizer`: a transformers tokenizer, or a `tokenizers.Tokenizer` (cached path)."""
        self._session = session
        self._tokenizer = tokenizer
        self._graph = graph
        self._lock = threading.Lock()  # a `tokenizers.Tokenizer`'s truncation is its state
        self._reference: np.ndarray | None = None  # torch's probe vector, once checked against it

    @classmethod
    def export(cls, model: SentenceTransformer, threads: int,
               reference: Callable[[str, int], np.ndarray]) -> OnnxEncoder | None:
        """An encoder equivalent to `model`, whose torch vectors `reference(text, max_tokens)`
        gives, or None (logged) where that cannot be had."""
        try:
            graph = _export(model)
            encoder = cls(_session(graph, threads), model.tokenizer, graph)
        except Exception:  # noqa: BLE001 - torch serves every query then
            log.warning("ONNX query encoder unavailable; queries are embedded by torch", exc_info=True)
            return None
        return encoder if encoder.matches(reference) else None

    @classmethod
    def load(cls, graph_path: Path, tokenizer_path: Path, threads: int) -> OnnxEncoder | None:
        """The encoder a checked export saved at `graph_path`, or None where there is none or
        it cannot be read; needs neither torch nor transformers."""
        if not graph_path.is_file():
            return None
        try:
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_file(str(tokenizer_path))
            tokenizer.no_padding()
            # By path, not bytes: ONNX Runtime then reads the file itself, which is faster.
            return cls(_session(str(graph_path), threads), tokenizer)
        except Exception:  # noqa: BLE001 - a damaged cache: exported again where torch is loaded
            log.warning("cached ONNX query encoder %s unreadable", graph_path, exc_info=True)
            return None

    def matches_saved(self, graph_path: Path) -> bool:
        """Whether this encoder gives the probe vector that torch gave when the graph at
        `graph_path` was exported and checked (False where none was saved with it)."""
        try:
            saved = np.load(_reference_path(graph_path))
        except (OSError, ValueError):
            return False
        return self.matches(lambda text, max_tokens: saved)

    def matches(self, reference: Callable[[str, int], np.ndarray]) -> bool:
        """Whether this encoder gives torch's vector on the probe text (logged when not)."""
        try:
            expected = reference(_PROBE, 256)
            drift = float(np.abs(self.embed_one(_PROBE, 256) - expected).max())
        except Exception:  # noqa: BLE001 - torch serves every query then
            log.warning("ONNX query encoder unavailable; queries are embedded by torch", exc_info=True)
            return False
        if drift > _TOLERANCE:
            log.warning("ONNX query encoder differs from torch by %.2g; queries are embedded by torch", drift)
            return False
        self._reference = expected
        return True

    def save(self, path: Path) -> None:
        """Keep the exported graph, and the probe vector it was checked against, for
        processes that will not load torch (atomic writes; a failure is logged and costs
        only the next process's torch load)."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if self._graph is not None:
                tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
                tmp.write_bytes(self._graph)
                os.replace(tmp, path)
            if self._reference is not None:  # after the graph: a reference never names an older one
                probe = _reference_path(path)
                tmp = probe.with_name(f"{probe.name}.{os.getpid()}.tmp")
                with open(tmp, "wb") as f:
                    np.save(f, self._reference)
                os.replace(tmp, probe)
        except OSError:
            log.warning("could not cache the ONNX query encoder at %s", path, exc_info=True)

    def embed_one(self, text: str, max_tokens: int) -> np.ndarray:
        return self._session.run(None, self._features([text], max_tokens))[0][0]  # type: ignore[attr-defined]

    def embed_many(self, texts: list[str], max_tokens: int, batch: int = 16) -> np.ndarray:
        """One vector per text, in order: texts of like length are padded and run together
        (the mask keeps padding out of the mean, so each vector is the one `embed_one` gives)."""
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out: np.ndarray | None = None
        for start in range(0, len(order), batch):
            idx = order[start: start + batch]
            vectors = self._session.run(None, self._features([texts[i] for i in idx], max_tokens))[0]  # type: ignore[attr-defined]
            if out is None:
                out = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
            out[idx] = vectors
        return out if out is not None else np.zeros((0, 0), dtype=np.float32)

    def token_ids(self, texts: list[str], max_tokens: int) -> list[list[int]]:
        """Each text's token ids as the model reads them (cut to `max_tokens`, special
        tokens included): what torch's tokenizer gives, without torch."""
        tokenizer: Any = self._tokenizer
        if hasattr(tokenizer, "enable_truncation"):  # tokenizers.Tokenizer
            with self._lock:
                tokenizer.enable_truncation(max_tokens)
                return [list(e.ids) for e in tokenizer.encode_batch(texts)]
        return [list(ids) for ids in tokenizer(texts, truncation=True, max_length=max_tokens)["input_ids"]]

    def _features(self, texts: list[str], max_tokens: int) -> dict[str, np.ndarray]:
        """The graph's inputs for `texts`, each cut to `max_tokens`, padded to the longest."""
        tokenizer: Any = self._tokenizer
        if hasattr(tokenizer, "enable_truncation"):  # tokenizers.Tokenizer
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
                    for name, attr in zip(_INPUTS, ("ids", "attention_mask", "type_ids"), strict=True)}
        features = tokenizer(texts, padding=True, truncation=True, max_length=max_tokens, return_tensors="np")
        return {name: features[name].astype(np.int64) for name in _INPUTS}


def _reference_path(graph_path: Path) -> Path:
    """Where torch's probe vector is kept beside a saved graph."""
    return graph_path.with_name(graph_path.name + ".probe.npy")


def _export(model: SentenceTransformer) -> bytes:
    import torch

    bert: torch.nn.Module = copy.deepcopy(model[0].auto_model).eval()  # type: ignore[union-attr]
    # torch's fused attention (sdpa) exports to a graph whose vectors drift; eager matches.
    for module in bert.modules():
        if hasattr(module, "config"):
            config: Any = module.config
            config._attn_implementation = "eager"

    class MeanPooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                    token_type_ids: torch.Tensor) -> torch.Tensor:
            tokens = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                               token_type_ids=token_type_ids).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(tokens.dtype)
            mean = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, p=2, dim=1)

    dummy = model.tokenizer([_PROBE], truncation=True, max_length=64, return_tensors="pt")
    buffer = io.BytesIO()
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the tracer's notes on shapes it treats as constants
        torch.onnx.export(
            # A file-like target works (the legacy exporter writes bytes); the stub names paths only.
            MeanPooled(), tuple(dummy[name] for name in _INPUTS), buffer,  # type: ignore[arg-type]
            input_names=list(_INPUTS),
            output_names=["vector"], dynamic_axes={name: {0: "batch", 1: "tokens"} for name in _INPUTS},
            opset_version=17, dynamo=False,
        )
    return buffer.getvalue()


def _session(graph: bytes | str, threads: int) -> object:
    """An inference session over a graph given as bytes or a file's path."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(graph, options, providers=["CPUExecutionProvider"])

