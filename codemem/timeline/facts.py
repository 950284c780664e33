"""Statements of a choice and what they replace, read by patterns, without a model.

"We switched from Alembic to Aerich for migrations", "the API now uses JWT instead of
sessions", "we no longer use Redis", "our CI is GitHub Actions", "the timeout was raised to
30 seconds": each is a `Fact` with a value, the subject it is a value of where the sentence
says (a short noun phrase, keyed by its last word: "database migrations" and "migrations"
are one subject), and the value it replaces where it names one. Two facts of one user are
compared in `supersedes`: a later one replaces an earlier one of the same subject with
another value, or one whose value it names as replaced.

A sentence none of these phrasings reads as a replacement is read by its structure
(`changes.py`: a marker of the replaced value and names on both sides), so that a change said
in other words ("migrated S off X and onto Y", "S runs on Y these days, not X") is one too.
A clause that opens with a subject phrase linked to a name (`subjects.py`: "so background
jobs are on Y as of this week") states that subject's value, keyed by the whole phrase, so
that a later session's other name for the same subject replaces it though it never names
the old value; a subject is the same where the shorter phrase ends the longer.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from codemem.timeline.changes import change
from codemem.timeline.subjects import subject_values

# A value: a name, a version, a number with its unit; a few words at most, up to the first
# word that starts a clause. Subjects likewise.
_STOP = (r"(?:for|because|since|as|and|but|so|which|that|who|when|while|after|before|in|on|at|"
         r"from|to|instead|now|anymore|any|these|this|with|by|last|yesterday|today|again|too|though|if)")
_PHRASE = rf"(?P<{{name}}>(?:(?!{_STOP}\b)[\w.+#/@-]+)(?:\s+(?!{_STOP}\b)[\w.+#/@-]+){{{{0,3}}}})"


def _p(name: str) -> str:
    return _PHRASE.format(name=name)


_VAL, _OLD, _SUBJ, _SUBJ2 = _p("value"), _p("old"), _p("subject"), _p("subject2")
# A value followed by a fixed phrase ("... instead of X") may hold "with" ("OAuth with Keycloak").
_VALW = rf"(?P<value>[\w.+#/@-]+(?:\s+(?!{_STOP.replace('with|', '')}\b)[\w.+#/@-]+){{0,3}})"
_FOR = rf"(?:\s+(?:for|as)\s+(?:(?:the|our|all|a|an|its|their|my)\s+)?{_SUBJ})?"
_WE = r"(?:we|we've|we're|we'll|i|i've|they|the team|the project|it|our team|let's|let us)"
_PATTERNS: list[re.Pattern[str]] = [re.compile(p, re.I) for p in (
    # "S now uses Y instead of X"
    rf"\b(?:the\s+|our\s+)?{_SUBJ}\s+(?:now\s+)?(?:uses|is using|runs on|is on|is handled by|is done with)\s+{_VALW}\s+"
    rf"(?:instead of|rather than|in place of)\s+{_OLD}",
    # "for S we went with Y"
    rf"\bfor\s+(?:the\s+|our\s+)?{_SUBJ},?\s+{_WE}\s+(?:now\s+)?(?:went with|go with|use|chose|picked|settled on|"
    rf"are using|are on|decided on|adopted)\s+{_VAL}",
    # "switched from X to Y (for S)", "moved our S from X to Y"
    rf"\b(?:switch|switched|switching|move|moved|moving|migrate|migrated|migrating|change|changed|changing|"
    rf"went|go|going|port|ported|porting|transition|transitioned)\s+(?:over\s+)?"
    rf"(?:(?:(?:the|our|all)\s+)?{_SUBJ2}\s+)?from\s+{_OLD}\s+(?:over\s+)?to\s+{_VAL}{_FOR}",
    # "replaced X with Y (for S)"
    rf"\b(?:replace|replaced|replacing|swap|swapped|swapping)\s+(?:the\s+|our\s+)?{_OLD}\s+(?:with|for|by)\s+{_VAL}{_FOR}",
    # "use Y instead of X (for S)", "went with Y rather than X"
    rf"\b(?:use|uses|using|used|chose|choose|picked|pick|went with|go with|going with|settled on|adopted|adopt|"
    rf"decided on|prefer|run|runs|running|deploy to|host on)\s+{_VALW}\s+(?:instead of|rather than|in place of|over)\s+{_OLD}{_FOR}",
    # "Y replaces X", "Y is replacing X"
    rf"\b{_VAL}\s+(?:now\s+)?(?:replaces|replaced|is replacing|has replaced|supersedes)\s+{_OLD}{_FOR}",
    # "upgraded S to Y", "bumped S to Y", "set S to Y", "raised the S to Y"
    rf"\b(?:upgrade|upgraded|upgrading|bump|bumped|bumping|set|raise|raised|lower|lowered|increase|increased|"
    rf"decrease|decreased|pin|pinned|update|updated|downgrade|downgraded|reduce|reduced)\s+(?:the\s+|our\s+)?{_SUBJ}"
    rf"\s+(?:from\s+{_OLD}\s+)?to\s+{_VAL}",
    # "the S is now Y", "the S was raised to Y", "our S is Y"
    rf"\b(?:the|our)\s+{_SUBJ}\s+(?:is|are|was|were|has been|have been)\s+(?:now\s+|also\s+)?"
    rf"(?:(?:set|bumped|raised|lowered|changed|moved|upgraded|switched|increased|reduced|pinned|updated)\s+)?"
    rf"(?:(?:from\s+{_OLD}\s+)?to\s+)?{_VAL}",
    # "we (now) use Y for S", "we're going with Y for S", "we settled on Y for S"
    rf"\b{_WE}\s+(?:now\s+|still\s+|currently\s+|also\s+)?(?:(?:are|is|have|will|'re)\s+)?(?:now\s+)?"
    rf"(?:use|uses|using|went with|go with|going with|settled on|decided on|picked|chose|adopted|standardi[sz]ed on|"
    rf"rely on|run|are on|is on|on|deploy to|deploying to|host on|store \w+ in|keep \w+ in)\s+{_VAL}{_FOR}",
    # "S now uses Y", "S runs on Y"
    rf"\b(?:the\s+|our\s+)?{_SUBJ}\s+(?:now\s+)?(?:uses|runs on|is built on|is built with|lives in|is hosted on|is deployed to)\s+{_VAL}",
)]
_DROPPED = [re.compile(p, re.I) for p in (
    rf"\b(?:no longer|don't|do not|stopped|stop|quit|not)\s+(?:use|uses|using|need|needs|rely on)\s+{_OLD}",
    rf"\b(?:dropped|removed|ditched|retired|abandoned|got rid of)\s+(?:the\s+|our\s+)?{_OLD}",
    rf"\b{_OLD}\s+(?:is|are)\s+(?:gone|out|retired|dead|no more)\b",
)]
_DETERMINERS = {"the", "our", "a", "an", "all", "its", "their", "my", "this", "that", "we", "new", "old", "current"}
_VAGUE = {"it", "them", "that", "this", "something", "things", "stuff", "one", "way", "lot", "bit", "same", "thing",
          "here", "there", "time", "now", "well", "you", "me", "us", "him", "her", "what", "sure", "really",
          "much", "more", "less", "too", "very", "just", "also", "not", "be", "been", "being", "going", "out",
          "up", "back", "down", "over", "off", "again", "home", "work", "some", "and", "or"}
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")
_FULL_STOP = re.compile(r"(?<=[.!?])\s+|\n+")  # a sentence whose clauses a semicolon joins
# A statement of a choice is a sentence of human length; a longer run with no full stop is
# not prose (a minified JSON document, a log line, a pasted blob), and reading it clause by
# clause cost far more than the rest of its Add.
MAX_SENTENCE_CHARS = 2000


@dataclass(frozen=True)
class Fact:
    """One stated choice: `value` (normalised), the `subject` it is a value of (its key, the
    phrase's last word, singular; "" where unsaid) and the value it `replaces` ("" where unsaid).
    A statement that something is no longer used has no value and names what it replaces."""

    subject: str
    value: str
    replaces: str = ""

    def to_json(self) -> list[str]:
        return [self.subject, self.value, self.replaces]

    @classmethod
    def from_json(cls, raw: object) -> Fact | None:
        if isinstance(raw, list) and len(raw) == 3 and all(isinstance(x, str) for x in raw):
            return cls(raw[0], raw[1], raw[2])
        return None


def facts(text: str) -> list[Fact]:
    """The facts stated in `text`, sentence by sentence, at most one choice and one drop per
    sentence (the first pattern that reads it). Cached: a Search reads the facts of every
    candidate turn, and the same turns come back for many questions."""
    return list(_facts(text))


@functools.lru_cache(maxsize=32_768)
def _facts(text: str) -> tuple[Fact, ...]:
    out: list[Fact] = []
    for full in _FULL_STOP.split(text):
        if len(full) > MAX_SENTENCE_CHARS:
            continue
        start = len(out)
        _phrased(full, out)
        if "?" in full:
            continue
        found = out[start:]
        if not any(f.value and f.replaces for f in found) and (read := _changed(full)) is not None:
            # The structural reading names both sides: it stands for a phrased fact of either
            # side (a drop of what it replaces, a value without it), whose subject it keeps.
            same = [f for f in found if f.replaces == read.replaces or f.value == read.value]
            subject = read.subject or next((f.subject for f in same if f.subject), "")
            out[start:] = [f for f in found if f not in same] + [Fact(subject, read.value, read.replaces)]
        _attached(full, out, start)
    return tuple(dict.fromkeys(out))


def _phrased(text: str, out: list[Fact]) -> None:
    """Appends to `out` (the facts of the sentences before) the facts the phrasings read in
    `text`, clause by clause."""
    for sentence in _SENTENCE.split(text):
        if "?" in sentence:  # a question states nothing
            continue
        for pattern in _PATTERNS:
            m = pattern.search(sentence)
            if m is None:
                continue
            fact = _fact(m)
            if fact is not None:
                out.append(fact)
                break
        for dropped in _DROPPED:
            if (d := dropped.search(sentence)) is not None and (old := _norm(d.group("old"))):
                if any(f.replaces == old or f.value == old for f in out):
                    break
                if out and not out[-1].replaces and out[-1].value:  # "X is gone, we're on Y": Y replaces X
                    out[-1] = Fact(out[-1].subject, out[-1].value, old)
                else:
                    out.append(Fact("", "", old))
                break


def _attached(sentence: str, out: list[Fact], start: int) -> None:
    """Adds to `out` (whose facts from `start` on are the sentence's) the values the sentence
    attaches to a subject phrase (`subjects.subject_values`): a fact of the same value that
    names no subject, or a subject the phrase ends with, takes the phrase ("the web app is X"
    is of "web app", not of any "app"); another value is a fact of its own, unless it is what
    a fact of the sentence replaces or the subject already has a value there."""
    for phrase, name in subject_values(sentence):
        value, subject = _norm(name), subject_phrase(phrase)
        if not value or not subject or any(f.replaces == value for f in out[start:]):
            continue
        same = next((k for k in range(start, len(out)) if out[k].value.split()[: len(value.split())] == value.split()),
                    None)
        if same is not None:
            if not out[same].subject or same_subject(out[same].subject, subject):
                out[same] = Fact(subject, out[same].value, out[same].replaces)
        elif not any(same_subject(f.subject, subject) for f in out[start:]):
            out.append(Fact(subject, value))


def subject_phrase(phrase: str) -> str:
    """A subject phrase as compared: each word of the normalised phrase singular ("background
    jobs" is "background job")."""
    return " ".join(_singular(w) for w in _norm(phrase).split())


def _changed(sentence: str) -> Fact | None:
    """The change the sentence's structure states (`changes.change`), as a fact."""
    found = change(sentence)
    if found is None:
        return None
    value, old = _norm(found.value), _norm(found.replaces)
    if not value or not old or value == old:
        return None
    return Fact(subject_key(found.subject), value, old)


def _fact(m: re.Match[str]) -> Fact | None:
    groups = m.groupdict()
    value = _norm(groups.get("value") or "")
    if not value:
        return None
    subject = subject_key(groups.get("subject") or groups.get("subject2") or "")
    old = _norm(groups.get("old") or "")
    if old == value:
        return None
    return Fact(subject, value, old)


def _norm(phrase: str) -> str:
    """A value as compared: lower case, determiners off the front, trailing punctuation off;
    "" for a pronoun or a filler word, which names no value."""
    words = [w.strip(".,:;!'\"()") for w in phrase.lower().split()]
    while words and words[0] in _DETERMINERS:
        words.pop(0)
    words = [w for w in words if w]
    if not words or all(w in _VAGUE for w in words):
        return ""
    return " ".join(words)


def subject_key(phrase: str) -> str:
    """A subject as compared: its normalised phrase's last word, singular."""
    norm = _norm(phrase)
    if not norm:
        return ""
    return _singular(norm.split()[-1])


def _singular(word: str) -> str:
    if len(word) > 3 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def same_subject(a: str, b: str) -> bool:
    """Whether two subjects are one: equal, or the words of the shorter end the longer ("flag"
    and "feature flag"; "mobile app" and "web app" are two)."""
    if not a or not b:
        return False
    if a == b:
        return True
    short, long = sorted((a.split(), b.split()), key=len)
    return long[-len(short):] == short


def supersedes(later: Fact, earlier: Fact) -> bool:
    """Whether `later` (stated after `earlier`) replaces it: it names `earlier`'s value as
    what it replaces, or it gives the same subject another value."""
    if earlier.value and later.replaces and later.replaces == earlier.value:
        return True
    if earlier.value and later.replaces and later.replaces == earlier.replaces and later.value != earlier.value:
        return bool(later.value)
    return bool(same_subject(earlier.subject, later.subject) and later.value and later.value != earlier.value)
