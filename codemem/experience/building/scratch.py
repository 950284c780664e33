"""Which of a session's changed files were scratch work rather than the fix, for sessions
without a final ``git diff`` to go by.

Scratch is what the agent deleted again, edited back to how it was, wrote outside the
checkout its other edits are in, or created fresh where no real file of the project was
seen: at the top level, in a folder the session never read from, or named like a
reproduction / ad-hoc test. Files that existed before the session are only scratch when
deleted, reverted or outside the checkout.
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase

from codemem.experience.building.checkout_paths import (
    PathMapper,
    checkout_base,
    clean,
    is_scratch_name,
)
from codemem.experience.building.tracker import SessionFacts

_SCRATCH_BASENAME = re.compile(
    r"(?:^|[_\-])(?:repro|reproduce|reproduction|debug|scratch|verify|verification|validate|"
    r"standalone|tmp|temp)(?:[_\-.]|\d|$)",
    re.I,
)


def _outside(raw: str, bases: set[str], mapper: PathMapper) -> bool:
    """A path beside the checkout the session's other edits are in (``work/test.py`` when
    the checkout is ``work/testbed/``); paths relative to an unknown directory are not."""
    if not bases or mapper.under_root(raw):
        return False
    path = clean(raw)
    return path.startswith("../") or any(path.startswith(base) for base in bases)


def _created_fresh(facts: SessionFacts) -> set[str]:
    """Files whose first touch in the session was writing them whole, unread before."""
    first_read: dict[str, int] = {}
    for position, raw in facts.reads:
        first_read.setdefault(facts.mapper.relative(raw), position)
    fresh: set[str] = set()
    seen: set[str] = set()
    for edit in facts.edits:
        if edit.path in seen:
            continue
        seen.add(edit.path)
        created = edit.action.created and edit.action.note in ("", "shell redirect")
        if created and first_read.get(edit.path, edit.position + 1) > edit.position:
            fresh.add(edit.path)
    return fresh


def _fresh_is_scratch(path: str, seen_dirs: set[str]) -> bool:
    parts = path.split("/")
    if len(parts) == 1 or parts[0] not in seen_dirs:
        return True
    base = parts[-1]
    if _SCRATCH_BASENAME.search(base):
        return True
    return base.startswith("test") and not any("test" in part.lower() for part in parts[:-1])


def _removed(path: str, facts: SessionFacts, last_edit: int, cleanups: set[str]) -> bool:
    """Deleted (itself, its folder, or by a glob such as ``test_*.py``) or checked out
    again (``git checkout -- f``) after its last edit."""
    for entry, position in facts.deleted.items():
        entry = entry.rstrip("/")
        if not entry or position < last_edit or entry in cleanups:
            continue
        if path == entry or path.startswith(entry + "/"):
            return True
        literal = entry.split("*", 1)[0].split("?", 1)[0]
        if literal != entry and len(literal.rsplit("/", 1)[-1]) >= 3 and fnmatchcase(path, entry):
            return True
    return facts.reverted.get(path, -1) > last_edit


def scratch_paths(facts: SessionFacts) -> set[str]:
    """Relative paths of the session's edited files that are scratch work."""
    mapper = facts.mapper
    bases = {b for b in (checkout_base(e.raw_path) for e in facts.edits) if b}
    fresh = _created_fresh(facts)
    seen_dirs = {mapper.relative(raw).split("/", 1)[0] for _, raw in facts.reads}
    seen_dirs.update(e.path.split("/", 1)[0] for e in facts.edits if e.path not in fresh)
    last_edit = {e.path: e.position for e in facts.edits}
    # Removing a folder that holds every edited file is tidying up the checkout at the end,
    # not discarding scratch.
    cleanups = {
        entry.rstrip("/")
        for entry in facts.deleted
        if last_edit and all(p.startswith(entry.rstrip("/") + "/") for p in last_edit)
    }
    scratch: set[str] = set()
    for edit in facts.edits:
        path = edit.path
        if (
            _removed(path, facts, last_edit[path], cleanups)
            or is_scratch_name(path)
            or facts.reverted_in_place(path)
            or _outside(edit.raw_path, bases, mapper)
            or (path in fresh and _fresh_is_scratch(path, seen_dirs))
        ):
            scratch.add(path)
    return scratch
