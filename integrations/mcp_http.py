"""`codemem mcp --transport http`: MCP's streamable HTTP at /mcp, behind the contract's key.

The MCP server is another way into every memory, so on a reachable address it asks for the
same key as the Add/Search API (`CODEMEM_API_KEY`, in the headers `codemem.contract.keys`
reads): a request without it is answered 401 before the MCP session sees it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from codemem.config import Server
from codemem.contract.keys import key_matches, presented_key

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_REFUSAL = b'{"detail": {"reason": "missing or wrong API key"}}'


class KeyRequired:
    """ASGI middleware: HTTP requests pass only with the key; lifespan events always do."""

    def __init__(self, app: ASGIApp, key: str) -> None:
        self.app, self.key = app, key

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}
            if not key_matches(presented_key(headers.get("authorization"), headers.get("x-api-key")), self.key):
                await send({"type": "http.response.start", "status": 401, "headers": [
                    (b"content-type", b"application/json"), (b"content-length", str(len(_REFUSAL)).encode()),
                    (b"www-authenticate", b'Bearer realm="codemem"')]})
                await send({"type": "http.response.body", "body": _REFUSAL})
                return
        await self.app(scope, receive, send)


def serve_http(app: ASGIApp, server: Server) -> None:
    """Serve the MCP app on the server's address until the process is stopped."""
    import uvicorn

    uvicorn.run(KeyRequired(app, server.api_key) if server.api_key else app,
                host=server.host, port=server.port, log_level=server.log_level.lower())
