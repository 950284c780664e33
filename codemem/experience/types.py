"""What a trajectory (or a commit) becomes: one experience card and its step records.

These are the records the store indexes beside the raw messages. They are plain typed
values so the builder stays pure (messages in, experience out) and storage stays elsewhere.
"""

from __future__ import annotations

from typing import Literal

import msgspec

# The metadata key (True) of an experience with no code work: people talking, not coding.
CONVERSATION = "conversation"
SAID = "said"  # the card metadata key of a conversation's distinct words (its card holds only the opening)

StepKind = Literal["edit", "error", "test_run", "decision", "command"]


class StepRecord(msgspec.Struct, frozen=True):
    """One piece of evidence inside a session: an edit, an error seen, a test run, a decision."""

    kind: StepKind
    position: int  # index of the message it came from, in session order (0-based)
    text: str  # bounded, readable rendering (what Search returns as the item's content)
    files: list[str] = []
    symbols: list[str] = []
    errors: list[str] = []


class ExperienceCard(msgspec.Struct, frozen=True):
    """A compact, readable summary of one session (or one commit)."""

    task: str  # the first user request (trimmed)
    outcome: str  # short summary of how it ended
    root_cause: list[str] = []  # reasoning excerpts that explain the fix
    edited_files: list[str] = []
    edited_symbols: list[str] = []
    read_files: list[str] = []  # files read but not edited
    commands: list[str] = []
    tests_passed: bool | None = None  # state of the last test run seen, None if none ran
    tests_changed: list[str] = []  # test files and test names the change added or edited
    changed_since: str = ""  # a later change to the same code: "<sha> <date> <subject>"
    errors: list[str] = []
    # Files the session's messages name that it neither edited nor read ("Fixed in x.py").
    mentioned_files: list[str] = []
    # A merge's branch: the commits it brought in, (sha, subject), newest first.
    merged: list[tuple[str, str]] = []
    final_diff: str = ""  # trimmed
    text: str = ""  # the bounded rendering of all of the above, a few thousand characters


class Experience(msgspec.Struct, frozen=True):
    card: ExperienceCard
    steps: list[StepRecord] = []
    terms: list[str] = []  # normalised code-reference keys (parsers.CodeRefs.terms()) for matching
    # Shown with every item of the experience (card and steps): a commit's SHAs, its PR...
    metadata: dict[str, object] = {}
