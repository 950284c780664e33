"""A change read from git (a commit, or a merge with its branch) as the experience the store
indexes: its card, rendered like a session's, one edit step per file, and its reference terms.
"""

from __future__ import annotations

import re
from datetime import UTC
from functools import partial

import msgspec

import parsers
from codemem.clip import clip
from codemem.experience.building.render import CARD_CHARS, render_card
from codemem.experience.types import Experience, ExperienceCard, StepRecord
from codemem.git.facts import change_facts
from codemem.git.records import MAX_BRANCH, CommitRecord
from parsers.types import CodeRefs, DiffFile, unique

__all__ = ["commit_to_experience"]

_MAX_STEPS = 64
_STEP_CHARS = 1_500
_TRAILER = re.compile(
    r"^(signed-off-by|co-authored-by|change-id|reviewed-on|reviewed-by|acked-by|tested-by|cc):",
    re.IGNORECASE,
)


def commit_to_experience(commit: CommitRecord, max_card_chars: int = CARD_CHARS) -> Experience:
    """Turn one change (a commit, or a merge with its branch) into the experience the store
    indexes: the card (rendered like a session's), one edit step per file, reference terms.

    The card holds the title and messages, the PR and the issues it closes, the files and
    symbols changed, the tests added or changed and the error strings the diff touches; every
    item carries the change's SHAs in its metadata (``Experience.metadata``). Enclosing symbols
    come from the hunks alone (``parsers.parse_diff`` without new sources): reading every
    file's post-commit content would cost a git object read per file.
    """
    diff_files = parsers.parse_diff(commit.diff) if commit.diff else []
    by_path: dict[str, DiffFile] = {}
    for df in diff_files:
        by_path.setdefault(df.path, df)
    files = commit.files or [df.path for df in diff_files]

    symbols = unique(s for df in diff_files for s in df.symbols)
    added, removed = commit.added, commit.removed
    if not (added or removed):
        added = sum(df.added for df in diff_files)
        removed = sum(df.removed for df in diff_files)

    messages = [commit.message, *(message for _, message in commit.branch)]
    facts = change_facts(messages, diff_files)
    title, body = _title_and_body(commit.message)
    task = title if not body else f"{title}\n\n{body}"
    if commit.branch:
        listed = "\n".join(f"- {sha[:7]} {_subject(message)}" for sha, message in commit.branch[:30])
        task += f"\n\nCommits:\n{listed}"
    task = _trim(task, max(200, max_card_chars // 2))
    text_refs = parsers.extract_text_refs("\n".join(messages))
    errors = unique([*text_refs.exceptions, *text_refs.error_messages, *facts.error_strings])
    refs = parsers.merge_refs([text_refs, CodeRefs(files=list(files), symbols=symbols, test_ids=facts.tests)])

    date = commit.authored_at.astimezone(UTC).date().isoformat()
    noun = "file" if len(files) == 1 else "files"
    sha = commit.sha[:10]
    if facts.pr is None:
        what = f"Merge {sha}" if len(commit.parents) > 1 else f"Commit {sha}"
    else:
        what = f"PR #{facts.pr} merged as {sha}" if len(commit.parents) > 1 else f"PR #{facts.pr}, commit {sha}"
    outcome = f"{what} by {commit.author} on {date}: {len(files)} {noun}, +{added} -{removed}"
    if facts.closes:
        outcome += "; closes " + ", ".join(f"#{n}" for n in facts.closes)
    if commit.branch:
        outcome += f"; {len(commit.branch)} branch commits"
    final_diff = commit.diff
    if final_diff and (commit.diff_truncated or len(final_diff) > max_card_chars):
        marker = "\n... (diff trimmed)"
        final_diff = _trim(final_diff, max_card_chars - len(marker), "").rstrip("\n") + marker
    card = ExperienceCard(
        task=task,
        outcome=outcome,
        edited_files=list(files),
        edited_symbols=symbols,
        final_diff=final_diff,
        errors=errors,
        tests_changed=facts.tests,
        merged=[(sha, _subject(message)) for sha, message in commit.branch],
    )
    card = msgspec.structs.replace(card, text=render_card(card, max_card_chars))
    steps = [
        _file_step(position, path, by_path.get(path))
        for position, path in enumerate(files[:_MAX_STEPS])
    ]
    shas = [commit.sha, *(sha for sha, _ in commit.branch)]
    metadata: dict[str, object] = {
        "commit": commit.sha, "commits": shas[:MAX_BRANCH + 1], "date": date,
        "author": commit.author, "subject": title,
    }
    if facts.pr is not None:
        metadata["pr"] = facts.pr
    if facts.closes:
        metadata["closes"] = facts.closes
    issues = [f"#{n}" for n in (*facts.closes, *facts.mentions, *([facts.pr] if facts.pr else []))]
    extra = [*issues, *(t for e in (*facts.error_strings, *facts.warning_strings) for t in parsers.exact_terms(e))]
    terms = list(dict.fromkeys([*refs.terms(), *(t.lower() for t in extra)]))
    return Experience(card=card, steps=steps, terms=terms, metadata=metadata)


def _subject(message: str) -> str:
    return message.partition("\n")[0].strip()


def _title_and_body(message: str) -> tuple[str, str]:
    """The change's title and body, trailers dropped; a GitHub merge's title is the PR title
    (the body's first line), its "Merge pull request #N from ..." subject kept below it."""
    subject, _, body = message.partition("\n")
    body = "\n".join(ln for ln in body.strip().splitlines() if not _TRAILER.match(ln)).strip()
    if subject.startswith("Merge pull request #") and body:
        first, _, rest = body.partition("\n")
        return first.strip(), f"{subject}\n{rest.strip()}".strip()
    return subject.strip(), body


def _file_step(position: int, path: str, df: DiffFile | None) -> StepRecord:
    """One changed file: its path, enclosing symbols and changed lines, about 1,500 chars."""
    if df is None:
        text = f"{path}: changed (no text diff kept: binary, mode-only or trimmed)"
        return StepRecord(kind="edit", position=position, text=text, files=[path])
    status = "added" if df.is_new else "deleted" if df.is_deleted else "modified"
    head = f"{path} ({status}, +{df.added} -{df.removed})"
    if df.old_path and df.old_path != path:
        head += f", renamed from {df.old_path}"
    parts = [head]
    if df.symbols:
        parts.append(_trim("Symbols: " + ", ".join(df.symbols), _STEP_CHARS // 4, " ..."))
    for hunk in df.hunks:
        span = f"-{hunk.old_start},{hunk.old_len} +{hunk.new_start},{hunk.new_len}"
        parts.append(f"@@ {span} @@ {hunk.header}".rstrip())
        parts.extend(f"-{line}" for line in hunk.removed)
        parts.extend(f"+{line}" for line in hunk.added)
        if sum(len(p) + 1 for p in parts) > _STEP_CHARS:
            break
    files = [path] if not df.old_path or df.old_path == path else [path, df.old_path]
    return StepRecord(
        kind="edit",
        position=position,
        text=_trim("\n".join(parts), _STEP_CHARS, "\n..."),
        files=files,
        symbols=list(df.symbols),
    )


_trim = partial(clip, break_at="\n")  # a commit card's parts end at a whole line
