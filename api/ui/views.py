"""How stored text is shown: a card split into its sections, diffs highlighted by Pygments,
times and sizes in words. Pure functions over strings, registered as Jinja filters.

Everything returned as `Markup` is escaped here first (Pygments escapes what it
highlights); everything else is escaped by Jinja's autoescape.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

from markupsafe import Markup
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import DiffLexer

from codemem.experience.building import render

_FORMATTER = HtmlFormatter(cssclass="highlight")
_LEXER = DiffLexer()
_FENCE = re.compile(r"^```[a-z]*\n(.*?)\n?```\s*$", re.DOTALL)
# Search appends the experience's strongest evidence after its card (codemem/answer.py).
EVIDENCE_MARK = "\n\nEvidence from this session:"
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
    if ms is None:
        return ""
    return datetime.fromtimestamp(int(ms) / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


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


FILTERS = {"highlight_diff": highlight_diff, "when": when, "size": size, "as_json": as_json,
           "unfence": unfence, "test_outcome": test_outcome}
GLOBALS = {"card_sections": card_sections, "card_section": card_section, "stale_notes": stale_notes,
           "evidence_of": evidence_of, "split_edit": split_edit,
           "FINAL_DIFF": FINAL_DIFF}
