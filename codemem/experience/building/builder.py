"""Messages in, experience out: ``build_experience`` recognises each message's events, walks
them once (``Tracker``), and turns the facts into the card, its steps and lookup terms.

Edited files are the files of the session's last ``git diff`` output when the agent ran one
(what it settled on); otherwise the files it changed, less scratch work (files it deleted,
files outside the checkout, reproduction scripts and ad-hoc tests at the top level).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence

import msgspec

import parsers
from codemem.clip import clip
from codemem.contract.types import Message, Role
from codemem.experience.building.checkout_paths import is_scratch_name, match_patch_path
from codemem.experience.building.diff_text import edit_hunk, trim_diff
from codemem.experience.building.edited_symbols import patch_symbols, resolve_symbols
from codemem.experience.building.render import CARD_CHARS, render_card, render_conversation
from codemem.experience.building.scratch import scratch_paths
from codemem.experience.building.steps import build_steps
from codemem.experience.building.tracker import EditRecord, SessionFacts, Tracker
from codemem.experience.memo import TextMemo
from codemem.experience.recognising import reasoning
from codemem.experience.recognising.events import Event
from codemem.experience.recognising.message import recognise_events
from codemem.experience.types import CONVERSATION, SAID, Experience, ExperienceCard

TASK_WORDS = 300
ROOT_CAUSES = 3
MAX_COMMANDS = 30
MAX_ERRORS = 10
MAX_READ_FILES = 30
MAX_MENTIONED = 10
MAX_FINAL_DIFF = 8000
CONVERSATION_OUTCOME = "a conversation: no code read, edited or run"
SAID_WORDS = 2_000
_SAID_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_+#-]{2,}")
_TRIVIAL_COMMANDS = frozenset(
    "ls pwd cd find grep rg cat head tail wc echo which tree file stat mkdir true sleep clear "
    "whoami env date type du df nl less".split()
)
_WORD = re.compile(r"\S+")


def _message_text(message: Message) -> str:
    try:
        text = message.text
    except (TypeError, AttributeError):
        return ""
    return text if isinstance(text, str) else ""


def _trim_words(text: str, words: int) -> str:
    """The text up to its ``words``-th word, line breaks kept."""
    for count, match in enumerate(_WORD.finditer(text), 1):
        if count == words:
            rest = text[match.end() :]
            return text[: match.end()].strip() + (" ..." if rest.strip() else "")
    return text.strip()


def _command_line(command: str) -> str | None:
    """A command as one short line for the card; None for navigation and look-ups."""
    line = command.strip()
    while line.startswith("cd ") and "&&" in line:
        line = line.split("&&", 1)[1].strip()
    head = line.split(None, 1)[0] if line else ""
    if not line or head.rsplit("/", 1)[-1] in _TRIVIAL_COMMANDS or line.startswith("sed -n"):
        return None
    first = line.split("\n", 1)
    line = first[0] + (" ..." if len(first) > 1 else "")
    return clip(line, 200)


class _Edits:
    """Which edits count, and for which file: the patch's files when there is a patch, else
    the non-scratch files the agent changed."""

    def __init__(self, facts: SessionFacts, patch_files: list[str]) -> None:
        self.facts = facts
        self.patch_files = patch_files
        mapper = facts.mapper
        self.target: dict[str, str] = {}  # edit raw path -> file it counts for
        if facts.final_patch:
            for edit in facts.edits:
                hit = match_patch_path(edit.raw_path, patch_files) or match_patch_path(
                    edit.path, patch_files
                )
                if hit is not None:
                    self.target[edit.raw_path] = hit
                    mapper.learn(edit.raw_path, hit)
            self.files = list(patch_files)
        else:
            self._fallback(facts)
        for edit in facts.edits:
            if edit.raw_path in self.target:
                edit.symbols = resolve_symbols(edit.query)

    def _fallback(self, facts: SessionFacts) -> None:
        scratch = scratch_paths(facts)
        for edit in facts.edits:
            if edit.path and edit.path not in scratch:
                self.target[edit.raw_path] = edit.path
        self.files = list(
            dict.fromkeys(self.target[e.raw_path] for e in facts.edits if e.raw_path in self.target)
        )

    def keep(self, edit: EditRecord) -> str | None:
        return self.target.get(edit.raw_path)

    def symbols(self) -> list[str]:
        facts = self.facts
        if facts.final_patch:
            views = {}
            for key, view in facts.views.items():
                hit = match_patch_path(key, self.patch_files)
                if hit is not None and hit not in views:
                    views[hit] = view
            per_file = patch_symbols(facts.final_patch, views)
            # Scratch scripts the agent committed stay listed as files, but their
            # definitions would only blur what the fix touched.
            found = [
                s for f in self.patch_files if not is_scratch_name(f) for s in per_file.get(f, [])
            ]
        else:
            found = [s for e in facts.edits if e.raw_path in self.target for s in e.symbols]
        return list(dict.fromkeys(found))

    def synthesised_diff(self) -> str:
        chunks = []
        for edit in self.facts.edits:
            target = self.target.get(edit.raw_path)
            if target is None or edit.action.note:
                continue
            old = "" if edit.action.created else edit.action.old
            start = edit.lines[0] if edit.lines else None
            chunks.append(edit_hunk(target, old, edit.action.new, start))
        return "".join(chunks)


def _outcome(
    files: list[str], facts: SessionFacts, passed: bool | None, summary: str, has_tests: bool,
    mentioned: list[str],
) -> str:
    if files:
        parts = [f"Edited {_few(files)}"]
    elif mentioned:  # told, not seen: "Fixed in x.py" without the edit in the messages
        parts = [f"No file edits kept; names {_few(mentioned)}"]
    else:
        parts = ["No file edits kept"]
    if facts.final_patch:
        added = sum(
            1
            for line in facts.final_patch.split("\n")
            if line.startswith("+") and not line.startswith("+++")
        )
        removed = sum(
            1
            for line in facts.final_patch.split("\n")
            if line.startswith("-") and not line.startswith("---")
        )
        parts.append(f"final diff +{added}/-{removed}")
    if passed is True:
        parts.append("final test run passed" + (f" ({summary})" if summary else ""))
    elif passed is False:
        parts.append("final test run failed" + (f" ({summary})" if summary else ""))
    else:
        parts.append("test outcome unclear" if has_tests else "no tests run")
    return "; ".join(parts)


def _few(files: list[str]) -> str:
    return ", ".join(files[:4]) + (f" (+{len(files) - 4} more)" if len(files) > 4 else "")


_TextRefs = Callable[[str], parsers.CodeRefs]


def _mentioned(facts: SessionFacts, read: list[str], text_refs: _TextRefs) -> list[str]:
    """The files the task and the agent's prose name that it did not read, as repository
    paths, in the order first named (a bare name of a file read is that file). Asked only of
    a session with no edit kept: one that says "Fixed in x.py" without a recorded edit still
    tells where the fix is, where a session with edits has its files said already."""
    out: list[str] = []
    for _, text in facts.prose:
        for raw in text_refs(text).files:
            path = facts.mapper.relative(raw)
            known = [*read, *out]
            if path and path not in known and not any(k.endswith("/" + path) for k in known) \
                    and not is_scratch_name(path):
                out.append(path)
                if len(out) >= MAX_MENTIONED:  # a log naming thousands of files: the first are kept
                    return out
    return out


def _terms(task: str, files: list[str], symbols: list[str], errors: list[str]) -> list[str]:
    exceptions = [e.split(":", 1)[0] for e in errors]
    messages = [e.split(":", 1)[1].strip() for e in errors if ":" in e]
    refs = [
        parsers.extract_text_refs(task),
        parsers.CodeRefs(
            files=list(files), symbols=list(symbols), exceptions=exceptions, error_messages=messages
        ),
    ]
    return parsers.merge_refs(refs).terms()


def _is_conversation(facts: SessionFacts, messages: Sequence[Message], text_refs: _TextRefs) -> bool:
    """People talking, not coding: nothing read, edited, run or tested, no error, no patch,
    and no message names code (a file, a symbol, an exception...): a short note about a fix
    ("Fixed the crash in parsers/diff.py") is still a coding experience."""
    if facts.edits or facts.reads or facts.commands or facts.tests or facts.errors or facts.final_patch:
        return False
    return not any(text_refs(_message_text(m)).terms() for m in messages)


def _conversation_experience(messages: Sequence[Message], task: str, max_chars: int) -> Experience:
    """A session with no code work (people talking): a conversation card, not a coding one,
    which would only say that nothing was edited or tested. Its metadata marks it
    `conversation`: the relevance calibration, fitted on coding experiences, does not judge it."""
    stamps = [t for m in messages if (t := getattr(m, "timestamp", None)) is not None]
    card = ExperienceCard(task=task, outcome=CONVERSATION_OUTCOME)
    text = render_conversation(task, len(messages), min(stamps) if stamps else None,
                               max(stamps) if stamps else None, max_chars)
    metadata: dict[str, object] = {CONVERSATION: True}
    # Its card holds only the opening; what the whole session talked about is read from its
    # words (the relevance model's time features compare sessions by them, `ranking/time_features.py`).
    metadata[SAID] = sorted({w.lower() for m in messages for w in _SAID_WORD.findall(_message_text(m))})[:SAID_WORDS]
    return Experience(card=msgspec.structs.replace(card, text=text), terms=_terms(task, [], [], []),
                      metadata=metadata)


# Each Add's rebuild reads the session's earlier messages again: their events are remembered
# (`experience.memo`; events are frozen, and shared by every reader).
_EVENTS: TextMemo[tuple[Event, ...]] = TextMemo(lambda text, role: tuple(recognise_events(text, role)))  # type: ignore[arg-type]


def build_experience(messages: Sequence[Message], *, max_chars: int = CARD_CHARS) -> Experience:
    """The experience of one session: card, steps and terms; pure and deterministic."""
    tracker = Tracker()
    for position, message in enumerate(messages):
        role: Role = "user" if getattr(message, "role", "user") == "user" else "assistant"
        tracker.feed(position, role, list(_EVENTS(_message_text(message), role)))
    facts = tracker.finish()
    # A message's references, read once per build however many questions ask for them (a
    # 2 MB tool result was read twice), and let go with the build.
    text_refs = functools.cache(parsers.extract_text_refs)
    if _is_conversation(facts, messages, text_refs):
        return _conversation_experience(messages, _trim_words(facts.task, TASK_WORDS), max_chars)
    patch_files = (
        [f.path for f in parsers.parse_diff(facts.final_patch)] if facts.final_patch else []
    )
    edits = _Edits(facts, list(dict.fromkeys(patch_files)))
    files = edits.files
    mapper = facts.mapper
    edited = set(files)
    read_files: list[str] = []
    for _, raw in facts.reads:
        path = match_patch_path(raw, files) or mapper.relative(raw)
        if not path or path in edited or path in read_files or is_scratch_name(path):
            continue
        if mapper.under_root(raw) or not raw.startswith(("/", "./", "../", "~")):
            read_files.append(path)
    mentioned = [] if files else _mentioned(facts, read_files, text_refs)
    commands = list(
        dict.fromkeys(c for c in (_command_line(cmd) for _, cmd in facts.commands) if c)
    )
    known = [t for t in facts.tests if t.run.passed is not None]
    last = known[-1].run if known else None
    errors = list(dict.fromkeys(e for record in facts.errors for e in record.errors))[:MAX_ERRORS]
    final_diff = facts.final_patch or edits.synthesised_diff()
    symbols = edits.symbols()
    task = _trim_words(facts.task, TASK_WORDS)
    card = ExperienceCard(
        task=task,
        outcome=_outcome(
            files,
            facts,
            last.passed if last else None,
            last.summary if last else "",
            bool(facts.tests),
            mentioned,
        ),
        root_cause=[e.text for e in reasoning.pick(facts.excerpts, ROOT_CAUSES)],
        edited_files=files,
        edited_symbols=symbols,
        read_files=read_files[:MAX_READ_FILES],
        mentioned_files=mentioned,
        commands=commands[-MAX_COMMANDS:],
        tests_passed=last.passed if last else None,
        errors=errors,
        final_diff=trim_diff(final_diff, MAX_FINAL_DIFF),
    )
    card = msgspec.structs.replace(card, text=render_card(card, max_chars, last))
    return Experience(
        card=card,
        steps=build_steps(facts, edits.keep),
        terms=_terms(task, files, symbols, errors),
    )
