"""What a cold process does not import: the store leaves LanceDB's REST namespace client
unbuilt, and that client still works, whole, for code that reads from it
(codemem/store/deferred_imports.py); a cold `codemem search` scores and explains with the
relevance model without lightgbm, which would bring scikit-learn and SciPy
(codemem/ranking/trees.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from codemem.config import Settings
from codemem.contract.types import AddRequest, Message
from codemem.encoders import ShippedEmbedder
from codemem.memory import Memory

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import sys
import codemem.store.lance
print(sorted(m for m in sys.modules if m.startswith('lance_namespace_urllib3_client.api')))
import lance_namespace_urllib3_client as client
print(client.TableApi.__module__, client.ApiClient.__name__, client.__version__ != '')
try:
    client.NoSuchThing
except AttributeError:
    print('AttributeError')
"""


def test_the_rest_client_is_built_only_when_read() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env=os.environ | {"PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "[]",  # lancedb and lance_namespace imported, the 366 REST methods not built
        "lance_namespace_urllib3_client.api.table_api ApiClient True",
        "AttributeError",
    ]


# The scientific stack `import lightgbm` pulls in where it is installed (it is, for training).
HEAVY = ("lightgbm", "sklearn", "scipy", "pandas")


def test_a_cold_search_ranks_without_lightgbm_or_its_imports(tmp_path: Path, embedder: ShippedEmbedder) -> None:
    data = str(tmp_path / "data")
    with Memory(Settings().replace({"storage.data_dir": data, "maintenance.interval_s": 0}), embedder=embedder) as m:
        m.add(AddRequest("r1", "dev", "sess-1", [Message("user", "Fix the IndexError in parse_hunk_header")]))
        m.add(AddRequest("r2", "dev", "sess-2", [Message("user", "Colour bar ticks overlap on a log axis")]))
    probe = (f"import sys; from cli.main import main; main(['search', '--data-dir', {data!r}, '--user-id', 'dev', "
             "'--json', 'IndexError in parse_hunk_header']); "
             f"print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})); "
             "print('codemem.ranking.trees' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env=os.environ | {"PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    answer, imported, scored = done.stdout.splitlines()
    assert json.loads(answer)["data"][0]["session_id"] == "sess-1"  # ranked by the model
    assert imported == "[]"
    assert scored == "True"
