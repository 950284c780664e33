"""The pages: memories, search, one experience, deletion (confirm, then delete), login.

Handlers are thin like the JSON API's: read the query or form, call the core in a worker
thread, render a template. Search calls the same `Memory.search` as `POST /search`, with
the same configuration, so both rank alike.
"""

from __future__ import annotations

import logging
from typing import Any

from anyio import to_thread
from litestar import Controller, Request, Response, get, post
from litestar.datastructures import State
from litestar.exceptions import NotAuthorizedException, PermissionDeniedException
from litestar.params import FromQuery
from litestar.response import Redirect, Template
from litestar.status_codes import HTTP_303_SEE_OTHER

from api.admission import Admission
from api.ui.access import COOKIE, UI_PATH, require_login, session_token
from api.ui.answers import Answer, Answers
from codemem.contract.keys import key_matches
from codemem.contract.types import SearchRequest
from codemem.errors import CodememError, NotFound
from codemem.memory import Memory
from codemem.store.schema import key_of

audit = logging.getLogger("codemem.audit")

SEARCH_DEPTH = 30  # experiences ranked per query; "more" pages through them
PAGE = 10
LIST_PAGE = 20


def _memory(state: State) -> Memory:
    return state.memory


def _answers(state: State) -> Answers:
    return state.ui_answers


def _page(value: str | None) -> int:
    try:
        return max(1, int(value or 1))
    except ValueError:
        return 1


class UiController(Controller):
    path = UI_PATH
    guards = [require_login]

    @get(["/", ""], sync_to_thread=True)
    def memories(self, state: State, deleted: FromQuery[str | None] = None) -> Template:
        """Every user_id with its counts and storage, and the store's health."""
        memory = _memory(state)
        health = memory.stats()  # read now: a person asked (/health answers from the last read)
        return Template("memories.html", context={
            "users": memory.list_users(), "health": health, "deleted": deleted, "nav": "memories"})

    @get("/search")
    async def search(self, state: State, user_id: FromQuery[str] = "", q: FromQuery[str] = "",
                     token: FromQuery[str] = "", page: FromQuery[str | None] = None,
                     deleted: FromQuery[str | None] = None) -> Template:
        """A user's experiences ranked for a query (or newest first without one)."""
        memory, shown = _memory(state), _page(page)
        # The form's picker: every memory stored, most recently written first.
        users = await to_thread.run_sync(lambda: memory.list_users(sizes=False))
        context: dict[str, Any] = {"user_id": user_id, "q": q, "deleted": deleted, "nav": "search",
                                   "page": shown, "token": "", "results": [], "listing": [], "more": False,
                                   "users": users, "known": any(u.user_id == user_id for u in users)}
        if not user_id:
            return Template("search.html", context=context)
        if not q.strip():
            cards = await to_thread.run_sync(memory.list_experiences, user_id)
            context.update(listing=cards[: shown * LIST_PAGE], more=len(cards) > shown * LIST_PAGE,
                           total=len(cards))
            return Template("search.html", context=context)
        answers = _answers(state)
        kept = answers.get(token, user_id, q) if token else None
        if kept is None:
            request = SearchRequest(user_id=user_id, query=q, top_k=SEARCH_DEPTH)
            admission: Admission = state.admission["search"]
            async with admission.slot():
                hits = await admission.run(memory.search, request)
            kept = Answer(user_id, q, hits)
            token = answers.keep(kept)
        context.update(results=kept.hits[: shown * PAGE], more=len(kept.hits) > shown * PAGE, token=token,
                       total=len(kept.hits))
        return Template("search.html", context=context)

    @get("/experience", sync_to_thread=True)
    def experience(self, state: State, user_id: FromQuery[str], session_id: FromQuery[str],
                   messages: FromQuery[bool] = False) -> Template:
        """One experience whole: card, timeline of steps, final patch, raw messages on demand."""
        record = _memory(state).experience_record(user_id, session_id, with_messages=messages)
        return Template("experience.html", context={"r": record, "show_messages": messages, "nav": "search"})

    @get("/delete", sync_to_thread=True)
    def confirm_delete(self, state: State, user_id: FromQuery[str], session_id: FromQuery[str] = "") -> Template:
        """What a deletion would remove, with the form that removes it."""
        memory = _memory(state)
        context: dict[str, Any] = {"user_id": user_id, "session_id": session_id, "nav": ""}
        if session_id:
            context["record"] = memory.experience_record(user_id, session_id)
        else:
            summary = next((u for u in memory.list_users() if u.user_id == user_id), None)
            if summary is None:
                raise NotFound(f"no memory of {user_id!r}")
            context["summary"] = summary
        return Template("confirm.html", context=context)

    @post("/delete")
    async def delete(self, request: Request, state: State) -> Redirect:
        """Delete one experience (user_id and session_id) or one user's whole memory."""
        form = await request.form()
        user_id, session_id = str(form.get("user_id", "")), str(form.get("session_id", ""))
        memory = _memory(state)
        if session_id:
            removed = await to_thread.run_sync(memory.delete_experience, user_id, session_id)
        else:
            removed = await to_thread.run_sync(memory.delete_user, user_id)
        _answers(state).forget_user(user_id)
        # Keys, not ids: the logs never carry user ids (api/logs.py); the keys name them.
        audit.info("ui deletion", extra={
            "event": "delete_experience" if session_id else "delete_user", "user_key": key_of(user_id),
            "session_key": key_of(user_id, session_id) if session_id else None, "items": removed,
            "client": request.client.host if request.client else None})
        if session_id:
            return Redirect(f"{UI_PATH}/search", query_params={"user_id": user_id, "deleted": session_id},
                            status_code=HTTP_303_SEE_OTHER)
        return Redirect(f"{UI_PATH}/", query_params={"deleted": user_id}, status_code=HTTP_303_SEE_OTHER)


