"""How `codemem search` finds a running `codemem serve` over the same data directory.

A search that opens the store itself pays for LanceDB and the query encoder on every run;
a server already holds both and answers in milliseconds. So `codemem serve` leaves a small
file in its data directory naming its URL and process id, removed on shutdown (SIGTERM and
SIGINT included); a search uses the server when that process is alive and answers
`/health`, and opens the store itself otherwise: a file naming a dead process is taken as
absent (a server killed with SIGKILL cannot remove it).
Only local data directories have one: object storage is never "the same machine".
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import ssl
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import msgspec

from codemem.config import Settings, is_object_storage
from codemem.contract.types import Hit, SearchRequest

FILE_NAME = "server.json"
HEALTH_TIMEOUT_S = 0.5
SEARCH_TIMEOUT_S = 30.0


class _SearchResponse(msgspec.Struct):
    data: list[Hit]


def server_file(data_dir: str) -> Path | None:
    return None if is_object_storage(data_dir) else Path(data_dir).expanduser() / FILE_NAME


@contextlib.contextmanager
def announced(settings: Settings, scheme: str = "http") -> Iterator[None]:
    """While serving: the file that names this server (`scheme`: https when it answers TLS
    itself), removed when serving stops, on SIGTERM and SIGINT too (`_sigterm_unwinds`)."""
    path = server_file(settings.storage.data_dir)
    if path is None:
        yield
        return
    host = "127.0.0.1" if settings.server.host in ("0.0.0.0", "::", "") else settings.server.host
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"url": f"{scheme}://{host}:{settings.server.port}", "pid": os.getpid()}
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(record))
    os.replace(tmp, path)
    try:
        with _sigterm_unwinds():
            yield
    except _Terminated:
        _forget(path)
        # Then the process ends as SIGTERM ends it (status -15), which is what uvicorn meant.
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.raise_signal(signal.SIGTERM)
        raise
    finally:
        _forget(path)


def _forget(path: Path) -> None:
    with contextlib.suppress(OSError, ValueError):
        if json.loads(path.read_text()).get("pid") == os.getpid():  # not a newer server's
            path.unlink()


class _Terminated(BaseException):
    """SIGTERM arrived (`_sigterm_unwinds`)."""


@contextlib.contextmanager
def _sigterm_unwinds() -> Iterator[None]:
    """SIGTERM raises `_Terminated` where the process stands, so that cleanup runs, rather
    than ending it there. uvicorn catches SIGTERM and SIGINT for its graceful shutdown, then
    restores the handlers it found and raises the signal again: with SIGTERM's default
    action the process ended at that point, its server file left behind naming a dead
    process (SIGINT's default, KeyboardInterrupt, unwinds already)."""
    if threading.current_thread() is not threading.main_thread():  # only it can take signals
        yield
        return

    def unwind(signum: int, frame: FrameType | None) -> None:
        raise _Terminated

    before = signal.signal(signal.SIGTERM, unwind)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def running_server(data_dir: str) -> str | None:
    """The URL of a live server over `data_dir`, or None."""
    path = server_file(data_dir)
    try:
        record = json.loads(path.read_text()) if path is not None else None
        url, pid = str(record["url"]), int(record["pid"])  # type: ignore[index]
    except (OSError, ValueError, TypeError, KeyError):
        return None
    if not _alive(pid):
        return None
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=HEALTH_TIMEOUT_S, context=_tls(url)) as answer:
            return url if answer.status == 200 else None
    except (OSError, urllib.error.URLError):
        return None


def search(url: str, req: SearchRequest, api_key: str | None) -> list[Hit]:
    """The server's answer to one Search (OSError when it cannot be had)."""
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    request = urllib.request.Request(f"{url}/search", data=msgspec.json.encode(req), headers=headers)
    with urllib.request.urlopen(request, timeout=SEARCH_TIMEOUT_S, context=_tls(url)) as answer:
        return msgspec.json.decode(answer.read(), type=_SearchResponse).data


def _tls(url: str) -> ssl.SSLContext | None:
    """For a server that answers HTTPS itself: its certificate names the public host (or is
    self-signed), never the loopback address the server file gives, so it is not checked
    here. What vouches for this server is its file in the data directory, which only those
    who may read the memory itself can write."""
    if not url.startswith("https:"):
        return None
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True
