"""The card as bounded, readable text: headed sections, the task first, then how it ended,
why, what changed and the final diff, cut to fit a character budget (the diff and the task
give way first, whole lines at a time).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING

from codemem.clip import clip
from codemem.experience.building.diff_text import trim_diff
from codemem.experience.types import ExperienceCard

if TYPE_CHECKING:  # the CLI and the UI read cards with `card_sections` without loading test recognition
    from codemem.experience.recognising.testruns import TestRun

CARD_CHARS = 4_000  # the most a card holds: every renderer's default, and what an answer allows for one
_TASK_SHARE = 0.3
_MIN_DIFF = 240


_clip = partial(clip, marker=" ...", break_at=" ")  # a card field ends at a whole word


def _joined(items: list[str], limit: int = 600) -> str:
    text = ", ".join(items)
    return _clip(text, limit)


def _bullets(items: list[str], each: int = 300) -> str:
    return "\n".join(f"- {_clip(' '.join(i.split()), each)}" for i in items)


def _tests_line(card: ExperienceCard, last_test: TestRun | None) -> str:
    if card.tests_changed and (last_test is None or card.tests_passed is None):
        return f"added or changed: {_joined(card.tests_changed, 400)}"
    if last_test is None or card.tests_passed is None:
        return "no test outcome seen"
    state = "passed" if card.tests_passed else "failed"
    line = f"last run {state}" + (f" ({last_test.summary})" if last_test.summary else "")
    command = " ".join(last_test.command.split())
    if command:
        line += f": {_clip(command, 160)}"
    if last_test.failing:
        line += "\nfailing: " + ", ".join(last_test.failing[:4])
    return line


def render_card(
    card: ExperienceCard, max_chars: int = CARD_CHARS, last_test: TestRun | None = None
) -> str:
    """The card in at most ``max_chars`` characters."""
    head: list[str] = []
    tail: list[str] = []
    outcome = _clip(card.outcome, 400)
    if card.changed_since:
        outcome += f"\nchanged since: {_clip(card.changed_since, 300)}"
    head.append(f"## Outcome\n{outcome}")
    if card.root_cause:
        head.append(f"## Root cause\n{_bullets(card.root_cause)}")
    if card.edited_files:
        edited = f"files: {_joined(card.edited_files)}"
        if card.edited_symbols:
            edited += f"\nsymbols: {_joined(card.edited_symbols)}"
        head.append(f"## Edited\n{edited}")
    if card.errors:
        head.append(f"## Errors seen\n{_bullets(card.errors[:6], 200)}")
    head.append(f"## Tests\n{_clip(_tests_line(card, last_test), 500)}")
    if card.read_files:
        tail.append(f"## Also read\n{_joined(card.read_files, 400)}")
    if card.mentioned_files:
        tail.append(f"## Mentioned\nfiles: {_joined(card.mentioned_files, 400)}")
    body = "\n\n".join(head + tail)
    task_budget = max(int(max_chars * _TASK_SHARE), 200)
    task = f"## Task\n{_clip(card.task, task_budget)}"
    used = len(task) + 2 + len(body)
    if card.final_diff:
        room = max_chars - used - len("\n\n## Final diff\n```diff\n\n```")
        if room >= _MIN_DIFF:
            body += f"\n\n## Final diff\n```diff\n{trim_diff(card.final_diff, room).rstrip()}\n```"
    text = f"{task}\n\n{body}"
    if len(text) > max_chars:
        text = text[: max(max_chars - 4, 0)].rstrip() + " ..."
    return text[:max_chars]


def _minute(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M UTC")


def render_conversation(task: str, messages: int, first_ms: int | None, last_ms: int | None,
                        max_chars: int = CARD_CHARS) -> str:
    """A conversation's card: when it took place (its messages' timestamps, when sent), how
    long it is and how it opened. No coding sections: there is nothing to say in them."""
    when = ""
    if first_ms is not None and last_ms is not None:
        when = _minute(first_ms) + (f" to {_minute(last_ms)}" if _minute(last_ms) != _minute(first_ms) else "")
    head = f"## Conversation\n{messages} message{'' if messages == 1 else 's'}" + (f", {when}" if when else "") + "\n\n## Opening\n"
    return (head + _clip(task, max(max_chars - len(head), 200)))[:max_chars]


def task_of(card_text: str) -> str:
    """The task a card rendered by `render_card` or `render_conversation` shows ("" where it
    shows none): the task itself where it fit the card's task section (1,200 characters),
    else its head. What a card's vector is embedded again from once the task is not at
    hand (`codemem/writing/reembedder.py`)."""
    if card_text.startswith("## Task\n"):
        return card_text[len("## Task\n"):].split("\n\n## Outcome\n", 1)[0].strip()
    if card_text.startswith("## Conversation\n") and "\n\n## Opening\n" in card_text:
        return card_text.split("\n\n## Opening\n", 1)[1].strip()
    return ""


_HEADING = re.compile(r"^## (.+)$", re.MULTILINE)
# A harness's metadata line in a task ("instance_id: django__django-16910", "repo: x/y"):
# a key and one token, which says nothing of what the task was.
_METADATA_LINE = re.compile(r"^[\w.-]+:\s*\S*$")
_KEY_PREFIX = re.compile(r"^[a-z][\w-]*:\s+")


def card_sections(text: str) -> list[tuple[str, str]]:
    """A rendered card's `## Heading` sections in order, as (heading, body); text before the
    first heading (or a text with none) is one untitled section."""
    marks = list(_HEADING.finditer(text))
    sections: list[tuple[str, str]] = []
    head = text[: marks[0].start()] if marks else text
    if head.strip():
        sections.append(("", head.strip()))
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        sections.append((m.group(1).strip(), text[m.end():end].strip()))
    return sections


# The sections a card's code window reads (`code_window`): what the work changed.
CODE_SECTIONS = ("Edited", "Final diff")


def code_window(card_text: str) -> str:
    """What a coding card says its work changed: its files and symbols edited and its final
    diff, each under its heading's name; "" where it shows neither. A card's second vector
    reads it (`codemem.store.schema.CODE_WINDOW`): a later task or report that names the code,
    or says what it did, meets it there rather than in the task that asked for it."""
    parts = dict(card_sections(card_text))
    return "\n".join(f"{heading}: {parts[heading]}" for heading in CODE_SECTIONS if parts.get(heading))


def headline(task: str) -> str:
    """What a task was, in its first line that reads as one: not a harness's preamble (a
    line ending in a colon), not a metadata line (a key and one token), with a field's key
    ("problem_statement: ") taken off. The first non-empty line when none reads so."""
    lines = [line.strip() for line in task.splitlines() if line.strip()]
    for line in lines:
        if len(line.split()) >= 3 and not line.endswith(":") and not _METADATA_LINE.match(line):
            return _KEY_PREFIX.sub("", line)
    return lines[0] if lines else ""


# The sections of a card a reader with little room acts on, in order, and how many of their
# lines it keeps (`brief_card`); the task is cut to its headline.
_BRIEF_SECTIONS = (("Outcome", 2), ("Root cause", 2), ("Edited", 2), ("Errors seen", 3), ("Tests", 1))


def brief_card(text: str, max_chars: int) -> str:
    """A rendered card within `max_chars`: whole when it fits, else its task's headline and the
    first lines of the sections a reader acts on (how it ended, its root cause, the files and
    symbols edited, its errors, its tests), each clipped, the final diff left for the reader to
    open. A text without a task section (a conversation's card, a note) keeps its head."""
    if len(text) <= max_chars:
        return text
    sections = dict(card_sections(text))
    task = sections.get("Task")
    if task is None:
        return _clip(text, max_chars)
    parts = [f"## Task\n{headline(task)}"]
    for name, lines in _BRIEF_SECTIONS:
        if body := sections.get(name):
            kept = [_clip(line, 300) for line in body.splitlines()[:lines]]
            parts.append(f"## {name}\n" + "\n".join(kept))
    return _clip("\n\n".join(parts), max_chars)


def short_card(text: str, max_chars: int) -> str:
    """A rendered card in a line or two, its task's headline and how it ended, for an answer
    that names an experience without telling it (a quiet answer). A text without a task
    section (a conversation's card, a note) keeps its head."""
    sections = dict(card_sections(text))
    task = sections.get("Task")
    if task is None:
        return _clip(text, max_chars)
    outcome = sections.get("Outcome", "").split("\n", 1)[0]
    return _clip(headline(task) + (f"\nOutcome: {outcome}" if outcome else ""), max_chars)
