"""What an import read and stored, and the steps every importer ends with."""

from __future__ import annotations

import msgspec

from codemem.memory import Memory


class IngestReport(msgspec.Struct):
    sources: int = 0  # transcripts, or changes of a git history (a commit, or a merge with its branch), read
    commits: int = 0  # the commits those changes hold (a git history: merged branches' included)
    added: int = 0  # Add calls that stored something
    unchanged: int = 0  # commits stored before, transcripts with no new message
    messages: int = 0
    skipped_lines: int = 0  # transcript lines that did not parse
    empty: int = 0  # transcripts with no message
    skipped_where: list[str] = []  # "file:line" of the first lines that did not parse
    merges: int = 0  # merges read, each as one change with its branch's commits
    skipped_commits: list[str] = []  # changes git could not read (a missing object), skipped

    def changes_read(self) -> str:
        """What a git import read, for a person: its changes, and the commits they hold
        where merges make the two differ ("2,261 changes of 5,531 commits": the first-parent
        line, each merge one change with the commits it brought in)."""
        if self.commits > self.sources + len(self.skipped_commits):
            merges = f"{_count_of(self.merges, 'merge')}, each" if self.merges else "each merge"
            return (f"{_count_of(self.sources, 'change')} of {_count_of(self.commits, 'commit')} (the "
                    f"first-parent line: {merges} one change with the commits it brought in)")
        return _count_of(self.sources, "commit")


def _count_of(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def compact_after(memory: Memory, report: IngestReport) -> None:
    """One compaction at the end of an import that added anything: a CLI or eval Memory runs
    no compactor thread, and a store left with a fragment per Add or batch and an unindexed
    tail makes every later Search scan them."""
    if report.added:
        memory.compactor.run_once()


def tally(report: IngestReport, duplicate: bool, messages: int) -> None:
    """One Add's answer counted into `report`: stored, or a duplicate of what was."""
    if duplicate:
        report.unchanged += 1
    else:
        report.added += 1
        report.messages += messages
