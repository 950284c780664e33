"""The encoder's training: its ONNX export (`export.py`), the change pairs (`pairs.py`) and
written reports (`written_reports.py`) it is fine-tuned on (`finetune.py`), and the screens
that decided the route (`*_trial.py`)."""

from __future__ import annotations

import os
from pathlib import Path

from codemem.config import Embedding, Settings
from codemem.encoders import Embedder, make_embedder


def chosen_encoder() -> str:
    """The encoder a `make train` step builds with (the `embedding.model` setting of every memory
    it writes and searches): the one `CODEMEM_EMBEDDER` names in the step's environment
    (`train.steps`: a packaged encoder's name or an encoder's folder in the cache), else the
    service's default. No other `CODEMEM_*` variable of the caller's reaches a step's memories."""
    return os.environ.get("CODEMEM_EMBEDDER") or Embedding().model


def chosen_embedder(threads: int = 1) -> Embedder:
    """The embedder of `chosen_encoder()`, for what a step embeds outside a memory (the question
    and decision readers' texts)."""
    return make_embedder(chosen_encoder(), threads)


def step_settings(data_dir: Path) -> Settings:
    """A `make train` step's memory: the product's settings, its data in `data_dir`, embedded by
    `chosen_encoder()`, less the background compactor. Its rounds land wherever the clock puts
    them between Adds and Searches, and a Search's BM25 scores depend on them: two runs of the
    same 150-task replay differed in 4,232 of 5,447 candidates' features (11 queries'
    candidates). A replay runs the same round itself every `COMPACT_EVERY` sessions instead
    (`train.ranker.build_data`), so a step gives the same data every time."""
    return Settings().replace({"storage.data_dir": str(data_dir), "maintenance.interval_s": 0,
                               "embedding.model": chosen_encoder()})
