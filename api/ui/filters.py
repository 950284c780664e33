"""How stored text is shown: a card split into its sections, diffs highlighted by Pygments,
times and sizes in words. Pure functions over strings, registered as Jinja filters.

Everything returned as `Markup` is escaped here first (Pygments escapes what it
highlights); everything else is escaped by Jinja's autoescape.
"""

from __future__ import annotations

import json
import re
from typing import Any

from markupsafe import Markup
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import DiffLexer

from codemem import times
from codemem.experience.building import render
from codemem.experience.types import CONVERSATION
from codemem.ranking.answer import EVIDENCE_HEADING

_FORMATTER = HtmlFormatter(cssclass="highlight")
_LEXER = DiffLexer()
_FENCE = re.compile(r"^```[a-z]*\n(.*?)\n?```\s*$", re.DOTALL)
# Search appends the experience's strongest evidence after its card (codemem/ranking/answer.py).
EVIDENCE_MARK = f"\n\n{EVIDENCE_HEADING}"
FINAL_DIFF = "Final diff"


def card_sections(text: str) -> list[tuple[str, str]]:
    """The card's `## Heading` sections in order, as (heading, body), without the evidence a
    Search inlined after it; text before the first heading is one untitled section."""
    return render.card_sections(text.split(EVIDENCE_MARK, 1)[0])


def card_section(text: str, heading: str) -> str:
    return next((body for title, body in card_sections(text) if title == heading), "")


def stale_notes(metadata: dict[str, Any]) -> list[tuple[str, Any]]:
    """The metadata entries about staleness (whatever the past-fixes work names them)."""
    return sorted((k, v) for k, v in metadata.items() if "stale" in k.lower() and v not in (None, "", [], {}))


def evidence_of(content: str) -> str:
    """The evidence a Search answer inlined after the card ("" when none)."""
    parts = content.split(EVIDENCE_MARK, 1)
    return parts[1].strip() if len(parts) == 2 else ""


def unfence(body: str) -> str:
    """A fenced block's inside (the final diff is stored as a ```diff block)."""
    m = _FENCE.match(body.strip())
    return m.group(1) if m else body


def highlight_diff(text: str) -> Markup:
    """A unified diff highlighted (Pygments escapes every character it emits)."""
    return Markup(highlight(text, _LEXER, _FORMATTER))


def split_edit(text: str) -> tuple[str, str]:
    """An edit step's first line ("Edit path") and its diff."""
    first, _, rest = text.partition("\n")
    return first, rest


def test_outcome(text: str) -> str:
    """"passed" or "failed" (or "") from a test run step's `Result:` line."""
    m = re.search(r"^Result: (\w+)", text, re.MULTILINE)
    return m.group(1).lower() if m else ""


def when(ms: int | None) -> str:
    """Unix ms as a date and time ("" for none, or one past what a date can hold)."""
    if not times.representable(ms):
        return ""
    return times.iso(ms)[:19].replace("T", " ") + " UTC"


def when_iso(iso: str) -> str:
    """A Search item's `created_at` (ISO 8601, UTC) as `when` writes a time."""
    return iso[:19].replace("T", " ") + " UTC" if iso else ""


def count(n: object) -> str:
    """A count with thousands separators (13,813); anything else as it is."""
    return f"{n:,}" if isinstance(n, int) and not isinstance(n, bool) else str(n)


def kind_of(metadata: dict[str, Any]) -> str:
    """What an experience is, by its metadata: "merge" (a merged branch, its commits inside),
    "commit", "conversation" or "session" (an agent's session)."""
    if "commit" in metadata:
        commits = metadata.get("commits")
        return "merge" if isinstance(commits, list) and len(commits) > 1 else "commit"
    return "conversation" if metadata.get(CONVERSATION) else "session"


def step_place(kind: str, position: int) -> str:
    """Where in its experience a step comes from: a commit's steps are its diff's files, a
    session's its messages."""
    if kind in ("commit", "merge"):
        return f"the {kind}'s diff"
    return f"message {position}"


def headline(text: str, metadata: dict[str, Any]) -> str:
    """What an experience is about, in one line: a commit's subject (a merged pull request's
    title), else its task's headline, else the card's first line."""
    subject = metadata.get("subject")
    if isinstance(subject, str) and subject.strip():
        return subject.strip()
    task = card_section(text, "Task") or card_section(text, "Opening")
    line = render.headline(task) if task else ""
    return line or next((ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("## ")), "")


def byline(metadata: dict[str, Any], session_id: str) -> list[str]:
    """The small line under a headline: a commit's short sha, author and size (the date is
    written beside it), a session's id and outcome."""
    kind = kind_of(metadata)
    outcome = str(metadata.get("outcome") or "")
    if kind in ("commit", "merge"):
        sha = str(metadata.get("commit", ""))[:10]
        size = outcome.split(": ", 1)[1] if ": " in outcome else ""
        return [p for p in (f"{kind} {sha}", f"by {metadata['author']}" if metadata.get("author") else "", size) if p]
    return [p for p in (f"{kind} {session_id}", outcome) if p]


def matched_commits(metadata: dict[str, Any]) -> list[tuple[str, str]]:
    """The commits inside a merge that the query matched (`codemem/ranking/merged.py`)."""
    found = metadata.get("matched_commits")
    if not isinstance(found, list):
        return []
    return [(str(m.get("sha", ""))[:7], str(m.get("subject", ""))) for m in found if isinstance(m, dict)]


def size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def as_json(value: Any) -> str:
    """A metadata value as compact JSON (strings unquoted), for display."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


FILTERS = {"highlight_diff": highlight_diff, "when": when, "when_iso": when_iso, "count": count, "size": size,
           "as_json": as_json, "unfence": unfence, "test_outcome": test_outcome}
GLOBALS = {"card_sections": card_sections, "card_section": card_section, "stale_notes": stale_notes,
           "evidence_of": evidence_of, "split_edit": split_edit, "kind_of": kind_of, "step_place": step_place,
           "headline": headline, "byline": byline, "matched_commits": matched_commits,
           "FINAL_DIFF": FINAL_DIFF}
