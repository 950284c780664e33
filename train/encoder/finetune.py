"""`make train`'s `encoder-tuned` step: all-MiniLM-L6-v2 fine-tuned on written reports and the
changes that fixed them, exported as an ONNX graph the service loads like the packaged one
(issue 55, item 2; the screen that chose this route: `finetune_trial.py`).

The pairs are each written report (`reports.jsonl`, from `BRIEF-reports.md`) with its change's
code window, and with its change's message, as the git import renders them (`pairs.py`, the
`pairs` step); a report that shares an 8-word run with a validation text is left out. The
training is the screen's (`FineTuning`: in-batch negatives, one epoch, batch 32, lr 2e-5),
fixed before its first score. The graph is exported and checked against sentence-transformers
as the packaged one is (`export.write_encoder`).

    python -m train.encoder.finetune --pairs PAIRS.jsonl --reports train/encoder/reports.jsonl --out DIR

Writes to DIR the four files of an encoder's folder (`codemem/encoders/packaged.py`); its card
names it `codemem/minilm-reports-<sha256 of the graph, 8 digits>`, so that a store written by
other weights is re-embedded (`codemem/writing/reembedder.py`).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from codemem.config import Embedding
from eval._paths import SHARED_DATA
from train.content_check import validation_texts
from train.encoder.export import (
    SOURCE_PACKAGE,
    ExportRefused,
    exporting_libraries,
    model_dir,
    write_encoder,
)
from train.encoder.pairs import fresh
from train.provenance import file_sha256, tree_state

NAME = "codemem/minilm-reports"


@dataclass(frozen=True)
class FineTuning:
    """How the encoder is fine-tuned (fixed before the screen's first score, not tuned on it)."""

    epochs: int = 1
    batch: int = 32
    lr: float = 2e-5
    warmup: float = 0.1  # of the steps, linear
    scale: float = 20.0  # cosine similarities times this are the logits
    query_tokens: int = Embedding().query_max_tokens  # as the service reads a query
    document_tokens: int = Embedding().code_window_tokens  # and a code window
    seed: int = 0


def training_pairs(reports: list[dict], pairs: list[dict]) -> list[tuple[str, str]]:
    """(report, code window) and (report, message) for every report whose change is in `pairs`."""
    by_change = {(p["repo"], p["sha"][:12]): p for p in pairs}
    out: list[tuple[str, str]] = []
    for r in reports:
        p = by_change.get((r["repo"], r["sha"][:12]))
        if p is not None:
            out += [(r["report"], p["code"]), (r["report"], p["message"])]
    return out


def fine_tune(pairs: list[tuple[str, str]], cfg: FineTuning, log: Any = print) -> Any:
    """The packaged model fine-tuned on `pairs` (a SentenceTransformer, on the CPU)."""
    import torch
    from sentence_transformers import SentenceTransformer

    torch.manual_seed(cfg.seed)
    model = SentenceTransformer(str(model_dir()), device="cpu")
    model.train()
    rng = random.Random(cfg.seed)
    steps = cfg.epochs * -(-len(pairs) // cfg.batch)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    warm = max(1, int(steps * cfg.warmup))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warm, max(0.0, (steps - s) / max(1, steps - warm))))

    def vectors(texts: list[str], tokens: int) -> torch.Tensor:
        features = model.tokenizer(texts, padding=True, truncation=True, max_length=tokens, return_tensors="pt")
        return torch.nn.functional.normalize(model(dict(features))["sentence_embedding"], dim=1)

    started, done = time.monotonic(), 0
    for _ in range(cfg.epochs):
        order = list(range(len(pairs)))
        rng.shuffle(order)
        for start in range(0, len(order), cfg.batch):
            batch = [pairs[i] for i in order[start: start + cfg.batch]]
            # A report paired twice in one batch (with its window and its message) is not its own negative.
            q = vectors([a for a, _ in batch], cfg.query_tokens)
            d = vectors([b for _, b in batch], cfg.document_tokens)
            logits = q @ d.T * cfg.scale
            same = torch.tensor([[a == a2 and i != j for j, (a2, _) in enumerate(batch)] for i, (a, _) in enumerate(batch)])
            logits = logits.masked_fill(same, float("-inf"))
            loss = torch.nn.functional.cross_entropy(logits, torch.arange(len(batch)))
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            done += 1
            if done % 10 == 0 or done == steps:
                log(f"step {done}/{steps}: loss {loss.item():.3f}, {time.monotonic() - started:.0f} s")
    model.eval()
    return model




def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m train.encoder.finetune", description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=Path, required=True, help="train.encoder.pairs output")
    ap.add_argument("--reports", type=Path, required=True, help="train/encoder/reports.jsonl")
    ap.add_argument("--shared", type=Path, default=SHARED_DATA, help="the shared data folder (validation texts)")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    at = tree_state()
    cfg = FineTuning()
    log = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    pairs = [json.loads(line) for line in args.pairs.open()]
    reports = [json.loads(line) for line in args.reports.open()]
    kept, copied = fresh([{**r, "message": r["report"]} for r in reports], validation_texts(shared=args.shared))
    train = training_pairs(kept, pairs)
    paired = len(train) // 2
    log(f"{len(train)} pairs from {paired} of {len(reports)} reports ({len(copied)} left out as copies of "
        f"validation text, {len(kept) - paired} whose change the pairs lack)")
    if paired < len(kept) * 0.95:
        log(f"refusing to train: the pairs hold the changes of only {paired} of {len(kept)} reports "
            "(were the histories fetched at another commit?)")
        return 1

    started = time.monotonic()
    model = fine_tune(train, cfg, log)
    seconds = time.monotonic() - started
    try:
        drift = write_encoder(model, model_dir() / "tokenizer.json", args.out)
    except ExportRefused as e:
        log(str(e))
        return 1
    graph = file_sha256(args.out / "model.onnx")
    card = {
        "encoder": f"{NAME}-{graph[:8]}",
        "form": "ONNX (opset 17): the transformer, mean pooling over the attention mask, L2 normalisation",
        "weights": {"base": SOURCE_PACKAGE, "base_sha256": file_sha256(model_dir() / "model.safetensors"),
                    "graph_sha256": graph,
                    "licence": "Apache-2.0 (sentence-transformers/all-MiniLM-L6-v2, fine-tuned here)"},
        "fine_tuned": asdict(cfg) | {"seconds": round(seconds), "pairs": len(train), "reports": paired,
                                     "reports_left_out_as_copies_of_validation_text": len(copied),
                                     "histories": sorted({r["repo"] for r in kept}),
                                     "reports_sha256": file_sha256(args.reports)},
        "exported_with": exporting_libraries(),
        "largest_difference_from_sentence_transformers": drift,
        "trained_on": {"commit": at["commit"], "clean_tree": at["clean_tree"],
                       "note": "written reports (train/encoder/reports.jsonl) and the changes that fixed them, "
                               "of train.encoder.pairs.ENCODER_HISTORIES: no evaluation or relevance-model repository"},
    }
    (args.out / "card.json").write_text(json.dumps(card, indent=1) + "\n")
    print(json.dumps({k: card[k] for k in ("encoder", "largest_difference_from_sentence_transformers")} | {"seconds": round(seconds)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
