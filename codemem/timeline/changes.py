"""A change of choice read from a sentence's structure: a marker that says what is replaced
("from X to Y", "off X onto Y", "Y rather than X", "Y, not X", "replaced X with Y",
"dropped X ... Y", "X -> Y") and the names on either side of it.

`facts.py` reads statements by whole phrasings; a team says a change in more ways than any
list of phrasings holds, but nearly always with one of a few markers of the replaced value
and with names of tools, versions or quantities on both sides. A name is a word that is
written like one: capitalised inside a sentence ("Typesense", "EMQX", "PagerDuty"), holding
a digit ("v2", "3.12", "20 seconds" with its unit) or code punctuation ("next.js",
"pg_bouncer"), or set in backticks. A pair is kept only where the replaced side or the new
side is such a name, so that "from the morning to the afternoon" states no change.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TOKEN = re.compile(r"`?[\w][\w.+#/@':-]*[\w+#]`?|`?\w`?")
_STOP = frozenset("""for because since as and but so which that who when while after before in on at from to
instead now anymore any these this those with by last yesterday today tomorrow again too though if
then than not rather over off onto into is are was were be been has have had will would should can could
it its we our they their he she his her you your i me us them today's here there every each
handles handle handled covers cover covered takes take runs run uses use using used""".split())
_DETERMINERS = frozenset({"the", "our", "a", "an", "all", "its", "their", "my", "your"})
_PRONOUNS = frozenset({"i", "i'm", "i've", "i'll", "i'd"})
# Capitalised but dates, not names of a choice (`dates.py` reads them).
_CALENDAR = frozenset("""monday tuesday wednesday thursday friday saturday sunday january february march april
may june july august september october november december""".split())
_SLOT = frozenset({"on", "onto", "to", "with", "by", "via", "use", "uses", "using"})
# (marker of the replaced value, marker of the new value that follows it, whether both must be
# names: "from X to Y" also says where things go that are not choices, "copied the figures
# from Grafana to the doc").
_OLD_THEN_NEW = (
    (r"from", r"to|onto|into|with", True),
    (r"off(?:\s+of)?", r"onto|to|into|in\s+favou?r\s+of", False),
    (r"replace[sd]?|replacing|swap(?:s|ped)?|swapping", r"with|by|for", False),
    (r"away\s+from", r"to|onto|in\s+favou?r\s+of", False),
)
# Where a dropped value's clause ends: what was dropped is the whole object ("dropped Sam a
# note" drops no Sam).
_CLAUSE_END = re.compile(r"\s*(?:[;,.:!)]|$|\s(?:in\s+favou?r\s+of|for|and|but|so)\b)", re.I)
_DROP = (r"dropped|drop|dropping|removed|ditched|retired|deprecated|abandoned|sunset|got\s+rid\s+of|"
         r"stopped\s+using|no\s+longer\s+use[sd]?")
_NEW_THEN_OLD = (r"\b(?:instead\s+of|rather\s+than|in\s+place\s+of|replaces|replaced|supersedes|superseded|"
                 r"is\s+replacing|has\s+replaced)|,\s*not")
_ARROW = r"->|=>|\u2192"
_FOR = re.compile(r"\bfor\s+(?:(?:the|our|all|its|their|my)\s+)?((?:[a-z][\w-]*\s+){0,3}[a-z][\w-]*)", re.I)


@dataclass(frozen=True)
class Change:
    """A change as said: the new value, the value it replaces, and the subject where the
    sentence says "for S" ("" where not); phrases as written."""

    value: str
    replaces: str
    subject: str = ""


@dataclass(frozen=True)
class _Tok:
    text: str
    start: int
    end: int
    name: bool
    joined: bool  # only spaces between it and the token before


def change(sentence: str) -> Change | None:
    """The change one sentence states, or None: the first marker that has a replaced value
    after it and a new value where its kind says, one of them a name."""
    tokens = _tokens(sentence)
    for old_marker, new_marker, both in _OLD_THEN_NEW:
        for m in re.finditer(rf"\b(?:{old_marker})\s+", sentence, re.I):
            old = _phrase_at(tokens, m.end())
            if old is None or (both and not old[2]):
                continue
            n = re.compile(rf"\b(?:{new_marker})\s+", re.I).search(sentence, old[1])
            if n is not None and (new := _phrase_at(tokens, n.end())) is not None and (new[2] or not both):
                if (found := _pair(sentence, old, new, _object_before(tokens, m.start()))) is not None:
                    return found
    for m in re.finditer(rf"\b(?:{_DROP})\s+", sentence, re.I):
        old = _phrase_at(tokens, m.end())
        if old is None or _CLAUSE_END.match(sentence, old[1]) is None:
            continue
        if (new := _name_after(tokens, old[1])) is not None:
            if (found := _pair(sentence, old, new)) is not None:
                return found
    for m in re.finditer(rf"(?:{_NEW_THEN_OLD})\s+", sentence, re.I):
        old = _phrase_at(tokens, m.end())
        if old is not None and (new := _value_before(tokens, m.start())) is not None:
            if (found := _pair(sentence, old, new)) is not None:
                return found
    for m in re.finditer(rf"\s*(?:{_ARROW})\s*", sentence):
        old, new = _name_before(tokens, m.start()), _phrase_at(tokens, m.end())
        if old is not None and new is not None and (found := _pair(sentence, old, new)) is not None:
            return found
    return None


def _pair(sentence: str, old: tuple[str, int, bool], new: tuple[str, int, bool], subject: str = "") -> Change | None:
    """A change from `old` to `new` (each: phrase, end offset, whether a name), or None where
    neither is a name or they are one phrase; its subject `subject`, else what "for S" says."""
    if not (old[2] or new[2]) or old[0].lower() == new[0].lower():
        return None
    if subject:
        return Change(new[0], old[0], subject)
    for m in _FOR.finditer(sentence):
        words = [w for w in m.group(1).split() if w.lower() not in _STOP]
        if words and " ".join(words).lower() not in (old[0].lower(), new[0].lower()):
            subject = " ".join(words)
            break
    return Change(new[0], old[0], subject)


def _tokens(sentence: str) -> list[_Tok]:
    out: list[_Tok] = []
    for m in _TOKEN.finditer(sentence):
        raw = m.group()
        text = raw.strip("`")
        k = m.start()  # the text before the token, less its trailing spaces, ends at k (no copy)
        while k and sentence[k - 1].isspace():
            k -= 1
        first = not k or sentence[k - 1] in ':"(\u2014'
        joined = bool(out) and not sentence[out[-1].end : m.start()].strip()
        out.append(_Tok(text, m.start(), m.end(), raw.startswith("`") or _looks_like_name(text, first), joined))
    return out


def _looks_like_name(word: str, first: bool) -> bool:
    """Written like a name: a digit, a capital inside the word, a capital where a sentence
    does not start, or code punctuation between letters."""
    if word.lower() in _PRONOUNS or word.lower() in _CALENDAR:
        return False
    if any(c.isdigit() for c in word) or any(c.isupper() for c in word[1:]):
        return True
    if word[0].isupper() and not first:
        return True
    return bool(re.search(r"\w[._/]\w", word))


def _phrase_at(tokens: list[_Tok], offset: int) -> tuple[str, int, bool] | None:
    """The phrase starting at `offset` (determiners skipped): a run of names, a number with
    its unit, or else up to four words before a word that starts a clause."""
    i = next((i for i, t in enumerate(tokens) if t.start >= offset), len(tokens))
    while i < len(tokens) and tokens[i].text.lower() in _DETERMINERS:
        i += 1
    if i == len(tokens):
        return None
    if tokens[i].name:
        j = i
        while j + 1 < len(tokens) and tokens[j + 1].name and tokens[j + 1].joined:
            j += 1
        if tokens[j].text[-1].isdigit() and j + 1 < len(tokens) and _unit(tokens[j + 1]) and tokens[j + 1].joined:
            j += 1
        return " ".join(t.text for t in tokens[i : j + 1]), tokens[j].end, True
    j = i
    while j < len(tokens) and j - i < 4 and tokens[j].text.lower() not in _STOP and (j == i or tokens[j].joined):
        j += 1
    if j == i:
        return None
    return " ".join(t.text for t in tokens[i:j]), tokens[j - 1].end, False


def _unit(t: _Tok) -> bool:
    return t.text.isalpha() and t.text.islower() and t.text not in _STOP


def _object_before(tokens: list[_Tok], offset: int) -> str:
    """What is moved in "migrated the storefront off X", "moved our hosting from X": the
    words between a determiner and the marker at `offset` (none that starts a clause or is
    a name); "" where no determiner leads them."""
    before = [t for t in tokens if t.end <= offset]
    k = len(before)
    while k > 0 and len(before) - k < 4 and before[k - 1].text.lower() not in _DETERMINERS:
        t = before[k - 1]
        if t.name or t.text.lower() in _STOP or not t.joined:
            return ""
        k -= 1
    if k == 0 or k == len(before) or before[k - 1].text.lower() not in _DETERMINERS:
        return ""
    return " ".join(t.text for t in before[k:])


def _name_after(tokens: list[_Tok], offset: int) -> tuple[str, int, bool] | None:
    """The first name after `offset`."""
    for t in tokens:
        if t.start >= offset and t.name:
            return _phrase_at(tokens, t.start)
    return None


def _name_before(tokens: list[_Tok], offset: int) -> tuple[str, int, bool] | None:
    """The run of names (or a number and its unit) that ends just before `offset`."""
    before = [t for t in tokens if t.end <= offset]
    i = len(before) - 1
    if i > 0 and _unit(before[i]) and before[i].joined and before[i - 1].text[-1].isdigit():
        i -= 1
    if i < 0 or not before[i].name:
        return None
    while i > 0 and before[i - 1].name and before[i].joined:
        i -= 1
    return _phrase_at(tokens, before[i].start)


def _value_before(tokens: list[_Tok], offset: int) -> tuple[str, int, bool] | None:
    """The new value of "Y rather than X": the object after the last "on/with/by/use..."
    before the marker where there is one after the nearest name ("runs on imgix these days,
    not ..."), else the nearest name."""
    before = [t for t in tokens if t.end <= offset]
    name_at = next((k for k in range(len(before) - 1, -1, -1) if before[k].name), -1)
    slot_at = next((k for k in range(len(before) - 1, -1, -1) if before[k].text.lower() in _SLOT), -1)
    if slot_at > name_at and slot_at + 1 < len(before):
        found = _phrase_at(tokens, before[slot_at + 1].start)
        if found is not None:
            return found
    if name_at < 0:
        return None
    k = name_at
    while k > 0 and before[k - 1].name and before[k].joined:
        k -= 1
    return _phrase_at(tokens, before[k].start)


def names_in(text: str) -> list[str]:
    """The names `text` holds (runs of names, a number with its unit), in order; its first
    word counts as one only where it is written like a name inside a sentence."""
    tokens = _tokens(text)
    out: list[str] = []
    end = -1
    for t in tokens:
        if t.start >= end and t.name and (found := _phrase_at(tokens, t.start)) is not None:
            out.append(found[0])
            end = found[1]
    return out
