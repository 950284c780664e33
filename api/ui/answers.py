"""Search answers kept for paging: "more" shows the next results of the answer already
computed instead of searching again. A few recent answers per process, least recent out
first; a token that is gone (evicted, or served by another worker) means searching again."""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass

from codemem.contract.types import Hit


@dataclass(frozen=True)
class Answer:
    user_id: str
    query: str
    hits: list[Hit]


class Answers:
    def __init__(self, capacity: int = 64) -> None:
        self.capacity = capacity
        self._answers: OrderedDict[str, Answer] = OrderedDict()
        self._lock = threading.Lock()

    def keep(self, answer: Answer) -> str:
        token = secrets.token_urlsafe(12)
        with self._lock:
            self._answers[token] = answer
            while len(self._answers) > self.capacity:
                self._answers.popitem(last=False)
        return token

    def get(self, token: str, user_id: str, query: str) -> Answer | None:
        """The kept answer, only for the same user and query it was computed for."""
        with self._lock:
            answer = self._answers.get(token)
            if answer is None or answer.user_id != user_id or answer.query != query:
                return None
            self._answers.move_to_end(token)
            return answer

    def forget_user(self, user_id: str) -> None:
        """After a deletion: answers that may show what was deleted are dropped."""
        with self._lock:
            for token in [t for t, a in self._answers.items() if a.user_id == user_id]:
                del self._answers[token]
