"""Search results as a person reads them in a terminal.

A result leads with what a person acts on: for a commit, its subject, SHA, author, date,
files, the PR and issue numbers it names and the `git show` that opens it; for an agent
session, its outcome, root cause, files and symbols edited, and tests. Each is dated at the
experience's own time (the commit's, the session's messages'), not at the time it was
imported, with the evidence that matched best: the compact answer an agent gets too
(`codemem.compact`). `codemem search --json` prints the raw response instead.
"""

from __future__ import annotations

import re
import textwrap

from codemem import times
from codemem.compact import Brief, brief
from codemem.contract.types import Hit
from codemem.experience.building.render import card_sections

_COMMIT = re.compile(r"Commit (?P<sha>[0-9a-f]{7,40}) by (?P<author>.+?) on (?P<date>\d{4}-\d{2}-\d{2})")
_SHA = re.compile(r"^[0-9a-f]{7,40}$")
# "(#123)" in a squash subject, "Fixes #12", "PR #7", "owner/repo#9"; not "#include".
_NUMBER = re.compile(r"(?<![\w&])#(\d+)\b")


def format_hit(rank: int, hit: Hit) -> str:
    """One experience item of a Search answer as `codemem search` prints it: made brief."""
    return format_brief(rank, brief(hit))


def format_brief(rank: int, item: Brief, width: int = 100, evidence_lines: int = 6) -> str:
    """One experience of a compact answer (`codemem.compact`): what a person acts on, then
    the evidence that matched best, its first lines."""
    hit, card = item.hit, item.card
    sha = _commit_sha(hit, card)
    lines = _commit_lines(hit, card, sha) if sha else _session_lines(hit, card)
    head = f"#{rank}  {lines[0]}"
    body = [f"    {line}" for line in lines[1:]]
    if item.evidence.strip():
        wrapped = [w for line in item.evidence.strip().splitlines() for w in textwrap.wrap(line, width - 6)]
        more = len(wrapped) - evidence_lines
        body.append(f"    matched ({item.label}):" if item.label else "    matched:")
        body.extend(f"      {w}" for w in wrapped[:evidence_lines])
        if more > 0:
            body.append(f"      ... ({more} more lines; --json prints everything)")
    return "\n".join([head, *body]) + "\n"


def _commit_lines(hit: Hit, card: str, sha: str) -> list[str]:
    meta = hit.metadata
    found = _COMMIT.search(card)
    subject = _subject(card)
    files = [str(f) for f in _list(meta.get("edited_files"))]
    own = "\n".join(line for line in card.split("\nDiff:", 1)[0].split("```diff", 1)[0].splitlines()
                    if not line.startswith("changed since:"))  # a later change's numbers are not this one's
    numbers = list(dict.fromkeys(_NUMBER.findall(own)))
    # The import's metadata names the author and date of every change, merges included; the
    # card's "Commit X by Y on" line is read for cards stored without them.
    author = str(meta.get("author") or (found["author"] if found else ""))
    date = str(meta.get("date") or (found["date"] if found else "")) or None
    merge = "merge" if len(_list(meta.get("commits"))) > 1 else "commit"
    lines = [f"{subject}",
             f"{merge} {sha[:12]}  {_when(hit, date)}" + (f"  by {author}" if author else "")
             + f"  score {hit.score:.3f}"]
    matched = [m for m in _list(meta.get("matched_commits")) if isinstance(m, dict)]
    if matched:  # the commits inside a merge that the query matched (codemem/ranking/merged.py)
        lines.append("matched in this merge:")
        lines.extend(f"  {str(m.get('sha', ''))[:7]} {m.get('subject', '')}" for m in matched)
    if files:
        lines.append("files: " + _joined(files))
    if numbers:
        lines.append("refs: " + ", ".join(f"#{n}" for n in numbers))
    if after := meta.get("after_release"):  # codemem/git/releases.py
        lines.append(f"landed after release {after}")
    lines.append(f"open: git show {sha[:12]}")
    return lines


def _session_lines(hit: Hit, card: str) -> list[str]:
    meta = hit.metadata
    sections = _sections(card)
    # A coding card opens with its task, a conversation's card with its opening message.
    task = _first_line(sections.get("Task", "") or sections.get("Opening", "")) or _first_line(card)
    outcome = str(meta.get("outcome") or _first_line(sections.get("Outcome", "")))
    lines = [f"{task}",
             f"session {hit.session_id}  {_when(hit)}  score {hit.score:.3f}"]
    if outcome:
        lines.append(f"outcome: {outcome}")
    if cause := sections.get("Root cause"):
        lines.append("root cause: " + " ".join(c.lstrip("- ").strip() for c in cause.splitlines())[:300])
    if files := _list(meta.get("edited_files")):
        lines.append("edited: " + _joined([str(f) for f in files]))
    if symbols := _list(meta.get("edited_symbols")):
        lines.append("symbols: " + _joined([str(s) for s in symbols]))
    if mentioned := _list(meta.get("mentioned_files")):  # named in its messages, no edit seen
        lines.append("mentioned: " + _joined([str(f) for f in mentioned]))
    if tests := sections.get("Tests"):
        lines.append("tests: " + _first_line(tests))
    return lines


def _commit_sha(hit: Hit, card: str) -> str | None:
    """The SHA of a commit experience (its session id is `git:<sha>`), else None."""
    tail = hit.session_id.partition(":")[2] if hit.session_id.startswith("git:") else ""
    if _SHA.match(tail):
        return tail
    found = _COMMIT.search(card)
    return found["sha"] if found and hit.session_id.startswith("git:") else None


def _when(hit: Hit, fallback_date: str | None = None) -> str:
    """The experience's own time (its card's timestamp), else the date its text names, else
    when it was stored, said so."""
    stamp = hit.metadata.get("timestamp")
    if times.representable(stamp):
        return times.minute(stamp)
    if fallback_date:
        return fallback_date
    stored = str(hit.metadata.get("stored_at") or hit.created_at)
    return f"stored {stored[:16].replace('T', ' ')} UTC"


def _sections(card: str) -> dict[str, str]:
    return {heading: body for heading, body in card_sections(card) if heading}


def _subject(card: str) -> str:
    task = _sections(card).get("Task")
    return _first_line(task if task is not None else card)


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _list(value: object) -> list[object]:
    return list(value) if isinstance(value, list) else []


def _joined(items: list[str], limit: int = 8) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" (+{len(items) - limit} more)" if len(items) > limit else "")
