"""Time as features of the relevance model: what a candidate's date says beside what it holds.

A memory of a project is asked how things are now, when something changed, what came before;
the answer to "which X do we use?" is in the newest session that says so, not in the first
that mentioned X. None of that is a phrase to match: it is the order of the candidates in time,
how much of the question a newer or an older candidate also holds, and what the question asks
of time (read by a learned model, `timeline/questions.py`). Per candidate:

- `recency_rr`: its reciprocal rank by date among the dated candidates (newest 1);
- `recency_related`: the same among the candidates that hold at least half of the question's
  words that the best of them holds (idf-weighted): the newest of those that talk about the
  subject, not of every candidate;
- `newer_same` / `older_same`: the largest idf-weighted share of the question's words this
  candidate's card holds that a newer / an older candidate's holds too (a newer one that says much
  the same of the same subject may have replaced it; an older one, been replaced by it);
- `asks_now`, `asks_when`, `asks_asof`: the question reader's P(the question asks for the
  current state / a date or an order / the state at a named time); the same for every
  candidate: the trees read the other features differently under them;
- `date_named`: the candidate's day lies in a date or period the question names (an ISO date,
  a month with or without its day and year, or a relative date such as "last week", read
  against the newest candidate's date).

A candidate's date is its sessions' own time (the messages' timestamps). Where a memory was
given none, its Add time would be an artefact (a batch import, a replay's order): the
candidate's features of dates read NaN, "not known" (the trees send it down the branch they
learned for missing values), never a fake age. Weights are learned with the rest
(`train/ranker`); none is set by hand. A pure function of the candidates' card fields
(`fields.CardFields`, with their dates) and the question reader's reading.
"""

from __future__ import annotations

import calendar
import math
import re
from collections.abc import Mapping
from datetime import date

import numpy as np

from codemem.ranking.fields import CardFields, idf_of, words
from codemem.timeline.dates import day_of, resolve
from codemem.timeline.questions import NOT_ASKED, Asked

TIME_FEATURES = ("recency_rr", "recency_related", "newer_same", "older_same", "asks_now", "asks_when", "asks_asof",
                 "date_named")
NOT_KNOWN = math.nan
# A candidate "talks about the subject" where it holds this share of the best candidate's
# weighted share of the question's words.
RELATED_SHARE = 0.5


def covered_by(text: str, cards: Mapping[str, CardFields]) -> dict[str, str]:
    """For each dated candidate that holds some of the question's words, the newest later
    candidate whose card holds every one of them (what it said of the question's subject, said
    again later), by session key."""
    query = words(text)
    held = {key: query & card.text for key, card in cards.items() if card.ms > 0}
    out = {}
    for key, mine in held.items():
        later = [k for k, theirs in held.items() if mine and cards[k].ms > cards[key].ms and mine <= theirs]
        if later:
            out[key] = max(later, key=lambda k: (cards[k].ms, k))
    return out


def time_matches(text: str, cards: Mapping[str, CardFields], asked: Asked = NOT_ASKED) -> dict[str, tuple[float, ...]]:
    """Per candidate of `cards` (session key -> its card's fields and date), in `TIME_FEATURES`
    order; `asked`: the question reader's reading of `text`."""
    if not cards:
        return {}
    asked_words = words(text)
    query = sorted(asked_words)
    shared = {key: asked_words & card.text for key, card in cards.items()}
    # Only the question's words are ever weighed: their idf over the candidates' cards.
    weight = idf_of(shared.values())
    w = np.asarray([weight.get(word, 0.0) for word in query])
    position = {word: i for i, word in enumerate(query)}
    held = {key: _query_mask(position, mine) for key, mine in shared.items()}
    mass = {key: float(mine @ w) for key, mine in held.items()}
    dated = [key for key, card in cards.items() if card.ms > 0]
    recency = _recency(set(dated), cards)
    best = max((mass[k] for k in dated), default=0.0)
    recency_related = _recency({k for k in dated if best > 0 and mass[k] >= RELATED_SHARE * best}, cards)
    now = max((cards[k].ms for k in dated), default=0)
    spans = named_spans(text, now) if now > 0 else []
    asks = (asked.now, asked.when, asked.asof)
    newer, older = _same_subject(dated, held, w, cards)
    out: dict[str, tuple[float, ...]] = {}
    for key, card in cards.items():
        if key not in newer:
            out[key] = (NOT_KNOWN, NOT_KNOWN, NOT_KNOWN, NOT_KNOWN, *asks, NOT_KNOWN)
            continue
        day = day_of(card.ms).isoformat()
        named = float(any(start <= day <= end for start, end in spans))
        out[key] = (recency[key], recency_related.get(key, 0.0), newer[key], older[key], *asks, named)
    return out


