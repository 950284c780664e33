"""Where eval and the tests find things: the one definition of the shared data path.

The shared data sits beside the repository (`../shared/data`, read-only; CI clones it
there too). `CODEMEM_SHARED_DATA` points elsewhere (the folder that holds
`swe-contextbench-lite/`). codemem never imports this module; tests/ and eval/ do.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
RESULTS = REPO_ROOT / "eval" / "results"
SHARED_DATA = Path(os.environ.get("CODEMEM_SHARED_DATA") or REPO_ROOT.parent / "shared" / "data")
SWE_LITE = SHARED_DATA / "swe-contextbench-lite"
SWE_LITE_TAR = SWE_LITE / "trajectories.tar.xz"
