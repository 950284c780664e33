"""Code-location evidence: which experiences worked on the code a task points at.

Bug localisation ranks source files by how well a bug report's words match them
(BugLocator, Zhou et al., ICSE 2012); here the "files" are past experiences, and what a
task names (paths, symbols, exception and test names, exact identifiers) is matched with
what each experience edited or mentioned. Each matched key counts its inverse document
frequency over the user's experiences, so a path every session touched says little and a
rare helper name says much; a key the experience edited counts fully, a key it only
mentions (its task, its errors, files it read) counts `mention_weight` of that.

Issue and PR references (`#1234`, a ticket or pull-request URL, a commit SHA) are matched
separately with the experiences whose items mention them (`ticket_refs`): the same ticket
is the surest link between two tasks there is.

The index is built from the user's card rows (their `refs` column and the edited files and
symbols in their metadata) and cached per user: one read of the cards, then every Search is
a few set lookups. The cards this process writes update the cached index in place of a new
read (`LocationIndexes.put`): keyed by the store's version, as it was, every Add made the
next Search re-read and re-parse all of the user's cards, most of a Search's Python time
under mixed load (issue 18).
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import parsers

# Ticket, issue and pull-request URLs of the common trackers, and bare "#1234" references.
_TICKET_URL = re.compile(r"/(?:ticket|issues|pull|pulls|merge_requests)/(\d{1,9})\b")
_ISSUE = re.compile(r"(?<![\w&])#(\d{1,9})\b")
_SHA = re.compile(r"\b[0-9a-f]{7,40}\b")


def ticket_refs(text: str) -> list[str]:
    """The issue, PR and commit references of `text`, as the references index keys them
    (`#1234`, a lowercase SHA), first-seen order."""
    refs = [f"#{n}" for n in _ISSUE.findall(text)] + [f"#{n}" for n in _TICKET_URL.findall(text)]
    refs += [s for s in _SHA.findall(text.lower()) if re.search(r"\d", s) and re.search(r"[a-f]", s)]
    return list(dict.fromkeys(refs))


@dataclass(frozen=True)
class ExperienceCode:
    """What one experience's card says about code: keys it edited, and every key it holds."""

    edited: frozenset[str]
    mentioned: frozenset[str]


@dataclass
class LocationIndex:
    """The code keys of one user's experiences, with their document frequencies."""

    experiences: dict[str, ExperienceCode] = field(default_factory=dict)  # session_key -> keys
    df: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of_cards(cls, cards: Iterable[Mapping[str, Any]]) -> LocationIndex:
        """From card rows with `session_key`, `refs` (space-separated keys) and `metadata`
        (JSON with `edited_files` and `edited_symbols`)."""
        index = cls()
        index.put(cards)
        return index

    def put(self, cards: Iterable[Mapping[str, Any]]) -> None:
        """Add these cards, each replacing its session's card if the index holds one."""
        for card in cards:
            meta = json.loads(str(card.get("metadata") or "{}"))
            edited = parsers.CodeRefs(files=list(meta.get("edited_files") or []),
                                      symbols=list(meta.get("edited_symbols") or [])).terms()
            keys = frozenset(str(card.get("refs") or "").split()) | frozenset(edited)
            session_key = str(card["session_key"])
            if (old := self.experiences.get(session_key)) is not None:
                for key in old.mentioned:
                    self.df[key] -= 1
                    if not self.df[key]:
                        del self.df[key]
            self.experiences[session_key] = ExperienceCode(frozenset(edited), keys)
            for key in keys:
                self.df[key] = self.df.get(key, 0) + 1

    def with_cards(self, cards: Iterable[Mapping[str, Any]]) -> LocationIndex:
        """A copy with these cards put in (Searches may be reading this one meanwhile)."""
        copy = LocationIndex(dict(self.experiences), dict(self.df))
        copy.put(cards)
        return copy

    def idf(self, key: str) -> float:
        df = self.df.get(key, 0)
        return math.log(1 + len(self.experiences) / df) if df else 0.0

    def scores(self, query_keys: Iterable[str]) -> dict[str, tuple[float, float]]:
        """Per experience that matches any of `query_keys`: the idf mass of the keys it
        edited, and of those it only mentions."""
        weights = {k: w for k in dict.fromkeys(query_keys) if (w := self.idf(k)) > 0}
        out: dict[str, tuple[float, float]] = {}
        for session_key, code in self.experiences.items():
            matched = code.mentioned.intersection(weights)
            if not matched:
                continue
            edited = sum(weights[k] for k in matched if k in code.edited)
            out[session_key] = (edited, sum(weights[k] for k in matched) - edited)
        return out


def location_score(edited: float, mentioned: float, mention_weight: float) -> float:
    """One number per experience: edited keys count fully, mentioned ones `mention_weight`."""
    return edited + mention_weight * mentioned


@dataclass
class _Held:
    index: LocationIndex
    built_at: float  # clock time of the read it was built from


class LocationIndexes:
    """Each user's `LocationIndex`, read from the store once, then kept current by the cards
    this process writes (`put`). It is read again after `forget` (rows deleted) and once it
    is `max_age_s` old: cards other processes wrote (a CLI import beside the server, another
    worker) count from then on."""

    def __init__(self, max_users: int = 64, max_age_s: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._built: dict[str, _Held] = {}
        self._max_users = max_users
        self._max_age_s = max_age_s
        self._clock = clock
        # While a user's cards are being read: how many reads run, and the cards `put`
        # meanwhile, which the read may or may not hold, to put into what it builds.
        self._reading: dict[str, int] = {}
        self._put_while_reading: dict[str, list[Sequence[Mapping[str, Any]]]] = {}
        self._forgets = 0  # an index read before a `forget` is not kept

    def get(self, user_key: str, read_cards: Callable[[], Iterable[Mapping[str, Any]]]) -> LocationIndex:
        """The index of `user_key`; `read_cards()` returns its card rows from the store."""
        with self._lock:
            held = self._built.get(user_key)
            if held is not None and self._clock() - held.built_at < self._max_age_s:
                return held.index
            self._reading[user_key] = self._reading.get(user_key, 0) + 1
            put = self._put_while_reading.setdefault(user_key, [])
            seen, forgets, started = len(put), self._forgets, self._clock()
        try:
            index = LocationIndex.of_cards(read_cards())
        finally:
            with self._lock:
                missed = put[seen:]
                self._reading[user_key] -= 1
                if not self._reading[user_key]:
                    del self._reading[user_key], self._put_while_reading[user_key]
        for cards in missed:
            index.put(cards)  # a card the read holds already is replaced by itself
        with self._lock:
            if forgets != self._forgets:
                return index  # rows were deleted meanwhile: read again next time
            if len(self._built) >= self._max_users and user_key not in self._built:
                self._built.pop(next(iter(self._built)))
            self._built[user_key] = _Held(index, started)
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
