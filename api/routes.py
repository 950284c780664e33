"""Thin handlers: decode strictly (api.bodies), call the core in a worker thread, encode."""

from __future__ import annotations

from anyio import to_thread
from litestar import Controller, Request, delete, get, post
from litestar.datastructures import State
from litestar.params import FromPath

from api.admission import Admission, ByteBudget
from api.auth import require_api_key
from api.bodies import decode, decode_body
from api.schemas import AddResponse, DeleteResponse, HealthResponse, SearchResponse
from codemem.contract.types import AddRequest, SearchRequest
from codemem.memory import Memory


def _memory(state: State) -> Memory:
    return state.memory


def _admission(state: State, kind: str) -> Admission:
    return state.admission[kind]


def _body_size(request: Request, unknown: int) -> int:
    """The body's declared length; `unknown` (the most it may hold) without one."""
    try:
        return max(0, int(request.headers["content-length"]))
    except (KeyError, ValueError):
        return unknown


@get("/health")
async def health(state: State) -> HealthResponse:
    """Always open; 200 while the process serves requests, with what it runs on: the query
    embedding path and the encoder in use, whether older vectors are being embedded again,
    and how much of the store lies outside its compacted, indexed part (as last read). On the event loop, with no thread, lock or store read: it answers at once
    whatever the Adds in flight are doing."""
    memory = _memory(state)
    store = memory.store_health()
    return HealthResponse(
        status="ok", model_loaded=memory.embedder.loaded, query_embedding=memory.embedder.query_path,
        encoder=memory.embedder.name, reembedding=memory.reembedder.running,
        fragments=store.get("fragments"), small_fragments=store.get("small_fragments"),
        unindexed_rows=store.get("unindexed_rows"), compactions=memory.compactor.runs,
    )


class MemoryController(Controller):
    guards = [require_api_key]

    @post("/add", status_code=200)
    async def add(self, request: Request, state: State) -> AddResponse:
        """Store one chunk; answered only once it is durable and searchable."""
        gate, memory = _admission(state, "add"), _memory(state)
        budget: ByteBudget = state.add_bytes
        async with gate.slot(), budget.hold(_body_size(request, budget.limit)):
            body = await request.body()
            result = await gate.run(lambda: memory.add(decode(body, AddRequest)))
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
