"""Embedding through ONNX Runtime (one text, or a batch) gives torch's vectors, and is really used."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from codemem.encoders import MINILM_NAME, MiniLMEmbedder
from codemem.encoders import minilm as embedding

ROOT = Path(__file__).resolve().parents[2]
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


def test_batches_run_on_onnx_padded_and_in_order(embedder: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    """Texts of unlike lengths padded into one batch (and split over several) keep their own
    vectors, in the order given, from the exported graph and from the cached one."""
    from codemem.encoders.onnx_graph import OnnxEncoder

    torch_only = MiniLMEmbedder(onnx_queries=False)
    texts = [*TEXTS, "x", "fix the panic in the printer " * 5, ""]
    reference = torch_only.embed(texts, 64)
    exported = embedding._ONNX[MINILM_NAME]
    assert exported is not None
    cached = OnnxEncoder.load(embedding.query_encoder_path(), embedding._model_dir() / "tokenizer.json", 1)
    assert cached is not None  # the tokenizers.Tokenizer path: padding enabled for the batch only
    clipped = [embedding._prefix_for_tokenizer(t, 64) for t in texts]
    for encoder in (exported, cached):
        for batch in (2, 16):
            assert np.abs(encoder.embed_many(clipped, 64, batch=batch) - reference).max() < 1e-5
    assert cached._tokenizer.padding is None  # type: ignore[attr-defined]  # off again for one text
    # Memory's batches go through the encoder, not torch.
    monkeypatch.setattr(MiniLMEmbedder, "_torch_embed", lambda *a: pytest.fail("a batch ran on torch"))
    assert np.abs(embedder.embed(texts, 64) - reference).max() < 1e-5


WARM = """
import sys
from codemem.encoders import MiniLMEmbedder
e = MiniLMEmbedder()
e.warm()
print(e.loaded, e.query_path, "torch" in sys.modules)
"""


def _warm_in_new_process(cache: Path) -> str:
    done = subprocess.run([sys.executable, "-c", WARM], capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env=os.environ | {"PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(cache)})
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_server_warms_up_on_the_cached_encoder_without_torch(embedder: MiniLMEmbedder, tmp_path: Path) -> None:
    """A new server process takes up the cached encoder, checked against the probe vector
    torch gave at its export, and never imports torch (whose import held the GIL from the
    Adds a new server was answering); a cache whose saved probe vector it does not give is
    not trusted: torch is loaded, and the encoder checked and saved again."""
    graph = embedding.query_encoder_path()
    probe = graph.with_name(graph.name + ".probe.npy")
    assert graph.is_file() and probe.is_file()  # the fixture's warm-up exported and saved both
    assert _warm_in_new_process(Path(os.environ["XDG_CACHE_HOME"])) == "True onnx False"

    cache = tmp_path / "cache"
    copied = embedding.query_encoder_path({"XDG_CACHE_HOME": str(cache)})
    copied.parent.mkdir(parents=True)
    shutil.copy(graph, copied)
    wrong = copied.with_name(copied.name + ".probe.npy")
    np.save(wrong, -np.load(probe))
    assert _warm_in_new_process(cache) == "True onnx True"
    assert np.abs(np.load(wrong) - np.load(probe)).max() < 1e-5  # checked against torch, saved again
