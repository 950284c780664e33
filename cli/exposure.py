"""What a command that listens on the network checks before it serves anything.

A reachable port without a key hands every memory to whoever finds it, so `serve` and
`mcp --transport http` refuse any address but loopback unless a key is set or the person
says `--allow-open`. `serve` may answer HTTPS itself: its certificate and key are loaded as
a pair here, so a missing, unreadable or mismatched file is one line and exit 2 rather
than a traceback from inside uvicorn after the model started loading.
"""

from __future__ import annotations

import ipaddress
import ssl
from dataclasses import dataclass

from codemem.config import Server


class Refused(ValueError):
    """A listening setting that cannot be served as given; its text is the one line shown."""


@dataclass(frozen=True)
class TLSFiles:
    cert: str
    key: str


def reachable(host: str) -> bool:
    """Whether other machines may reach a server bound to `host`: every address but loopback
    (127.0.0.0/8, ::1, `localhost`). A host name may resolve to any address, so it counts."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return False
    try:
        return not ipaddress.ip_address(name).is_loopback
    except ValueError:
        return True


def check_key(server: Server, command: str) -> None:
    """Refused: `command` would serve a reachable address with no key, unasked."""
    if server.api_key or server.allow_open or not reachable(server.host):
        return
    raise Refused(f"{command} on {server.host or 'every address'} without a key lets anyone who reaches port "
                  f"{server.port} read and write every memory: set CODEMEM_API_KEY=<secret> (clients send "
                  "'Authorization: Bearer <secret>'), or pass --allow-open (CODEMEM_ALLOW_OPEN=true) to serve it open")


def tls_files(server: Server) -> TLSFiles | None:
    """The certificate and key to answer HTTPS with, loaded once as a pair to prove they work;
    None for plain HTTP. Refused names the file and what is wrong with it."""
    if not server.tls_cert and not server.tls_key:
        return None
    if not server.tls_cert or not server.tls_key:
        raise Refused("--tls-cert and --tls-key (CODEMEM_TLS_CERT, CODEMEM_TLS_KEY) go together: give both")
    for what, path in (("certificate", server.tls_cert), ("key", server.tls_key)):
        try:
            with open(path, "rb") as f:
                f.read(1)
        except OSError as exc:
            raise Refused(f"TLS {what} {path} cannot be read: {exc.strerror or exc}") from None
    try:
        # A passphrase-protected key would make OpenSSL prompt on the terminal: refuse it instead.
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(
            server.tls_cert, server.tls_key, password=_no_passphrase)
    except (ssl.SSLError, ValueError) as exc:
        raise Refused(f"TLS certificate {server.tls_cert} and key {server.tls_key} do not load as a PEM "
                      f"certificate and its unencrypted private key: {exc}") from None
    return TLSFiles(server.tls_cert, server.tls_key)


def _no_passphrase() -> bytes:
    raise ValueError("the key is encrypted; give an unencrypted key readable only by the server's user")
