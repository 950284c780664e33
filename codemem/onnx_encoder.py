"""The embedding model's forward pass for one text, run by ONNX Runtime.

A Search embeds one short text, and on one CPU core torch's eager mode spends much of that
on per-operator overhead: ONNX Runtime runs the same graph at 64 tokens in 21 ms against
35 ms (measured on the related-task queries). The graph is exported from the loaded model
at start-up, in memory (about 2 s), and checked against torch on a probe text: a vector
that differs (the export of torch's fused attention did, by up to 0.07 per component) means
no ONNX path, never a different vector. Batches (an Add's cards and steps) stay on torch.
"""

from __future__ import annotations

import copy
import io
import logging
import warnings
from collections.abc import Callable
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

    def __init__(self, session: object, tokenizer: object) -> None:
        self._session = session
        self._tokenizer = tokenizer

    @classmethod
    def export(cls, model: SentenceTransformer, threads: int,
               reference: Callable[[str, int], np.ndarray]) -> OnnxEncoder | None:
        """An encoder equivalent to `model`, whose torch vectors `reference(text, max_tokens)`
        gives, or None (logged) where that cannot be had."""
        try:
            encoder = cls(_session(_export(model), threads), model.tokenizer)
            drift = float(np.abs(encoder.embed_one(_PROBE, 256) - reference(_PROBE, 256)).max())
        except Exception:  # noqa: BLE001 - torch serves every query then
            log.warning("ONNX query encoder unavailable; queries are embedded by torch", exc_info=True)
            return None
        if drift > _TOLERANCE:
            log.warning("ONNX query encoder differs from torch by %.2g; queries are embedded by torch", drift)
            return None
        return encoder

    def embed_one(self, text: str, max_tokens: int) -> np.ndarray:
        features = self._tokenizer([text], truncation=True, max_length=max_tokens, return_tensors="np")  # type: ignore[operator]
        feed = {name: features[name].astype(np.int64) for name in _INPUTS}
        return self._session.run(None, feed)[0][0]  # type: ignore[attr-defined]


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


def _session(graph: bytes, threads: int) -> object:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(graph, options, providers=["CPUExecutionProvider"])

