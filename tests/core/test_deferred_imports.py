"""Importing the store leaves LanceDB's REST namespace client unbuilt, and that client still
works, whole, for code that reads from it (codemem/store/deferred_imports.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
