"""A step for `test_encoder_ship.py`: writes the encoder variable it was run with to `--out`."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    out = ap.parse_args().out
    out.mkdir(parents=True, exist_ok=True)
    (out / "encoder.txt").write_text(os.environ.get("CODEMEM_EMBEDDER", ""))
