"""Which release each past change came after, read from the repository's version tags.

A bug report usually names the version it was seen in ("lombok 1.18.22", "tokio: 0.2.18",
"since 2.8.2"). A change that fixed that bug landed after that version was released, so
among changes that look alike, the ones released since the reported version are likelier
to be the fix, or the next one (`codemem.ranking.releases`). On an import each change's
card metadata gets `after_release`, the highest version the project had released before
the change was authored, and `project`, the names a report may call the project by
(the repository's directory and remote names, and the prefix of its version tags).

The project's releases are its tags that read as a version alone, optionally after `v`, the
project's name, or `release`: `v1.18.22`, `13.0.0`, `tokio-0.2.18` (not `tokio-util-0.7.17`,
another crate of the same repository, nor `v2.0.0-beta.1`, a pre-release). The highest
version released by a date is taken, not the latest tag: a patch of an old line (`1.20.5`
tagged after `1.30.0`) does not move changes back.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import git
import msgspec

from codemem.experience.types import Experience
from codemem.git.repo_id import repo_user_id
from codemem.git.versions import VERSION, parse_version

__all__ = ["Releases"]

_TAG = re.compile(rf"^(?:(?P<prefix>[A-Za-z][\w.-]*?)[-_])?v?(?P<version>{VERSION})$", re.IGNORECASE)


@dataclass(frozen=True)
class Releases:
    """The project's releases, by date."""

    names: tuple[str, ...]  # the project's names, lowercased (see `of_repo` and `of_tags`)
    dates: tuple[float, ...]  # release times (unix), ascending
    best: tuple[str, ...]  # at each of `dates`, the highest version released up to then

    @classmethod
    def of_repo(cls, repo_path: str) -> Releases:
        """The releases of the repository at `repo_path` (none where it has no version tag). The
        names a report may call its project by: the last part of its remote's name and its
        directory's name."""
        repo = git.Repo(repo_path, search_parent_directories=True)
        try:
            listed = str(repo.git.for_each_ref("--format=%(refname:short)%09%(creatordate:unix)", "refs/tags"))
            directory = Path(repo.working_tree_dir or "").name
        finally:
            repo.close()
        remote = Path(repo_user_id(repo_path).split(":", 1)[1]).name
        names = list(dict.fromkeys(n.lower() for n in (remote, directory) if n))
        tags = [line.split("\t") for line in listed.splitlines() if "\t" in line]
        return cls.of_tags([(name, float(when)) for name, when in tags if when.strip()], names)

    @classmethod
    def of_tags(cls, tags: list[tuple[str, float]], names: list[str]) -> Releases:
        """From (tag name, unix time) pairs: the project's releases among them are tags with
        no prefix, a `v`, `release` or one of `names`; or, where none of those exist, the
        prefix most version tags carry (`tokio-`), which then names the project too."""
        parsed = [(m["prefix"], m["version"], when) for name, when in tags if (m := _TAG.match(name))]
        plain = {None, "release", *names}
        mine = [(p, v, w) for p, v, w in parsed if (p.lower() if p else None) in plain]
        prefixes = [p.lower() for p, _, _ in parsed if p]
        if not mine and prefixes:
            common = max(set(prefixes), key=prefixes.count)
            mine = [(p, v, w) for p, v, w in parsed if p and p.lower() == common]
            names = [*names, common]
        dates: list[float] = []
        best: list[str] = []
        for _, version, when in sorted(mine, key=lambda r: r[2]):
            if best and parse_version(best[-1]) >= parse_version(version):
                version = best[-1]
            dates.append(when)
            best.append(version)
        return cls(tuple(dict.fromkeys(names)), tuple(dates), tuple(best))

    def after(self, when: datetime) -> str | None:
        """The highest version released before `when` (None: before the first release)."""
        i = bisect.bisect_left(self.dates, when.timestamp())
        return self.best[i - 1] if i else None

    def mark(self, experience: Experience, authored_at: datetime) -> Experience:
        """`experience` (a change authored at `authored_at`) with `after_release` and
        `project` in its metadata; unchanged where the project has no release."""
        if not self.dates:
            return experience
        meta = {**experience.metadata, "project": list(self.names)}
        if (version := self.after(authored_at)) is not None:
            meta["after_release"] = version
        return msgspec.structs.replace(experience, metadata=meta)
