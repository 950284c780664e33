"""Exact identifiers in free text: the strings an agent searches for letter by letter.

Error codes (``E501``, ``ORA-00942``), test ids (``tests/test_x.py::test_case``),
snake_case and dotted names (``module_377``, ``django.db.models``), issue numbers
(``#1234``) and commit hashes are looked up whole. A word tokenizer splits them into
pieces that every other message shares (``module``, ``377``), so a search for one of them
ties hundreds of items; matched as whole terms they single out the one that holds them.

Each term is lowercased; a compound term (path, test id, dotted name) also yields its
pieces that are identifiers themselves, so ``test_mod377`` finds
``tests/test_mod377.py::test_case``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

MAX_TERMS = 256
MAX_TERM_CHARS = 200
SLICE_CHARS = 1 << 16

# A token: a run of identifier characters and the joiners that hold a compound together.
_TOKEN = re.compile(r"#?[\w$@][\w$@./:#-]*")
_OUTSIDE_TOKENS = re.compile(r"[^\w$@./:#-]")  # a character no token holds
_PIECES = re.compile(r"::|[./:#]")
_PARTS = re.compile(r"::|[/:#]")  # a path's or test id's parts; dotted names stay whole
_ISSUE = re.compile(r"#\d{1,9}")
_HASH = re.compile(r"[0-9a-f]{7,40}")
_LETTER = re.compile(r"[A-Za-z]")
_DIGIT = re.compile(r"\d")
_NUMERIC = re.compile(r"[\d.]+")


def _is_identifier(piece: str) -> bool:
    """snake_case, letters mixed with digits, or a hyphenated code with a digit."""
    if len(piece) < 3 or not _LETTER.search(piece):
        return False
    if "_" in piece.strip("_"):
        return True
    has_digit = bool(_DIGIT.search(piece))
    if "-" in piece:
        return has_digit
    return has_digit and not piece.isdigit()


def _is_hash(token: str) -> bool:
    return bool(_HASH.fullmatch(token)) and bool(_DIGIT.search(token)) and bool(re.search(r"[a-f]", token))


def _is_compound(token: str) -> bool:
    """A dotted name, path or test id: joined pieces, at least two of them names."""
    if not any(j in token for j in ("::", ".", "/")) or _NUMERIC.fullmatch(token):
        return False
    names = [p for p in _PIECES.split(token) if p and _LETTER.match(p)]
    return len(names) >= 2 and len(token) >= 4


def exact_terms(text: str) -> list[str]:
    """The text's exact identifiers, lowercase, deduplicated in first-seen order."""
    out: dict[str, None] = {}
    seen: set[str] = set()  # a diff repeats its tokens: each is judged once
    for piece in slices(text, SLICE_CHARS):
        # Each distinct token once, in first-seen order, deduplicated in C: a 2 MB text of a
        # few words repeated is 300k tokens and a handful of distinct ones.
        for raw in dict.fromkeys(_TOKEN.findall(piece)):
            token = raw.rstrip(".:-/#")
            if not token or len(token) > MAX_TERM_CHARS or token in seen:
                continue
            seen.add(token)
            out.update(dict.fromkeys(_token_terms(token)))
            if len(out) >= MAX_TERMS:
                return list(out)[:MAX_TERMS]
    return list(out)


def slices(text: str, size: int = SLICE_CHARS) -> Iterator[str]:
    """`text` in pieces of about `size` characters, each cut where no token can run on (a
    line end, a space, a comma or a quote; else the next character no token holds), so the
    pieces hold the same tokens as the whole.

    One regex call over a whole message holds the GIL for as long as it runs: over a 4 MB
    tool output, tens of milliseconds a call, in which the server's event loop (its /health)
    waits. Pieces keep each call short, and the terms stop being read once `MAX_TERMS` are
    found."""
    start, n = 0, len(text)
    while n - start > size:
        end = start + size
        cut = max(text.rfind(c, start + 1, end) for c in "\n ,\"")
        if cut <= start:
            found = _OUTSIDE_TOKENS.search(text, end)
            cut = found.start() if found else n
        yield text[start:cut]
        start = cut
    if start < n:
        yield text[start:]


@functools.lru_cache(maxsize=1 << 16)
def _token_terms(token: str) -> tuple[str, ...]:
    """The terms one token yields, in order (cached: a repository's diffs and messages
    repeat the same identifiers commit after commit)."""
    if _ISSUE.fullmatch(token):
        return (token,)
    if _is_compound(token):
        terms = [token.lower()]
        for part in _PARTS.split(token):
            if _is_identifier(part) or _is_compound(part):
                terms.append(part.lower())
            for piece in part.split(".") if "." in part else ():
                if _is_identifier(piece):
                    terms.append(piece.lower())
        return tuple(terms)
    if _is_hash(token.lower()) or _is_identifier(token):
        return (token.lower(),)
    return ()
