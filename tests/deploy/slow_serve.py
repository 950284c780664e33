"""`python -m tests.deploy.slow_serve serve ...`: the real `codemem serve`, except that an Add
whose request_id starts with `slow-` takes `CODEMEM_TEST_SLOW_ADD_S` seconds longer, spent
where a long Add spends its time: holding its session's lock, before anything is stored.
It stands for an Add that outlasts a proxy's timeout (a large chunk on a busy machine)."""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from cli.main import run
from codemem.contract.types import AddRequest
from codemem.writing.session_writer import SessionWriter

SLOW_S = float(os.environ.get("CODEMEM_TEST_SLOW_ADD_S", "0"))
_rows = SessionWriter._message_rows


def _slow_rows(self: SessionWriter, req: AddRequest, *args: Any) -> Any:
    if req.request_id.startswith("slow-"):
        time.sleep(SLOW_S)
    return _rows(self, req, *args)


if __name__ == "__main__":
    SessionWriter._message_rows = _slow_rows  # type: ignore[method-assign]
    sys.argv[0] = "codemem"
    run()
