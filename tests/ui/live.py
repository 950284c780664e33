"""The app served for a real browser: uvicorn on a free loopback port, in a thread."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from api.app import create_app
from api.threaded import served
from codemem.config import Settings
from codemem.memory import Memory
from tests.server import free_port


@contextlib.contextmanager
def serving(settings: Settings, memory: Memory) -> Iterator[str]:
    """The app over `memory` until the block ends; yields its URL once it accepts requests."""
    app = create_app(settings, memory=memory)
    with served(app, host="127.0.0.1", port=free_port(), log_level="warning") as (host, port):
        yield f"http://{host}:{port}"
