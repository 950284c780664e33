"""One pass over a session's events, collecting the facts a card is made of: edits (with
their lines and symbols), reads, commands, test runs, errors, the last ``git diff`` output
and explanatory reasoning. Linear in the session's text; the builder turns the facts into
the card and steps.

A tool call is settled when its result arrives (paired by tool name, else oldest first), so
a failed edit is never counted; calls that never get a result are settled without one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from codemem.contract.types import Role
from codemem.experience.building.action_types import (
    Action,
    CommandAction,
    DeleteAction,
    EditAction,
    ReadAction,
    RevertAction,
)
from codemem.experience.building.actions import actions_for_call, tool_key
from codemem.experience.building.checkout_paths import PathMapper
from codemem.experience.building.diff_text import clean_patch, edit_hunk, is_git_diff_command
from codemem.experience.building.edited_symbols import SymbolQuery, symbol_query
from codemem.experience.building.fileviews import FileView, numbered_lines, swe_open_file
from codemem.experience.recognising import reasoning
from codemem.experience.recognising.events import (
    Event,
    TextEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from codemem.experience.recognising.output_errors import errors_in, strip_noise
from codemem.experience.recognising.testruns import TestRun, read_outcome, read_test_run

_MAX_PENDING = 32
_OBSERVATION_TOOLS = frozenset(
    {
        "read",
        "grep",
        "glob",
        "ls",
        "todowrite",
        "search",
        "find_file",
        "search_dir",
        "search_file",
        "webfetch",
        "websearch",
        "view",
    }
)
_TOOL_ERROR_TAG = "<tool_use_error>"


@dataclass(slots=True)
class EditRecord:
    position: int
    raw_path: str
    path: str  # repository-relative as far as known
    action: EditAction
    lines: tuple[int, int] | None
    query: SymbolQuery | None
    symbols: list[str] = field(default_factory=list)  # filled by the builder for edits that count


@dataclass(slots=True)
class ErrorRecord:
    position: int
    command: str
    errors: list[str]
    excerpt: str


@dataclass(slots=True)
class TestRecord:
    position: int
    run: TestRun


@dataclass(slots=True)
class _Pending:
    position: int
    call: ToolCallEvent
    actions: list[Action]


@dataclass(slots=True)
class SessionFacts:
    task: str = ""
    edits: list[EditRecord] = field(default_factory=list)
    reads: list[tuple[int, str]] = field(
        default_factory=list
    )  # (position, path as the tool named it)
    deleted: dict[str, int] = field(default_factory=dict)  # relative path -> position
    reverted: dict[str, int] = field(default_factory=dict)
    commands: list[tuple[int, str]] = field(default_factory=list)
    tests: list[TestRecord] = field(default_factory=list)
    errors: list[ErrorRecord] = field(default_factory=list)
    final_patch: str = ""
    final_patch_position: int = -1
    excerpts: list[reasoning.Excerpt] = field(default_factory=list)
    # (position, text) of the task and of the agent's own prose: where a session names files
    # it may not have touched ("Fixed in x.py").
    prose: list[tuple[int, str]] = field(default_factory=list)
    views: dict[str, FileView] = field(default_factory=dict)
    mapper: PathMapper = field(default_factory=PathMapper)
    # Each edited file's lines as seen before its first edit, and the files some edit of
    # which could not be replayed on the view (their net effect is unknown).
    baselines: dict[str, list[str | None]] = field(default_factory=dict)
    unreplayed: set[str] = field(default_factory=set)

    def reverted_in_place(self, path: str) -> bool:
        """Whether every edit of ``path`` was replayed and the file ended as it began."""
        baseline = self.baselines.get(path)
        view = self.views.get(path)
        if (
            baseline is None
            or view is None
            or path in self.unreplayed
            or len(baseline) != len(view.lines)
        ):
            return False
        pairs = zip(baseline, view.lines, strict=True)
        return all(a == b or a is None or b is None for a, b in pairs)


class Tracker:
    """Feeds on ``(position, role, events)`` in session order; ``finish()`` gives the facts."""

    def __init__(self) -> None:
        self.facts = SessionFacts()
        self._pending: list[_Pending] = []
        self._open_file: str | None = None  # SWE-agent's current file

    # -- feeding ---------------------------------------------------------------------------

    def feed(self, position: int, role: Role, events: list[Event]) -> None:
        for event in events:
            if isinstance(event, ToolCallEvent):
                self._pending.append(_Pending(position, event, actions_for_call(event)))
                if len(self._pending) > _MAX_PENDING:
                    self._settle(self._pending.pop(0), None)
            elif isinstance(event, ToolResultEvent):
                self._settle(self._pair(event.name), event, position)
            elif role == "user" and isinstance(event, TextEvent):
                if not self.facts.task:
                    self.facts.task = event.text
                    self.facts.prose.append((position, event.text))
                else:  # a user turn after the task: a harness's tool output, not prose
                    self._observe(position, "", event.text, False)
            else:
                self.facts.excerpts.extend(reasoning.excerpts(position, event.text))
                self.facts.prose.append((position, event.text))

    def finish(self) -> SessionFacts:
        for pending in self._pending:
            self._settle(pending, None)
        self._pending = []
        return self.facts

    # -- pairing ---------------------------------------------------------------------------

    def _pair(self, name: str | None) -> _Pending | None:
        if not self._pending:
            return None
        if name:
            key = tool_key(name)
            for i, pending in enumerate(self._pending):
                if tool_key(pending.call.name) == key:
                    return self._pending.pop(i)
            return None
        return self._pending.pop(0)

    def _settle(
        self, pending: _Pending | None, result: ToolResultEvent | None, position: int = -1
    ) -> None:
        if pending is None:
            if result is not None:
                self._observe(position, "", result.text, result.is_error, result.name)
            return
        text = result.text if result is not None else ""
        is_error = result is not None and (
            result.is_error or text.lstrip().startswith(_TOOL_ERROR_TAG)
        )
        at = position if result is not None else pending.position
        observed = False
        for action in pending.actions:
            if isinstance(action, EditAction):
                if not is_error:
                    self._edit(pending.position, action, text)
            elif isinstance(action, ReadAction):
                if not is_error and result is not None:
                    self._read(at, action, text)
            elif isinstance(action, CommandAction):
                self.facts.commands.append((pending.position, action.command))
                if result is not None:
                    self._observe(at, action.command, text, result.is_error, pending.call.name)
                    observed = True
            elif isinstance(action, DeleteAction):
                for path in action.paths:
                    self.facts.deleted[self.facts.mapper.relative(path)] = at
            elif isinstance(action, RevertAction):
                for path in action.paths:
                    self.facts.reverted[self.facts.mapper.relative(path)] = at
        if (
            result is not None
            and not observed
            and tool_key(pending.call.name) not in _OBSERVATION_TOOLS
        ):
            self._observe(at, "", text, result.is_error, pending.call.name)

    # -- effects ---------------------------------------------------------------------------

    def _view(self, raw_path: str) -> tuple[str, FileView]:
        path = self.facts.mapper.relative(raw_path)
        view = self.facts.views.get(path)
        if view is None:
            view = self.facts.views[path] = FileView()
        return path, view

    def _read(self, position: int, action: ReadAction, text: str) -> None:
        view = self._view(action.path)[1]
        self.facts.reads.append((position, action.path))
        pairs = numbered_lines(text) if action.numbered else []
        if pairs:
            view.fill_numbered(pairs)
        elif action.placed and text and (not action.numbered or action.offset is None):
            view.fill(action.offset or 1, text.split("\n"))  # plain content, from its first line
        opened = swe_open_file(text)
        if opened:
            self._open_file = opened

    def _edit(self, position: int, action: EditAction, result_text: str) -> None:
        raw = action.path or self._open_file or ""
        if not raw:
            return
        path, view = self._view(raw)
        if path not in self.facts.baselines:
            self.facts.baselines[path] = list(view.lines)
        lines: tuple[int, int] | None = None
        if action.note and action.note != "insert":
            pass  # made by a script or sed: the new text is unknown
        elif action.created:
            view.set_content(action.new)
            lines = (1, max(action.new.count("\n") + 1, 1))
        elif action.note == "insert" and action.line_range:
            lines = view.replace_range(action.line_range[0], action.line_range[0] - 1, action.new)
        elif action.old:
            lines = view.replace(action.old, action.new)
        elif action.line_range:
            lines = view.replace_range(action.line_range[0], action.line_range[1], action.new)
        if lines is None:
            self.facts.unreplayed.add(path)  # the view no longer tells what the file holds
            lines = action.line_range
        pairs = numbered_lines(result_text) if result_text else []
        if pairs:
            view.fill_numbered(pairs)
            if lines is None and action.new:
                lines = view.find_new(action.new)
        query = (
            None
            if action.note and action.note != "insert"
            else symbol_query(
                path, view, lines, action.old, action.new, action.created, action.header
            )
        )
        self.facts.edits.append(EditRecord(position, raw, path, action, lines, query))

    def _observe(
        self, position: int, command: str, text: str, is_error: bool, tool: str | None = None
    ) -> None:
        """What command output (or an unattributed observation) tells: the patch, a test run,
        errors met, the file SWE-agent has open."""
        if not text:
            return
        opened = swe_open_file(text)
        if opened:
            self._open_file = opened
        output = strip_noise(text)
        if "diff --git" in output and (
            is_git_diff_command(command)
            or (not command and output.lstrip().startswith("diff --git"))
        ):
            patch = clean_patch(output)
            if patch:
                self.facts.final_patch = patch
                self.facts.final_patch_position = position
        run = read_test_run(command, output, is_error) if command else None
        if run is None and not command:
            outcome = read_outcome(output)
            if outcome is not None:
                run = TestRun(command=tool or "", passed=outcome[0], summary=outcome[1])
        if run is not None:
            self.facts.tests.append(TestRecord(position, run))
        errors = errors_in(output)
        if errors:
            self.facts.errors.append(
                ErrorRecord(position, command, errors, _excerpt(output, errors[0]))
            )


def _excerpt(output: str, error: str, limit: int = 900) -> str:
    """The output around an error's line: a bit before (the frames) and the line itself."""
    head = error.split(":", 1)[0]
    at = output.rfind(head)
    if at < 0:
        return output[-limit:]
    end = output.find("\n", at)
    end = len(output) if end < 0 else end
    return output[max(0, end - limit) : end]


def edit_diff(record: EditRecord) -> str:
    """A readable hunk for an edit step."""
    action = record.action
    if action.note:
        return f"({action.note})"
    if action.created:
        return edit_hunk(record.path, "", action.new, 1, context=0)
    start = record.lines[0] if record.lines else None
    return edit_hunk(record.path, action.old, action.new, start)
