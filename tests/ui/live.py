"""The app served for a real browser: uvicorn on a free loopback port, in a thread."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

import uvicorn

from api.app import create_app
from codemem.config import Settings
from codemem.memory import Memory
from tests.server import free_port


@contextlib.contextmanager
def serving(settings: Settings, memory: Memory) -> Iterator[str]:
    """The app over `memory` until the block ends; yields its URL once it accepts requests."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(settings, memory=memory), host="127.0.0.1", port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not server.started:
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
