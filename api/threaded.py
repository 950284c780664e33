"""The app served by uvicorn in a thread of this process, for as long as a block runs: what
`make setup`'s warm-up (`cli.bytecode`) and the tests that need a real socket (a browser,
HTTPS) serve it with."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import uvicorn
from litestar import Litestar


@contextlib.contextmanager
def served(app: Litestar, start_timeout_s: float = 30.0, **options: Any) -> Iterator[tuple[str, int]]:
    """`app` served with uvicorn's `options` (port 0: a free one) until the block ends; yields
    the host and port it listens on once it accepts connections. A server that stops or has not
    started within `start_timeout_s` is an error."""
    server = uvicorn.Server(uvicorn.Config(app, **options))
    thread = threading.Thread(target=server.run, name="codemem-served", daemon=True)
    thread.start()
    deadline = time.monotonic() + start_timeout_s
    try:
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.02)
        host, port = server.servers[0].sockets[0].getsockname()[:2]
        yield host, port
    finally:
        server.should_exit = True
        thread.join(timeout=60)
