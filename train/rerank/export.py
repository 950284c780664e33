"""Export a trained cross-encoder to the ONNX graph codemem ships, int8-quantised.

Writes ``model.onnx`` (int8, dynamic quantisation of the linear layers), ``model-fp32.onnx``
(the float graph, to compare) and ``tokenizer.json``: the folder a deployment names in
``CODEMEM_RERANK_MODEL``.

    python -m train.rerank.export --model model/ --out model/onnx
"""

from __future__ import annotations

import argparse
import shutil
import warnings
from pathlib import Path

INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", type=Path, required=True, help="the directory train.py saved")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--fp32", type=Path, default=None, help="where the float graph goes (default: beside --model)")
    args = p.parse_args()

    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    net = AutoModelForSequenceClassification.from_pretrained(str(args.model), attn_implementation="eager").eval()
    tok = AutoTokenizer.from_pretrained(str(args.model))

    class Logit(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = net

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                    token_type_ids: torch.Tensor) -> torch.Tensor:
            return self.net(input_ids=input_ids, attention_mask=attention_mask,
                            token_type_ids=token_type_ids).logits

    dummy = tok(["a task"], ["## Task\na card"], return_tensors="pt")
    fp32 = args.fp32 or args.model / "model-fp32.onnx"
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(Logit(), tuple(dummy[n] for n in INPUTS), str(fp32), input_names=list(INPUTS),
                          output_names=["logit"], dynamic_axes={n: {0: "batch", 1: "tokens"} for n in INPUTS},
                          opset_version=17, dynamo=False)
    args.out.mkdir(parents=True, exist_ok=True)
    quantize_dynamic(str(fp32), str(args.out / "model.onnx"), weight_type=QuantType.QInt8)
    shutil.copy(args.model / "tokenizer.json", args.out / "tokenizer.json")
    print(f"wrote {args.out / 'model.onnx'} ({(args.out / 'model.onnx').stat().st_size / 1e6:.1f} MB) and {fp32}")


if __name__ == "__main__":
    main()
