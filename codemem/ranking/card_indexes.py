"""Per-user indexes over card rows, kept current by the cards this process writes.

The code-location index (`locations.py`) and the commit-subject index (`subjects.py`) are
each built from one user's card rows. Keyed by the store's version, as they were, every Add
made the next Search re-read and re-parse all of the user's cards: most of a Search's Python
time under mixed load. Here each user's index is read once and then updated with
the cards this process commits (`put`); it is read again after rows are deleted (`forget`)
and once it is `max_age_s` old, so cards another process wrote (a CLI import beside the
server, another worker) count from then on.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Self, TypeVar


class CardIndex(ABC):
    """An index of one user's card rows that later cards are put into."""

    @abstractmethod
    def put(self, cards: Iterable[Mapping[str, Any]]) -> None:
        """Add these cards, each replacing its session's card if the index holds one."""

    @abstractmethod
    def copy(self) -> Self:
        """A copy that can change while Searches read this one."""

    @classmethod
    def of_cards(cls, cards: Iterable[Mapping[str, Any]]) -> Self:
        """An index of these card rows."""
        index = cls()
        index.put(cards)
        return index

    def with_cards(self, cards: Iterable[Mapping[str, Any]]) -> Self:
        """A copy with these cards put in (Searches may be reading this one meanwhile)."""
        index = self.copy()
        index.put(cards)
        return index


IndexT = TypeVar("IndexT", bound=CardIndex)


@dataclass
class _Held(Generic[IndexT]):
    index: IndexT
    built_at: float
    version: int | None  # the store's change count when its read began (None: not known)


class CardIndexes(Generic[IndexT]):
    """Each user's index, read from the store once, then kept current by the cards this
    process writes (`put`). It is read again after `forget` (rows deleted) and once it
    is `max_age_s` old: cards other processes wrote (a CLI import beside the server, another
    worker) count from then on."""

    def __init__(self, kind: type[IndexT], max_users: int = 64, max_age_s: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._kind = kind
        self._lock = threading.Lock()
        self._built: dict[str, _Held[IndexT]] = {}
        self._max_users = max_users
        self._max_age_s = max_age_s
        self._clock = clock
        # While a user's cards are being read: how many reads run, and the cards `put`
        # meanwhile, which the read may or may not hold, to put into what it builds.
        self._reading: dict[str, int] = {}
        self._put_while_reading: dict[str, list[Sequence[Mapping[str, Any]]]] = {}
        self._forgets = 0  # an index read before a `forget` is not kept

    def get(self, user_key: str, read_cards: Callable[[], Iterable[Mapping[str, Any]]],
            version: int | None = None) -> IndexT:
        """The index of `user_key`; `read_cards()` returns its card rows from the store. With
        the store's change count (`Store.changes`) as `version`, an index read at that same
        count is current however old it is: nothing was written since, so a Search on a
        memory nobody writes to never reads the cards again (re-reading them each
        `max_age_s` would show in a Search's tail latency)."""
        with self._lock:
            held = self._built.get(user_key)
            if held is not None and ((version is not None and held.version == version)
                                     or self._clock() - held.built_at < self._max_age_s):
                return held.index
            self._reading[user_key] = self._reading.get(user_key, 0) + 1
            put = self._put_while_reading.setdefault(user_key, [])
            seen, forgets, started = len(put), self._forgets, self._clock()
        try:
            index = self._kind.of_cards(read_cards())
        finally:
            with self._lock:
                missed = put[seen:]
                self._reading[user_key] -= 1
                if not self._reading[user_key]:
                    del self._reading[user_key], self._put_while_reading[user_key]
        for cards in missed:
            index = index.with_cards(cards)  # a card the read holds already is replaced by itself
        with self._lock:
            if forgets != self._forgets:
                return index  # rows were deleted meanwhile: read again next time
            if len(self._built) >= self._max_users and user_key not in self._built:
                self._built.pop(next(iter(self._built)))
            self._built[user_key] = _Held(index, started, version)
        return index

    def put(self, user_key: str, cards: Sequence[Mapping[str, Any]]) -> None:
        """Cards of `user_key` this process has just committed (new or replacing others)."""
        with self._lock:
            if user_key in self._put_while_reading:
                self._put_while_reading[user_key].append(cards)
            if (held := self._built.get(user_key)) is not None:
                held.index = held.index.with_cards(cards)

    def forget(self, user_key: str | None = None) -> None:
        """Read `user_key`'s index (every user's: None) again at its next use: rows were deleted."""
        with self._lock:
            self._forgets += 1
            if user_key is None:
                self._built.clear()
            else:
                self._built.pop(user_key, None)
