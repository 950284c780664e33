"""The app over HTTPS, as `codemem serve --tls-cert --tls-key` serves it (the same uvicorn
options, `cli.subcommands.server_options`), on a thread of the test process so that a test
can still read the Memory behind it; a throwaway CA (trustme) signs its certificate."""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import Iterator
from pathlib import Path

import httpx
import trustme

from api.app import create_app
from api.threaded import served
from cli.exposure import TLSFiles
from cli.subcommands import server_options
from codemem.config import Settings
from codemem.memory import Memory
from tests.server import free_port


def certificate(folder: Path) -> tuple[TLSFiles, Path]:
    """A certificate for localhost and 127.0.0.1 with its key, and the CA that signed it."""
    ca = trustme.CA()
    issued = ca.issue_cert("localhost", "127.0.0.1")
    files = TLSFiles(str(folder / "cert.pem"), str(folder / "key.pem"))
    issued.cert_chain_pems[0].write_to_path(files.cert)
    issued.private_key_pem.write_to_path(files.key)
    ca.cert_pem.write_to_path(str(folder / "ca.pem"))
    return files, folder / "ca.pem"


@contextlib.contextmanager
def https_client(settings: Settings, memory: Memory, folder: Path) -> Iterator[httpx.Client]:
    """A client of the app served over HTTPS, checking the server's certificate."""
    files, ca = certificate(folder)
    settings = settings.replace({"server.port": free_port(), "server.tls_cert": files.cert,
                                 "server.tls_key": files.key})
    with served(create_app(settings, memory=memory), **server_options(settings, files)), \
            httpx.Client(base_url=f"https://localhost:{settings.server.port}", verify=ssl.create_default_context(cafile=ca),
                         timeout=120) as client:
        yield client
