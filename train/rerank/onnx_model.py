"""An exported cross-encoder run with ONNX Runtime: how related a past experience is to a task.

The retrievers and their fusion judge similarity one side at a time; a reranker reads the
task and an experience's card together and scores their relatedness. It runs an ONNX graph
with its tokenizer (`model.onnx` and `tokenizer.json` in one folder, as
`train/rerank/export.py` writes them) through ONNX Runtime: no torch and no download at
query time, loaded on first use, once per folder and process.

Used by `evaluate.py` here. No model ships with codemem: the one trained so far (MiniLM
fine-tuned on public repositories' histories, README.md) put the gold experience first for
11% of the dev tasks against 66% without it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
# The length the model was trained at (task and card share it, the longer cut first).
MAX_TOKENS = 160


class Reranker:
    """Relatedness scores (logits: higher is more related) of cards to one query."""

    def __init__(self, model_dir: Path, threads: int = 1) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        missing = [name for name in (MODEL_FILE, TOKENIZER_FILE) if not (model_dir / name).is_file()]
        if missing:
            raise FileNotFoundError(f"reranker folder {model_dir} has no {' or '.join(missing)}")
        self._tokenizer = Tokenizer.from_file(str(model_dir / TOKENIZER_FILE))
        self._tokenizer.enable_truncation(MAX_TOKENS, strategy="longest_first")
        self._tokenizer.enable_padding()
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self._session = onnxruntime.InferenceSession(
            str(model_dir / MODEL_FILE), options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}

    def score(self, query: str, cards: Sequence[str]) -> np.ndarray:
        if not cards:
            return np.zeros(0, dtype=np.float32)
        encoded = self._tokenizer.encode_batch([(query, card) for card in cards])
        feed = {
            "input_ids": np.array([e.ids for e in encoded], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encoded], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encoded], dtype=np.int64),
        }
        logits = self._session.run(None, {k: v for k, v in feed.items() if k in self._inputs})[0]
        return np.asarray(logits, dtype=np.float32).reshape(len(cards))

