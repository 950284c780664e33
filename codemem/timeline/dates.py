"""Relative dates ("yesterday", "last week", "two days ago") resolved against the date of
the session that says them.

A small pattern set over plain English, pure and deterministic: it runs on every turn an
answer returns, so it must cost microseconds, and a turn's date is all it needs (no time
zones, no locale). What it cannot read it leaves alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "a few": 3, "several": 3,
}
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUM = r"(?P<n>\d{1,2}|a couple of|a few|several|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_UNIT = r"(?P<unit>day|week|month|year)s?"
_PATTERNS = [
    ("ago", re.compile(rf"\b{_NUM}\s+{_UNIT}\s+ago\b", re.I)),
    ("in", re.compile(rf"\bin\s+{_NUM}\s+{_UNIT}\b", re.I)),
    ("day_before_yesterday", re.compile(r"\bthe day before yesterday\b", re.I)),
    ("yesterday", re.compile(r"\byesterday\b|\blast night\b", re.I)),
    ("today", re.compile(r"\btoday\b|\btonight\b|\bthis (?:morning|afternoon|evening)\b", re.I)),
    ("tomorrow", re.compile(r"\btomorrow\b", re.I)),
    ("weekday", re.compile(r"\b(?P<rel>last|this|next|on|past)\s+(?P<day>monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b", re.I)),
    ("period", re.compile(r"\b(?P<rel>last|this|next|past)\s+(?P<unit>week(?:end)?|month|year)\b", re.I)),
    ("before", re.compile(r"\bthe\s+(?P<unit>week(?:end)?|month|year|day)\s+before\b", re.I)),
]


_PAST = re.compile(r"\b(?:was|were|did|went|had|got|made|\w{3,}ed)\b", re.I)


@dataclass(frozen=True)
class Resolved:
    """One relative phrase of a text and the date (or period) it names."""

    phrase: str  # as written
    start: str  # ISO date of the first day it names
    end: str  # ISO date of the last day it names (the same day for a single day)

    def label(self) -> str:
        return self.start if self.start == self.end else f"{self.start} to {self.end}"


def day_of(ms: int) -> date:
    return datetime.fromtimestamp(ms / 1000, UTC).date()


def resolve(text: str, when_ms: int) -> list[Resolved]:
    """The relative dates in `text`, resolved against `when_ms` (the session's time), in
    order of appearance; overlapping phrases are read once (the longest first match)."""
    today = day_of(when_ms)
    found: list[tuple[int, int, Resolved]] = []
    for kind, pattern in _PATTERNS:
        for m in pattern.finditer(text):
            if any(s < m.end() and m.start() < e for s, e, _ in found):
                continue
            span = _span(kind, m, today)
            if span is not None:
                found.append((m.start(), m.end(), Resolved(m.group(0), span[0].isoformat(), span[1].isoformat())))
    return [r for _, _, r in sorted(found, key=lambda f: f[0])]


def _span(kind: str, m: re.Match[str], today: date) -> tuple[date, date] | None:
    if kind in ("ago", "in"):
        n = _count(m.group("n"))
        sign = -1 if kind == "ago" else 1
        return _around(m.group("unit").lower(), today, sign * n)
    if kind == "day_before_yesterday":
        return _day(today - timedelta(days=2))
    if kind == "yesterday":
        return _day(today - timedelta(days=1))
    if kind == "today":
        return _day(today)
    if kind == "tomorrow":
        return _day(today + timedelta(days=1))
    if kind == "weekday":
        rel = m.group("rel").lower()
        if rel == "on":  # "on Friday": the last one in a sentence about the past, else the next
            rel = "last" if _PAST.search(_clause(m)) else "next"
        return _day(_weekday(rel, _WEEKDAYS.index(m.group("day").lower()), today))
    if kind == "period":
        rel = m.group("rel").lower()
        shift = {"last": -1, "past": -1, "this": 0, "next": 1}[rel]
        return _period(m.group("unit").lower(), today, shift)
    if kind == "before":
        unit = m.group("unit").lower()
        return _day(today - timedelta(days=1)) if unit == "day" else _period(unit, today, -1)
    return None


def _clause(m: re.Match[str]) -> str:
    """The clause holding the match (between punctuation marks)."""
    text = m.string
    start = max(text.rfind(c, 0, m.start()) for c in ".;!?,\n") + 1
    ends = [i for c in ".;!?,\n" if (i := text.find(c, m.end())) >= 0]
    return text[start: min(ends, default=len(text))]


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBERS[word.lower()]


def _day(d: date) -> tuple[date, date]:
    return d, d


def _around(unit: str, today: date, n: int) -> tuple[date, date]:
    """`n` units from `today` ("two weeks ago": n = -2): a day, or the week, month or year
    that holds the day so many units away."""
    if unit == "day":
        return _day(today + timedelta(days=n))
    if unit == "week":
        return _period("week", today + timedelta(weeks=n), 0)
    if unit == "month":
        return _period("month", _add_months(today, n), 0)
    return _period("year", today.replace(year=today.year + n, day=min(today.day, 28)), 0)


def _period(unit: str, today: date, shift: int) -> tuple[date, date]:
    """The week (Monday to Sunday), weekend, month or year `shift` of them from `today`'s."""
    if unit == "week":
        monday = today - timedelta(days=today.weekday()) + timedelta(weeks=shift)
        return monday, monday + timedelta(days=6)
    if unit == "weekend":
        saturday = today - timedelta(days=today.weekday()) + timedelta(days=5, weeks=shift)
        if shift < 0 and today.weekday() >= 5:  # said on a weekend: "last weekend" is the one before
            saturday = today - timedelta(days=today.weekday() - 5) - timedelta(weeks=1)
        return saturday, saturday + timedelta(days=1)
    if unit == "month":
        first = _add_months(today.replace(day=1), shift)
        return first, _add_months(first, 1) - timedelta(days=1)
    year = today.year + shift
    return date(year, 1, 1), date(year, 12, 31)


def _add_months(d: date, n: int) -> date:
    month = d.month - 1 + n
    year = d.year + month // 12
    month = month % 12 + 1
    days = [31, 29 if _leap(year) else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
    return date(year, month, min(d.day, days))


def _leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def _weekday(rel: str, target: int, today: date) -> date:
    """"last Friday": the latest Friday before today; "next Friday": the first after it;
    "this"/"on Friday": the one in today's week."""
    if rel in ("last", "past"):
        back = (today.weekday() - target) % 7 or 7
        return today - timedelta(days=back)
    if rel == "next":
        ahead = (target - today.weekday()) % 7 or 7
        return today + timedelta(days=ahead)
    return today - timedelta(days=today.weekday()) + timedelta(days=target)