class LoginController(Controller):
    """The one page served without the key."""

    path = UI_PATH

    @get("/login")
    async def login_page(self, state: State) -> Template:
        return Template("login.html", context={"error": "", "keyed": bool(state.api_key)})

    @post("/login")
    async def login(self, request: Request, state: State) -> Response[Any]:
        form = await request.form()
        expected: str | None = state.api_key
        if not expected:
            return Redirect(f"{UI_PATH}/", status_code=HTTP_303_SEE_OTHER)
        if not key_matches(str(form.get("key", "")), expected):
            return Template("login.html", context={"error": "Wrong key.", "keyed": True}, status_code=401)
        response = Redirect(f"{UI_PATH}/", status_code=HTTP_303_SEE_OTHER)
        response.set_cookie(COOKIE, session_token(expected), path=UI_PATH, httponly=True, samesite="strict")
        return response

    @post("/logout")
    async def logout(self) -> Redirect:
        response = Redirect(f"{UI_PATH}/login", status_code=HTTP_303_SEE_OTHER)
        response.delete_cookie(COOKIE, path=UI_PATH)
        return response


def to_login(_: Request, __: NotAuthorizedException) -> Response[Any]:
    return Redirect(f"{UI_PATH}/login", status_code=HTTP_303_SEE_OTHER)


def error_page(request: Request, exc: CodememError) -> Response[Any]:
    """A core error (bad input, nothing found) as a page that says it."""
    status = 404 if isinstance(exc, NotFound) else 400
    return Template("error.html", context={"message": str(exc), "nav": ""}, status_code=status)


def expired_form(_: Request, __: PermissionDeniedException) -> Response[Any]:
    """A form posted without its CSRF token (or with a stale one)."""
    return Template("error.html", status_code=403, context={
        "message": "This form is no longer valid (or did not come from this page). Reload the page and try again.",
        "nav": ""})
