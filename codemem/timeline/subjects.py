"""Statements of a subject's value read by structure: a subject phrase and the name attached
to it in one clause ("for background jobs we'll run X", "the heartbeat interval is 20
seconds", "logs go to X").

A team restates a choice without saying what it replaces ("so background jobs are on Y as of
this week"); the old value is in another clause or not said at all. Two such statements of
one subject phrase in different sessions, with different names, are a change all the same
(`facts.supersedes` compares them). Only a clause that opens with the subject (or with "for"
and the subject) and links it to a name by a short verb is read, so that a name in another
role ("paired with X on the bug") is not taken for a value.
"""

from __future__ import annotations

import re

from codemem.timeline.changes import names_in

# Words that link a subject at the head of a clause to its value.
_LINK = frozenset("""is are was were will get gets go goes went move moves moved sit sits live lives run runs
use uses land lands stay stays come comes start starts now have has got be kept""".split())
_DETERMINERS = frozenset({"the", "our", "all", "its", "their", "my", "your"})
_NOT_SUBJECT = frozenset("""for because since as and but so which that who when while after before in on at from to
instead now any these this those with by it we they he she you i me us them there here what who
also just only not no one some every each nobody someone everyone something nothing""".split())
_CLAUSE = re.compile(r"[;:,.!?()\u2014]|\s(?:so|and|but|because|since|while|though)\s", re.I)
_WORD = re.compile(r"[a-z][a-z-]*\Z")


def subject_values(sentence: str) -> list[tuple[str, str]]:
    """(subject phrase, value) for each clause of `sentence` that opens with a subject phrase
    (one to three lower-case words, or "for" and them) linked to a name; a subject given two
    values in one sentence is left out (which one holds is not said)."""
    found: dict[str, str] = {}
    ambiguous: set[str] = set()
    start, pending = 0, ""
    for m in [*_CLAUSE.finditer(sentence), None]:
        end = m.start() if m is not None else len(sentence)
        clause = sentence[start:end]
        start = m.end() if m is not None else len(sentence)
        read = _clause(clause)
        if read is None and pending and (named := names_in(clause)):
            read = pending, named[0]  # "for S, we picked X": the subject's clause stands alone
        pending = _for_alone(clause)
        if read is None:
            continue
        subject, value = read
        if found.get(subject, value) != value:
            ambiguous.add(subject)
        found[subject] = value
    return [(s, v) for s, v in found.items() if s not in ambiguous]


def _clause(clause: str) -> tuple[str, str] | None:
    """(subject phrase, value) where `clause` opens with a subject phrase linked to a name."""
    i, j, words = _subject_at(clause)
    if j == i or j == len(words):
        return None
    if words[0].lower() != "for" and words[j].lower() not in _LINK:
        return None
    named = names_in(" ".join(words[j:]))
    if not named:
        return None
    return " ".join(w.lower() for w in words[i:j]), named[0]


def _for_alone(clause: str) -> str:
    """The subject phrase of a clause that is only "for S" ("" where it is not)."""
    i, j, words = _subject_at(clause)
    if words and words[0].lower() == "for" and j > i and j == len(words):
        return " ".join(w.lower() for w in words[i:j])
    return ""


def _subject_at(clause: str) -> tuple[int, int, list[str]]:
    """The clause's words and where its opening subject phrase starts and ends (after a
    leading "for" and determiners): lower-case words that start no clause, three at most."""
    words = clause.split()
    i = 0
    if words and words[0].lower() == "for":
        i = 1
    while i < len(words) and words[i].lower() in _DETERMINERS:
        i += 1
    j = i
    while j < len(words) and j - i < 3 and _WORD.match(words[j].lower()) and words[j].lower() not in _NOT_SUBJECT \
            and words[j].lower() not in _LINK and (words[j].islower() or j == 0):
        j += 1
    return i, j, words
