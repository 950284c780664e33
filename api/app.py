"""`create_app()`: the Litestar application, wired in a few small steps."""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib.metadata import version as package_version

from litestar import Litestar
from litestar.config.app import AppConfig
from litestar.exceptions import HTTPException, ValidationException
from litestar.openapi import OpenAPIConfig

from api import metrics, ui
from api.admission import Admission, ByteBudget
from api.errors import handle_core_error, handle_http, handle_unexpected, handle_validation
from api.logs import access_log
from api.memoryarena import MemoryArenaController, MemoryArenaSettings
from api.routes import MemoryController, health
from codemem.config import Settings
from codemem.errors import CodememError
from codemem.memory import Memory

log = logging.getLogger("codemem.api")

# How long a thread that wants the GIL waits before it asks the holder to let go (Python's
# default: 5 ms). An Add's parsing is pure Python on worker threads; the event loop, which
# answers /health, needs the GIL a few dozen times per request and waited its 5 ms behind
# each of them: /health p95 0.75 s under 32 large Adds. At 0.5 ms, 0.21 s, and the Adds took
# no longer (eval.load.proxy, one run each, docs/deploy.md).
GIL_SWITCH_INTERVAL_S = 0.0005


def create_app(settings: Settings | None = None, memory: Memory | None = None,
               memoryarena: MemoryArenaSettings | None = None) -> Litestar:
    """The app over `memory` (or a Memory built from `settings` at start-up, closed at shutdown).
    Settings not given are read from the environment."""
    settings = settings or Settings.from_env()
    memoryarena = memoryarena or MemoryArenaSettings.from_env()
    owned = memory is None

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
        mem = memory or Memory(settings)
        mem.start()  # a server writes: its compactor runs from start-up, not from the first Add
        app.state.memory = mem
        app.state.api_key = settings.server.api_key
        app.state.memoryarena = memoryarena
        app.state.admission = {
            "add": Admission("add", settings.limits.max_inflight_adds, settings.server.add_threads),
            "search": Admission("search", settings.limits.max_inflight_searches, settings.server.search_threads),
        }
        app.state.add_bytes = ByteBudget(settings.limits.max_add_bytes_inflight)
        app.state.ui_answers = ui.Answers()
        metrics.STORE.memory, metrics.STORE.admission = mem, app.state.admission
        metrics.STORE.add_bytes = app.state.add_bytes
        # Load the model in the background: /health answers at once, the first Add waits.
        warming = threading.Thread(target=mem.warm_up, name="codemem-warmup", daemon=True)
        warming.start()
        try:
            yield
        finally:
            # A stop that comes while the model loads waits for it: a thread left inside
            # ONNX Runtime's native code as the interpreter exits aborts the process.
            warming.join()
            if owned:
                mem.close()

    return Litestar(
        route_handlers=[health, MemoryController, MemoryArenaController, metrics.MetricsController,
                        ui.router(settings.server.api_key), ui.static_router()],
        template_config=ui.template_config(),
        middleware=[access_log, metrics.prometheus().middleware],
        lifespan=[lifespan],
        exception_handlers={
            CodememError: handle_core_error,
            ValidationException: handle_validation,
            HTTPException: handle_http,
            Exception: handle_unexpected,
        },
        request_max_body_size=settings.limits.max_body_bytes,
        openapi_config=OpenAPIConfig(title="codemem", version=package_version("codemem"), path="/schema"),
        on_app_init=[_configure_logging(settings)],
        debug=False,
        logging_config=None,  # logging is configured once, by `serve` (api/logs.py)
    )


def _configure_logging(settings: Settings):  # type: ignore[no-untyped-def]
    def configure(config: AppConfig) -> AppConfig:
        logging.getLogger("codemem").setLevel(settings.server.log_level.upper())
        return config

    return configure
