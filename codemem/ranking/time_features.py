"""Time as features of the relevance model: what a candidate's date says beside what it holds.

A memory of a project is asked how things are now, when something changed, what came before;
the answer to "which X do we use?" is in the newest session that says so, not in the first
that mentioned X. None of that is a phrase to match: it is the order of the candidates in time
and how much of the question a newer or an older candidate also holds. Per candidate:

- `recency_rr`: its reciprocal rank by date among the candidates (newest 1);
- `newer_same` / `older_same`: the largest idf-weighted share of the question's words this
  candidate's card holds that a newer / an older candidate's holds too (a newer one that says much
  the same of the same subject may have replaced it; an older one, been replaced by it);
- `asks_current`, `asks_time`: whether the question asks for the current state, or for a date
  or an order (short cue lists; the same for every candidate: the trees read the other
  features differently under them);
- `date_named`: the candidate's day lies in a date or period the question names (an ISO date,
  a month with or without its day and year, or a relative date such as "last week", read
  against the newest candidate's date).

Weights are learned with the rest (`train/ranker`); none is set by hand. A pure function of the
candidates' card fields (`fields.CardFields`, with their dates), like `fields.field_matches`.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Mapping
from datetime import date

from codemem.ranking.fields import CardFields, idf_of, words
from codemem.timeline.dates import day_of, resolve

TIME_FEATURES = ("recency_rr", "newer_same", "older_same", "asks_current", "asks_time", "date_named")

ASKS_CURRENT = re.compile(r"\b(now|currently|current|latest|still|these days|at the moment|today|anymore|any more|"
                          r"right now|presently|nowadays|most recent|newest|switched|changed|replaced)\b", re.I)
ASKS_TIME = re.compile(r"\b(when|first|last|before|after|earlier|later|since|until|how long|what date|which date|"
                       r"what year|what month|ago|recently|previous|originally)\b", re.I)


def covered_by(text: str, cards: Mapping[str, CardFields]) -> dict[str, str]:
    """For each candidate that holds some of the question's words, the newest later candidate
    whose card holds every one of them (what it said of the question's subject, said again
    later), by session key."""
    query = words(text)
    held = {key: query & card.text for key, card in cards.items()}
    out = {}
    for key, mine in held.items():
        later = [k for k, theirs in held.items() if mine and cards[k].ms > cards[key].ms and mine <= theirs]
        if later:
            out[key] = max(later, key=lambda k: (cards[k].ms, k))
    return out


def time_matches(text: str, cards: Mapping[str, CardFields]) -> dict[str, tuple[float, ...]]:
    """Per candidate of `cards` (session key -> its card's fields and date), in `TIME_FEATURES` order."""
    if not cards:
        return {}
    weight = idf_of(card.text for card in cards.values())
    query = words(text)
    held = {key: query & card.text for key, card in cards.items()}
    order = sorted(cards, key=lambda k: (-cards[k].ms, k))
    recency = {key: 1.0 / rank for rank, key in enumerate(order, 1)}
    current = float(bool(ASKS_CURRENT.search(text)))
    asks_time = float(bool(ASKS_TIME.search(text)))
    now = max(card.ms for card in cards.values())
    spans = named_spans(text, now) if now > 0 else []
    out: dict[str, tuple[float, ...]] = {}
    for key, card in cards.items():
        mine = held[key]
        total = sum(weight.get(w, 0.0) for w in mine)
        newer = older = 0.0
        if total > 0:
            for other, theirs in held.items():
                if other == key or not theirs:
                    continue
                share = sum(weight.get(w, 0.0) for w in mine & theirs) / total
                if cards[other].ms > card.ms:
                    newer = max(newer, share)
                elif cards[other].ms < card.ms:
                    older = max(older, share)
        day = day_of(card.ms).isoformat() if card.ms > 0 else ""
        named = float(any(start <= day <= end for start, end in spans)) if day else 0.0
        out[key] = (recency[key], newer, older, current, asks_time, named)
    return out


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
