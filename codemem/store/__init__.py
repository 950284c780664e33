"""The item store over LanceDB. Before any module here imports `lancedb`, the REST namespace
client it would build on import, and a local store never calls, is deferred
(`deferred_imports`: a large part of the import, which a cold search waits for)."""

from codemem.store.deferred_imports import defer_rest_client

defer_rest_client()
