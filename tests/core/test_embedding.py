"""The packaged encoder (an ONNX graph run by ONNX Runtime) gives sentence-transformers'
vectors, one text or a batch, is what `make train`'s export of the installed weights writes,
refuses a graph that does not give its probe vector, and needs no torch."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from codemem.encoders import EncoderUnavailable, PackagedEmbedder, ShippedEmbedder
from codemem.encoders import packaged as embedding
from codemem.encoders.onnx_graph import PROBE, PROBE_TOKENS
from train.encoder.export import model_dir, reference_vectors
from train.provenance import file_sha256

ROOT = Path(__file__).resolve().parents[2]
TEXTS = [
    "QuerySet.bulk_create() crashes with a TypeError when ignore_conflicts=True",
    "Traceback (most recent call last):\n  File \"django/db/models/query.py\", line 512, in bulk_create\n" * 30,
    "ü 🙂 日本語 \x00 tabs\tand\nnewlines",
    "x",
    "fix the panic in the printer " * 5,
    "",
]


@pytest.fixture(scope="module")
def sentence_transformer():  # noqa: ANN201 - sentence_transformers.SentenceTransformer
    """The reference: sentence-transformers over the weights the graph was exported from."""
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(model_dir()), device="cpu")


def test_vectors_equal_sentence_transformers_one_text_and_batched(embedder: ShippedEmbedder, sentence_transformer) -> None:
    """Each text alone (a query) and all in padded batches (an Add's cards) keep their own
    vectors, in the order given, at every length the service reads."""
    for max_tokens in (16, 64, 256):
        reference = reference_vectors(sentence_transformer, [embedding._prefix_for_tokenizer(t, max_tokens) for t in TEXTS],
                                      max_tokens)
        alone = np.vstack([embedder.embed([t], max_tokens) for t in TEXTS])
        assert alone.dtype == np.float32 and alone.shape == (len(TEXTS), 384)
        assert np.abs(alone - reference).max() < 1e-5
        assert np.abs(embedder.embed(TEXTS, max_tokens) - reference).max() < 1e-5
        clipped = [embedding._prefix_for_tokenizer(t, max_tokens) for t in TEXTS]
        assert np.abs(embedder.load().embed_many(clipped, max_tokens, batch=2) - reference).max() < 1e-5
    assert embedder.load()._tokenizer.padding is None  # type: ignore[attr-defined]  # off again for one text


def test_the_packaged_files_are_the_export_of_the_installed_weights(sentence_transformer) -> None:
    """The shipped probe vector is sentence-transformers' own, and the card names the sha256
    of the weights installed with the `train` extra (a new weights package needs a new export)."""
    probe = np.load(embedding.SHIPPED_DIR / "probe.npy")
    assert np.abs(probe - reference_vectors(sentence_transformer, [PROBE], PROBE_TOKENS)[0]).max() < 1e-6
    card = json.loads((embedding.SHIPPED_DIR / "card.json").read_text())
    assert card["weights"]["sha256"] == file_sha256(model_dir() / "model.safetensors")
    assert card["largest_difference_from_sentence_transformers"] < 1e-5


def _fresh_load(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    monkeypatch.setattr(embedding, "_ENCODERS", {})
    PackagedEmbedder(folder).load()


def test_a_graph_that_does_not_give_its_probe_vector_or_is_missing_is_refused(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Vectors no other process would give are never written: the encoder refuses to load,
    and the error says why."""
    wrong = tmp_path / "wrong"
    shutil.copytree(embedding.SHIPPED_DIR, wrong)
    np.save(wrong / "probe.npy", -np.load(embedding.SHIPPED_DIR / "probe.npy"))
    with pytest.raises(EncoderUnavailable, match="probe vector differs"):
        _fresh_load(monkeypatch, wrong)
    (wrong / "model.onnx").unlink()
    with pytest.raises(EncoderUnavailable, match="cannot load the encoder graph"):
        _fresh_load(monkeypatch, wrong)


SERVE = """
import json, sys
from codemem.encoders import ShippedEmbedder
e = ShippedEmbedder()
before = e.query_path
e.warm()
e.embed(["one query"], 64); e.embed(["two", "cards"], 256); e.fingerprints(["a card"], 256)
print(json.dumps([before, e.query_path, sorted({"torch", "transformers", "sentence_transformers"} & set(sys.modules))]))
"""


def test_embedding_imports_no_torch() -> None:
    """What serving runs (warm-up, a query, a batch, fingerprints) imports neither torch nor
    transformers: they are the `train` extra's, absent from `make serve`'s environment."""
    done = subprocess.run([sys.executable, "-c", SERVE], capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env=os.environ | {"PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == ["loading", "onnx", []]


def test_the_embedder_setting_names_a_packaged_encoder_or_a_folder_and_nothing_else(tmp_path: Path) -> None:
    """`CODEMEM_EMBEDDER` names a folder of `models/` or an encoder's folder: its card's name is
    what the store records, its probe's length its dimensions; anything else is refused with
    the choices, before any store is opened."""
    from codemem.encoders import make_embedder

    packaged = make_embedder("minilm")
    assert (packaged.name, packaged.dim) == (ShippedEmbedder().name, ShippedEmbedder().dim)
    other = tmp_path / "other"
    shutil.copytree(embedding.SHIPPED_DIR, other)
    card = json.loads((other / "card.json").read_text())
    (other / "card.json").write_text(json.dumps(card | {"encoder": "codemem/minilm-reports-0123abcd"}))
    by_folder = make_embedder(str(other))
    assert (by_folder.name, by_folder.dim) == ("codemem/minilm-reports-0123abcd", 384)
    assert np.allclose(by_folder.embed(["a query"], 64), packaged.embed(["a query"], 64), atol=1e-6)
    with pytest.raises(ValueError, match=r"unknown embedder 'bert'.*'minilm'"):
        make_embedder("bert")
    with pytest.raises(ValueError, match="unknown embedder"):
        make_embedder(str(tmp_path / "nowhere"))
