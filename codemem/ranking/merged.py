"""Which commits of a merge a query matched: a merge is one experience (its branch's commits
and its diff against the first parent), found for the words of one commit inside it, and a
result that says only "Merge remote-tracking branch 'origin/2.0.x' into main" hides why.

A merge's card keeps its branch's commits as (sha, subject) in its metadata (`merged`,
written by the git import); cards stored before that have them only in the task's
"Commits:" list, which is read instead. A commit matches when its subject shares the query's
telling words (`subjects.stems`): two of them, or the only one a one-word query has; the
best are kept, each weighed by how few of the branch's subjects share it.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence

from codemem.contract.types import Hit
from codemem.ranking.subjects import stems

MAX_SHOWN = 3  # matched commits named per merge
_QUERY_CHARS = 4_000  # of a long report, the opening says what it is about
_LISTED = re.compile(r"^- ([0-9a-f]{7,40}) (.+)$", re.MULTILINE)  # git.cards' "Commits:" list


def matching_commits(query: str, merged: Sequence[Sequence[str]], limit: int = MAX_SHOWN) -> list[tuple[str, str]]:
    """The commits of `merged` ((sha, subject), newest first) whose subjects match `query`,
    best first, at most `limit`; none when no subject shares enough of its words."""
    wanted = set(stems(query[:_QUERY_CHARS]))
    if not wanted or not merged:
        return []
    subjects = [(str(sha), str(subject), set(stems(str(subject)))) for sha, subject in merged]
    df = Counter(w for _, _, words in subjects for w in words)
    needed = min(2, len(wanted))
    scored: list[tuple[float, int, str, str]] = []
    for i, (sha, subject, words) in enumerate(subjects):
        shared = wanted & words
        if len(shared) >= needed:
            scored.append((sum(math.log(1 + len(subjects) / df[w]) for w in shared), -i, sha, subject))
    if not scored:
        return []
    best = max(scored)[0]
    return [(sha, subject) for score, _, sha, subject in sorted(scored, reverse=True)[:limit] if score >= best / 2]


def merged_of(metadata: Mapping[str, object], card: str) -> list[tuple[str, str]]:
    """A merge card's branch commits: from its metadata, else from its task's "Commits:" list."""
    listed = metadata.get("merged")
    if isinstance(listed, list):
        return [(str(p[0]), str(p[1])) for p in listed if isinstance(p, list | tuple) and len(p) == 2]
    _, found, rest = card.partition("\nCommits:\n")
    if not found or "commit" not in metadata:
        return []
    block = rest.split("\n\n", 1)[0]
    return [(m.group(1), m.group(2).strip()) for m in _LISTED.finditer(block)]


def name_matched_commits(hits: list[Hit], query: str) -> list[Hit]:
    """Each merge card among `hits` with `metadata["matched_commits"]`: the commits of its
    branch that `query` matched, as {"sha", "subject"}, best first (absent when none did).
    The branch's whole list is not repeated in a Search item's metadata."""
    for hit in hits:
        if hit.metadata.get("kind") != "card" or not isinstance(hit.content, str):
            continue
        merged = merged_of(hit.metadata, hit.content)
        hit.metadata.pop("merged", None)
        if found := matching_commits(query, merged):
            hit.metadata["matched_commits"] = [{"sha": sha, "subject": subject} for sha, subject in found]
    return hits
