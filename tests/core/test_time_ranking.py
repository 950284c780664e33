"""Time in the memory of coding sessions (`ranking/time_features.py`, learned by the relevance
model): a coding assistant's chats in which a project setting changes; asked how it is now, the
newest session that sets it comes first and the older ones are marked superseded by it."""

from __future__ import annotations

from datetime import datetime

from codemem.contract.types import AddRequest, Message, SearchRequest
from codemem.memory import Memory

# A developer and a coding assistant; every session edits code, so none is read as people talking.
CHATS = [
    ("retry-1", "2025-02-03", [
        "The upload client in sync/uploader.py gives up too fast on flaky networks. Can we retry?",
        "Sure. I added a retry loop to `sync/uploader.py`:\n```python\nMAX_UPLOAD_RETRIES = 3\n"
        "def upload(blob):\n    for attempt in range(MAX_UPLOAD_RETRIES):\n        ...\n```\n"
        "Uploads now retry 3 times with a 2 second backoff.",
    ]),
    ("thumbs", "2025-02-20", [
        "Thumbnails in media/thumbs.py come out blurry for portrait photos.",
        "The resize kept the landscape box. Fixed `media/thumbs.py` to keep the aspect ratio:\n"
        "```python\nbox = (w, h) if w >= h else (h, w)\n```",
    ]),
    ("retry-2", "2025-04-11", [
        "Three upload retries are not enough on the field tablets. Bump it in sync/uploader.py.",
        "Done: `MAX_UPLOAD_RETRIES = 6` in `sync/uploader.py`, and the backoff doubles each time:\n"
        "```python\nMAX_UPLOAD_RETRIES = 6\ndelay = 2 ** attempt\n```",
    ]),
    ("login", "2025-05-02", [
        "The login form in web/login.ts submits twice on a double click.",
        "I disabled the button while the request is pending in `web/login.ts`:\n"
        "```ts\nbutton.disabled = true\n```",
    ]),
    ("retry-3", "2025-06-30", [
        "Uploads hammer the server when it is down. Cap the upload retries in sync/uploader.py at 4 and add jitter.",
        "Changed `sync/uploader.py`: `MAX_UPLOAD_RETRIES = 4`, with full jitter on the backoff:\n"
        "```python\nMAX_UPLOAD_RETRIES = 4\ndelay = random.uniform(0, 2 ** attempt)\n```",
    ]),
]


def _ms(day: str, minute: int) -> int:
    return int(datetime.fromisoformat(f"{day}T09:{minute:02d}:00+00:00").timestamp() * 1000)


def test_the_newest_setting_comes_first_and_the_older_ones_are_marked(memory: Memory) -> None:
    for sid, day, texts in CHATS:
        memory.add(AddRequest(f"{sid}-0", "dev", sid, [Message("user" if i % 2 == 0 else "assistant", t, _ms(day, i))
                                                        for i, t in enumerate(texts)]))
    hits = memory.search(SearchRequest(user_id="dev", query="How many times do uploads retry now?", top_k=10))
    assert hits and all(h.metadata["kind"] == "card" for h in hits)  # coding sessions: experiences, not turns
    assert hits[0].session_id == "retry-3" and "superseded_by" not in hits[0].metadata
    older = {h.session_id: h.metadata.get("superseded_by") for h in hits if h.session_id in ("retry-1", "retry-2")}
    assert older and all(by == {"session_id": "retry-3", "date": "2025-06-30"} for by in older.values())
    # Not asked about now: the same memory marks nothing.
    plain = memory.search(SearchRequest(user_id="dev", query="upload retry backoff in sync/uploader.py", top_k=10))
    assert not any("superseded_by" in h.metadata for h in plain)
