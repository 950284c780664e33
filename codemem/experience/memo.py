"""Reading a message once while its session is being added to.

Every Add of a session rebuilds its experience from all of its messages (`writing/
derived_rows.py`), so up to its 400th message each message is read again by every later Add
of the session: about three times over, in the shared data's 34-message chunks. What a
message's text yields (its events, its explanatory sentences) depends on the text alone, so
the last texts read are remembered here, within a bound on their characters; a text longer
than `max_text` is read each time (a large tool result, rare and not worth its room).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

V = TypeVar("V")


class TextMemo(Generic[V]):
    """`read(text, tag)` remembered for recently read texts, least recently used out first once
    the texts held pass `max_chars` characters. `read` must be a pure function of its
    arguments, and what it returns is shared by every caller: never changed."""

    def __init__(self, read: Callable[[str, str], V], max_chars: int = 8 << 20, max_text: int = 64 << 10) -> None:
        self._read = read
        self.max_chars = max_chars
        self.max_text = max_text
        self._held: OrderedDict[tuple[str, str], V] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def __call__(self, text: str, tag: str = "") -> V:
        if len(text) > self.max_text:
            return self._read(text, tag)
        key = (text, tag)
        with self._lock:
            if key in self._held:
                self._held.move_to_end(key)
                return self._held[key]
        value = self._read(text, tag)
        with self._lock:
            if key not in self._held:
                self._held[key] = value
                self._chars += len(text)
                while self._chars > self.max_chars:
                    (old, _), _ = self._held.popitem(last=False)
                    self._chars -= len(old)
        return value

    @property
    def chars(self) -> int:
        """The characters of the texts held."""
        return self._chars