def _query_mask(position: Mapping[str, int], held: frozenset[str]) -> np.ndarray:
    """1.0 at the `position` of each of the question's words among `held`, else 0.0."""
    mask = np.zeros(len(position))
    mask[[position[word] for word in held]] = 1.0
    return mask


def _same_subject(dated: list[str], held: Mapping[str, np.ndarray], w: np.ndarray,
                  cards: Mapping[str, CardFields]) -> tuple[dict[str, float], dict[str, float]]:
    """`newer_same` and `older_same` of each dated candidate: the largest idf-weighted share of
    the question's words it holds that a newer / an older candidate holds too (0 where it holds
    none), every pair at once."""
    if not dated:
        return {}, {}
    mine = np.stack([held[k] for k in dated])  # (candidates, question words)
    ms = np.asarray([cards[k].ms for k in dated])
    total = mine @ w
    shared = (mine * w) @ mine.T  # [a, b]: the weight of the words a and b both hold
    share = np.divide(shared, total[:, None], out=np.zeros_like(shared), where=total[:, None] > 0)
    newer = np.where(ms[None, :] > ms[:, None], share, 0.0).max(axis=1)
    older = np.where(ms[None, :] < ms[:, None], share, 0.0).max(axis=1)
    return dict(zip(dated, newer.tolist(), strict=True)), dict(zip(dated, older.tolist(), strict=True))


def _recency(keys: set[str], cards: Mapping[str, CardFields]) -> dict[str, float]:
    """Each of `keys`' reciprocal rank by date, newest 1."""
    order = sorted(keys, key=lambda k: (-cards[k].ms, k))
    return {key: 1.0 / rank for rank, key in enumerate(order, 1)}


_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name} | {
    name.lower(): i for i, name in enumerate(calendar.month_abbr) if name}
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_MONTH = re.compile(r"\b(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?(?:\s+(\d{1,2})(?:st|nd|rd|th)?)?"
                    r"(?:,?\s+(\d{4}))?\b", re.I)


def named_spans(text: str, now_ms: int) -> list[tuple[str, str]]:
    """The days the text names, as (first, last) ISO dates: ISO dates, months (with a day and
    a year or not: a month without a year is its latest up to `now_ms`), and relative dates
    resolved against `now_ms` (`timeline/dates.resolve`)."""
    today = day_of(now_ms)
    spans = [(r.start, r.end) for r in resolve(text, now_ms)]
    for m in _ISO.finditer(text):
        try:
            spans.append((date(*map(int, m.groups())).isoformat(),) * 2)
        except ValueError:
            continue
    for m in _MONTH.finditer(text):
        word, day, year = m.group(1).lower(), m.group(2), m.group(3)
        if word == "may" and not (day or year):  # the verb as often as the month
            continue
        month = _MONTHS[word]
        y = int(year) if year else today.year - (month > today.month)
        last = calendar.monthrange(y, month)[1]
        if day and 1 <= int(day) <= last:
            spans.append((date(y, month, int(day)).isoformat(),) * 2)
        else:
            spans.append((date(y, month, 1).isoformat(), date(y, month, last).isoformat()))
    return spans
