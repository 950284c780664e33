"""Per-user indexes over card rows, kept current by the cards this process writes.

The code-location index (`locations.py`) and the commit-subject index (`subjects.py`) are
each built from one user's card rows. Keyed by the store's version, as they were, every Add
made the next Search re-read and re-parse all of the user's cards: most of a Search's Python
time under mixed load. Here each user's index is read once and then updated with
the cards this process commits (`put`); it is read again after rows are deleted (`forget`)
and once it is `max_age_s` old, so cards another process wrote (a CLI import beside the
server, another worker) count from then on. The indexes held stay within a bound on the
card text they cover: the least recently searched user's go first, and are read again by
that user's next Search.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
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
    sizes: dict[str, int] = field(default_factory=dict)  # each session's card: characters held
    total: int = 0  # the sum of `sizes`, kept as they change (a put is not a walk of every card)

    def take(self, cards: Iterable[Mapping[str, Any]]) -> int:
        """Count these cards (each replacing its session's); returns the change in characters."""
        before = self.total
        for card in cards:
            key = str(card.get("session_key", ""))
            size = sum(len(v) for v in card.values() if isinstance(v, str))
            self.total += size - self.sizes.get(key, 0)
            self.sizes[key] = size
        return self.total - before


class CardIndexes(Generic[IndexT]):
    """Each user's index, read from the store once, then kept current by the cards this
    process writes (`put`). It is read again after `forget` (rows deleted) and once it
    is `max_age_s` old: cards other processes wrote (a CLI import beside the server, another
    worker) count from then on. The indexes held cover at most `max_bytes` characters of card
    rows (an index's own size follows its cards'); past that the least recently used go."""

    def __init__(self, kind: type[IndexT], max_bytes: int = 256 << 20, max_age_s: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._kind = kind
        self._lock = threading.Lock()
        self._built: OrderedDict[str, _Held[IndexT]] = OrderedDict()  # least recently used first
        self._max_bytes = max_bytes
        self._bytes = 0
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
                self._built.move_to_end(user_key)
                return held.index
            self._reading[user_key] = self._reading.get(user_key, 0) + 1
            put = self._put_while_reading.setdefault(user_key, [])
            seen, forgets, started = len(put), self._forgets, self._clock()
        try:
            cards = list(read_cards())
            index = self._kind.of_cards(cards)
        finally:
            with self._lock:
                missed = put[seen:]
                self._reading[user_key] -= 1
                if not self._reading[user_key]:
                    del self._reading[user_key], self._put_while_reading[user_key]
        built = _Held(index, started, version)
        built.take(cards)
        for more in missed:
            built.index = built.index.with_cards(more)  # a card the read holds already is replaced by itself
            built.take(more)
        with self._lock:
            if forgets != self._forgets:
                return built.index  # rows were deleted meanwhile: read again next time
            self._drop(user_key)
            self._built[user_key] = built
            self._bytes += built.total
            self._evict(user_key)
        return built.index

    def put(self, user_key: str, cards: Sequence[Mapping[str, Any]]) -> None:
        """Cards of `user_key` this process has just committed (new or replacing others)."""
        with self._lock:
            if user_key in self._put_while_reading:
                self._put_while_reading[user_key].append(cards)
            if (held := self._built.get(user_key)) is not None:
                held.index = held.index.with_cards(cards)
                self._bytes += held.take(cards)
                self._evict(user_key)

    def forget(self, user_key: str | None = None) -> None:
        """Read `user_key`'s index (every user's: None) again at its next use: rows were deleted."""
        with self._lock:
            self._forgets += 1
            if user_key is None:
                self._built.clear()
                self._bytes = 0
            else:
                self._drop(user_key)

    @property
    def held_bytes(self) -> int:
        """The characters of card rows the indexes held cover."""
        return self._bytes

    def _drop(self, user_key: str) -> None:
        """Let one user's index go; the caller holds the lock."""
        if (held := self._built.pop(user_key, None)) is not None:
            self._bytes -= held.total

    def _evict(self, keep: str) -> None:
        """The least recently used indexes out until the rest fit (`keep`, just used, stays);
        the caller holds the lock."""
        while self._bytes > self._max_bytes and len(self._built) > 1:
            oldest = next(iter(self._built))
            self._drop(oldest if oldest != keep else list(self._built)[1])
