"""Step records: the evidence inside a session, one per edit, error observation, test run and
key decision, each with its message position and a bounded text that reads on its own.
"""

from __future__ import annotations

from collections.abc import Callable

from codemem.clip import clip
from codemem.experience.building.tracker import EditRecord, SessionFacts, edit_diff
from codemem.experience.recognising import reasoning
from codemem.experience.types import StepRecord

STEP_CHARS = 1500
DECISIONS = 6
_DECISION_SCORE = 4.0


_CUT = "\n... (cut)"
_CUT_SLACK = 10  # a cut step, its marker included, ends this far under STEP_CHARS


def _bounded(text: str) -> str:
    """The step text whole up to STEP_CHARS, else cut at a line end with a marker."""
    return text if len(text) <= STEP_CHARS else clip(text, STEP_CHARS - _CUT_SLACK, _CUT, break_at="\n")


def _one_line(command: str, limit: int = 200) -> str:
    return clip(" ".join(command.split()), limit)


def _edit_steps(facts: SessionFacts, keep: Callable[[EditRecord], str | None]) -> list[StepRecord]:
    steps = []
    for edit in facts.edits:
        target = keep(edit)
        if target is None:
            continue
        title = f"Edit {target}"
        if edit.symbols:
            title += f" ({', '.join(edit.symbols[:4])})"
        if edit.action.created and not edit.action.note:
            title = "Create" + title[4:]
        steps.append(
            StepRecord(
                kind="edit",
                position=edit.position,
                text=_bounded(f"{title}\n{edit_diff(edit)}"),
                files=[target],
                symbols=list(edit.symbols),
            )
        )
    return steps


def _test_steps(facts: SessionFacts) -> list[StepRecord]:
    steps = []
    for record in facts.tests:
        run = record.run
        state = {True: "passed", False: "failed", None: "outcome unclear"}[run.passed]
        text = f"Test run: {_one_line(run.command) or '(unattributed output)'}\nResult: {state}"
        if run.summary:
            text += f" - {run.summary}"
        if run.failing:
            text += "\nFailing: " + ", ".join(run.failing)
        steps.append(
            StepRecord(
                kind="test_run",
                position=record.position,
                text=_bounded(text),
                errors=list(run.failing),
            )
        )
    return steps


def _error_steps(facts: SessionFacts) -> list[StepRecord]:
    steps = []
    seen: set[str] = set()
    for record in facts.errors:
        new = [e for e in record.errors if e not in seen]
        if not new:
            continue  # the same failure again: the first sighting is the evidence
        seen.update(record.errors)
        header = f"Error after: {_one_line(record.command)}" if record.command else "Error seen"
        text = f"{header}\n{'; '.join(record.errors)}\n{record.excerpt.strip()}"
        steps.append(
            StepRecord(
                kind="error",
                position=record.position,
                text=_bounded(text),
                errors=list(record.errors),
            )
        )
    return steps


def _decision_steps(facts: SessionFacts) -> list[StepRecord]:
    by_position: dict[int, list[reasoning.Excerpt]] = {}
    for excerpt in facts.excerpts:
        by_position.setdefault(excerpt.position, []).append(excerpt)
    ranked = sorted(
        ((max(e.score for e in group), position) for position, group in by_position.items()),
        key=lambda x: (-x[0], x[1]),
    )
    chosen = sorted(position for score, position in ranked[:DECISIONS] if score >= _DECISION_SCORE)
    return [
        StepRecord(
            kind="decision",
            position=position,
            text=_bounded("\n".join(e.text for e in by_position[position])),
        )
        for position in chosen
    ]


def build_steps(
    facts: SessionFacts, keep_edit: Callable[[EditRecord], str | None]
) -> list[StepRecord]:
    """All steps of a session in message order; ``keep_edit`` names the file an edit counts
    for, or None for scratch edits that are left out."""
    steps = (
        _edit_steps(facts, keep_edit)
        + _error_steps(facts)
        + _test_steps(facts)
        + _decision_steps(facts)
    )
    order = {"decision": 0, "edit": 1, "command": 2, "test_run": 3, "error": 4}
    return sorted(steps, key=lambda s: (s.position, order[s.kind]))
