"""`make setup` installs without pip's bytecode and compiles what codemem imports
(`cli.bytecode`): every module a cold `codemem search` (the hook's, at each prompt) loads
must be among those, or a service user who may not write the virtualenv would compile it
at every run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from codemem.config import Settings
from codemem.contract.types import AddRequest, Message
from codemem.encoders import ShippedEmbedder
from codemem.memory import Memory

ROOT = Path(__file__).resolve().parents[2]

# A cold `codemem search` that prints, as it exits, every source file it loaded.
SEARCH_LISTING = """
import sys
from cli.main import main
code = main(sys.argv[1:])
from cli.bytecode import loaded_sources
print("\\n".join(map(str, loaded_sources())), file=sys.stderr)
sys.exit(code)
"""

def _python(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODEMEM_")}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def test_setup_compiles_every_module_a_cold_search_loads(tmp_path: Path, embedder: ShippedEmbedder) -> None:
    data = str(tmp_path / "data")
    with Memory(Settings().replace({"storage.data_dir": data, "maintenance.interval_s": 0}), embedder=embedder) as m:
        m.add(AddRequest("r1", "dev", "sess-1", [
            Message("user", "The release build fails in ci/build_release.sh: ld cannot find -lssl"),
            Message("assistant", "Added libssl-dev to ci/Dockerfile; ci/build_release.sh links again."),
        ]))
    listed = _python("-m", "cli.bytecode", "--list", cwd=ROOT)
    assert listed.returncode == 0, listed.stderr[-3000:]
    compiled = set(listed.stdout.split())
    assert any("/lance/" in f for f in compiled) and any("/onnxruntime/" in f for f in compiled)

    searched = _python("-c", SEARCH_LISTING, "search", "--data-dir", data, "--user-id", "dev", "ci/build_release.sh fails: ld cannot find -lssl",
                       cwd=tmp_path)
    assert searched.returncode == 0, searched.stderr[-3000:]
    assert "#1  The release build fails" in searched.stdout
    loaded = {line for line in searched.stderr.splitlines() if line.endswith(".py")}
    assert len(loaded) > 300  # the listing ran: the search loads LanceDB, ONNX Runtime, the ranker
    assert loaded - compiled == set()
