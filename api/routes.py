"""Thin handlers: decode strictly (api.bodies), call the core in a worker thread, encode."""

from __future__ import annotations

from anyio import to_thread
from litestar import Controller, Request, delete, get, post
from litestar.datastructures import State
from litestar.params import FromPath

from api.admission import Admission
from api.auth import require_api_key
from api.bodies import decode_body
from api.schemas import AddResponse, DeleteResponse, HealthResponse, SearchResponse
from codemem.contract.types import AddRequest, SearchRequest
from codemem.memory import Memory


def _memory(state: State) -> Memory:
    return state.memory


def _admission(state: State, kind: str) -> Admission:
    return state.admission[kind]


@get("/health", sync_to_thread=True)  # reads the store's figures
def health(state: State) -> HealthResponse:
    """Always open; 200 while the process serves requests, with what it runs on: the query
    embedding path in use and how much of the store lies outside its compacted, indexed part."""
    memory = _memory(state)
    store = memory.store_health()
    return HealthResponse(
        status="ok", model_loaded=memory.embedder.loaded, query_embedding=memory.embedder.query_path,
        fragments=store.get("fragments"), small_fragments=store.get("small_fragments"),
        unindexed_rows=store.get("unindexed_rows"), compactions=memory.compactor.runs,
    )


class MemoryController(Controller):
    guards = [require_api_key]

    @post("/add", status_code=200)
    async def add(self, request: Request, state: State) -> AddResponse:
        """Store one chunk; answered only once it is durable and searchable."""
        gate = _admission(state, "add")
        async with gate.slot():
            req = await decode_body(request, AddRequest)
            result = await gate.run(_memory(state).add, req)
        return AddResponse(True, result.request_id, result.user_id, result.session_id)

    @post("/search", status_code=200)
    async def search(self, request: Request, state: State) -> SearchResponse:
        """Ranked memory evidence for one question, at most top_k items."""
        gate = _admission(state, "search")
        async with gate.slot():
            req = await decode_body(request, SearchRequest)
            return SearchResponse(data=await gate.run(_memory(state).search, req))

    @delete("/users/{user_id:path}", status_code=200)
    async def delete_user(self, state: State, user_id: FromPath[str]) -> DeleteResponse:
        """Erase every memory of one user_id."""
        user_id = user_id.removeprefix("/")
        deleted = await to_thread.run_sync(_memory(state).delete_user, user_id)
        return DeleteResponse(user_id=user_id, deleted=deleted)
