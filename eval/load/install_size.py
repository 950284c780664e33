"""What `make setup` installs, measured on a clean clone of this checkout's HEAD: the size of
its virtualenv (LanceDB, ONNX Runtime, the service's libraries), of the service's own packages
beside it (an editable install: the encoder's graph and the other models are package data in
the checkout), the two together (`service_gb`, issue 55's target: at most 1 GB), and how long
it took.

    python -m eval.load.install_size [--out eval/results/install_size.json]

The README and docs/deploy.md quote the size. pip's cache makes a second install faster than
a first one over the network; the size is the same.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path

from cli.bytecode import PACKAGES  # what `make setup` installs from the checkout itself
from eval._paths import REPO_ROOT, RESULTS
from eval._provenance import provenance, write_result


def size_bytes(folder: Path) -> int:
    """Bytes of every file under `folder` (links counted once, as `du -sb` does)."""
    return int(subprocess.run(["du", "-sb", str(folder)], capture_output=True, text=True, check=True).stdout.split()[0])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=RESULTS / "install_size.json")
    args = ap.parse_args(argv)
    prov = provenance("eval.load.install_size", argv)
    with tempfile.TemporaryDirectory(prefix="codemem-install-") as tmp:
        clone = Path(tmp) / "codemem"
        subprocess.run(["git", "clone", "-q", str(REPO_ROOT), str(clone)], check=True)
        t0 = time.monotonic()
        subprocess.run(["make", "setup"], cwd=clone, check=True, capture_output=True)
        seconds = time.monotonic() - t0
        venv = size_bytes(clone / ".venv")
        packages = sum(size_bytes(clone / name) for name in PACKAGES)
        biggest = sorted(((size_bytes(p), p.name) for p in (clone / ".venv" / "lib").glob("python*/site-packages/*")
                          if p.is_dir()), reverse=True)[:8]
    result = {"service_gb": round((venv + packages) / 1e9, 3), "venv_gb": round(venv / 1e9, 3),
              "packages_mb": round(packages / 1e6), "setup_s": round(seconds, 1),
              "largest_packages_mb": {name: round(size / 1e6) for size, name in biggest}}
    write_result(args.out, result, prov)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
