"""Training pairs for the experience reranker, from public git histories only.

A pair is (query, positive card): the query is a later change's message made to read like a
problem statement, the positive is the earlier change it is documented as related to,
rendered like an experience card (task, edited files and symbols, tests, diff). A change is
related to an earlier one when its message names that change's pull request (``#N`` of a
squash subject ``... (#N)`` or of a ``Merge pull request #N``), or when both say they fix
the same issue (``Fixes #N``), or when it names an issue the earlier change fixed. Every
``#N``, issue URL and commit hash is removed from queries and cards alike, so the model
cannot match the number. Negatives are the BM25 nearest earlier changes of the same
repository that are not linked to the query, plus random earlier changes.

The repositories are given on the command line as local clones; the evaluation's
repositories are refused (`EXCLUDED`), and no SWE-ContextBench data is read.

    python -m train.rerank.build_pairs --repo /work/rr14/python+mypy ... --out pairs.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import bm25s

import parsers
from parsers.types import unique

# The evaluation's and the dev split's repositories: never a source of training data.
EXCLUDED = {
    "django", "sympy", "scikit-learn", "matplotlib", "pytest", "sphinx", "astropy", "pylint",
    "requests", "xarray", "seaborn", "flask", "ripgrep", "caddy", "lombok", "preact", "tokio",
}

_COMMIT = "\x1ecommit "
_PR_SUBJECT = re.compile(r"\(#(\d+)\)\s*$")
_MERGE = re.compile(r"^Merge pull request #(\d+)")
_REF = re.compile(r"(?<![\w/])(?:#|gh-|GH-|GH)(\d+)\b")
_SCRUB = [
    re.compile(r"https?://github\.com/\S+/(?:issues|pull)/\d+\S*"),
    _REF,  # every form a link is read from: #N, gh-N, GH-N
    re.compile(r"\b[0-9a-f]{7,40}\b"),
    re.compile(r"\b(?:follow[- ]?up|regression|refs?|see|closes?|fix(?:es|ed)?|resolves?|reverts?)"
               r"\s*(?:to|from|of|for)?\s*[:,]?\s*(?=[\s.,;:)]|$)", re.I),
    re.compile(r"Co-authored-by:.*", re.I),
    re.compile(r"Change-Id:.*", re.I),
    re.compile(r"\(cherry picked from commit.*\)", re.I),
    re.compile(r"Signed-off-by:.*", re.I),
    re.compile(r"\(\s*[,;]?\s*\)"),
]
_MAX_SHARED = 4


@dataclass
class Change:
    sha: str
    time: int
    subject: str
    body: str
    files: list[str] = field(default_factory=list)
    symbols: list[str] = field(default_factory=list)
    diff: list[str] = field(default_factory=list)

    @property
    def message(self) -> str:
        return f"{self.subject}\n\n{self.body}".strip()


def scrub(text: str) -> str:
    for pattern in _SCRUB:
        text = pattern.sub("", text)
    return re.sub(r"[ \t]+", " ", re.sub(r"\n{3,}", "\n\n", text)).strip()


def read_history(repo: Path, limit: int) -> list[Change]:
    """First-parent history, oldest first: each change with its files, symbols and a diff head."""
    out = subprocess.run(
        ["git", "-C", str(repo), "log", "--first-parent", "--diff-merges=first-parent", "-p", "--unified=0",
         f"-n{limit}", "--format=%x1ecommit %H%x00%at%x00%s%x00%b%x00"],
        capture_output=True, check=True).stdout.decode("utf-8", "replace")
    changes = []
    for chunk in out.split(_COMMIT)[1:]:
        sha, at, subject, body, patch = chunk.split("\x00", 4)
        c = Change(sha, int(at), subject.strip(), body.strip())
        files = parsers.parse_diff(patch)  # codemem's own diff reader: files and enclosing symbols
        c.files = [f.path for f in files]
        c.symbols = unique(s for f in files for s in f.symbols)[:30]
        c.diff = [line[:160] for line in patch.splitlines()
                  if not line.startswith(("diff --git", "index ", "new file", "deleted file"))][:40]
        changes.append(c)
    return changes[::-1]


def card(c: Change) -> str:
    """The change as an experience card (the sections of codemem's render_card)."""
    files = [f for f in c.files if not _is_test(f)]
    tests = [f for f in c.files if _is_test(f)]
    parts = [f"## Task\n{scrub(c.message)[:1200]}", "## Outcome\nchange made; tests run"]
    edited = f"files: {', '.join(files[:20])}" if files else ""
    if c.symbols:
        edited += f"\nsymbols: {', '.join(c.symbols)}"
    if edited:
        parts.append(f"## Edited\n{edited.strip()}")
    parts.append("## Tests\n" + (f"edited: {', '.join(tests[:8])}" if tests else "no test outcome seen"))
    parts.append("## Final diff\n```diff\n" + scrub("\n".join(c.diff)) + "\n```")
    return "\n\n".join(parts)


def _is_test(path: str) -> bool:
    return bool(re.search(r"(^|/)(tests?|testing)/|(^|/)test_[^/]*$|_test\.py$", path))


def links(changes: list[Change]) -> list[tuple[int, int]]:
    """(later, earlier) index pairs of changes documented as related."""
    pr_of: dict[int, int] = {}
    for i, c in enumerate(changes):
        m = _PR_SUBJECT.search(c.subject) or _MERGE.match(c.subject)
        if m:
            pr_of.setdefault(int(m.group(1)), i)
    named_by: dict[int, list[int]] = defaultdict(list)
    for i, c in enumerate(changes):
        own = {n for n, j in pr_of.items() if j == i}
        for n in {int(n) for n in _REF.findall(c.message)} - own:
            named_by[n].append(i)
    pairs: set[tuple[int, int]] = set()
    for n, named in named_by.items():
        j = pr_of.get(n)
        pairs.update((i, j) for i in named if j is not None and j < i)
        # Changes that name the same issue (fix it, fix it again, follow it up) are related;
        # an issue named by many changes is a tracking issue, too broad to say so.
        if j is None and len(named) <= _MAX_SHARED:
            pairs.update((i, k) for i in named for k in named if k < i)
    return sorted(pairs)


def build(repo: Path, limit: int, hard: int, easy: int, cap: int, seed: int) -> list[dict]:
    name = repo.name.split("+")[-1].lower()
    if name in EXCLUDED:
        raise SystemExit(f"{repo}: {name} is an evaluation repository and is never trained on")
    rng = random.Random(seed)
    changes = read_history(repo, limit)
    cards = [card(c) for c in changes]
    pairs = links(changes)
    related: dict[int, set[int]] = defaultdict(set)
    for i, j in pairs:
        related[i].add(j)
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(cards, stopwords="en", show_progress=False), show_progress=False)
    queries = sorted(related)
    rng.shuffle(queries)
    rows = []
    for i in queries[:cap]:
        query = scrub(changes[i].message)
        if len(query) < 30:
            continue
        docs, _ = retriever.retrieve(bm25s.tokenize([query], stopwords="en", show_progress=False),
                                     k=min(60, len(cards)), show_progress=False)
        ranked = [int(d) for d in docs[0]]
        earlier = [d for d in ranked if d < i and d not in related[i]][:hard]
        randoms = [j for j in rng.sample(range(i), min(i, easy * 3)) if j not in related[i]][:easy]
        positives = sorted(related[i], key=lambda j: ranked.index(j) if j in ranked else len(ranked))[:3]
        # Where BM25 puts the first positive among it and the hard negatives (validation's baseline).
        shown = set(earlier) | {positives[0]}
        order = [d for d in ranked if d in shown]
        rows.append({
            "repo": name, "query": query,
            "positives": [cards[j] for j in positives],
            "hard": [cards[j] for j in earlier],
            "easy": [cards[j] for j in randoms],
            "bm25_rank": order.index(positives[0]) if positives[0] in order else len(earlier),
        })
    print(f"{name}: {len(changes)} changes, {len(pairs)} links, {len(rows)} queries")
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repo", type=Path, action="append", required=True, help="a local clone (repeatable)")
    p.add_argument("--limit", type=int, default=14000, help="most recent first-parent changes read per repo")
    p.add_argument("--hard", type=int, default=19, help="BM25 negatives kept per query")
    p.add_argument("--easy", type=int, default=4, help="random negatives per query")
    p.add_argument("--cap", type=int, default=1500, help="most queries per repo")
    p.add_argument("--seed", type=int, default=14)
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args()
    with args.out.open("w") as f:
        for repo in args.repo:
            for row in build(repo, args.limit, args.hard, args.easy, args.cap, args.seed):
                f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
