"""The public git repositories the training data is built from, and whether this machine has them.

This machine reaches no network: a session brings each repository with its search tool's
`fetch github:<owner>/<name>`, which puts the git directory at
`<mirrors>/<owner>+<name>/repo` (`/work/.mirror` by default). `python -m train` checks every
source the steps it must run read, before any work, and names what to fetch (`missing`).

A source is pinned to a commit where the data read from it depends on which one: an agent
run's trajectories and the Multi-SWE-bench copy are read at that commit, and a mirror without
it is as good as missing. A history (`train.past_fixes.build_data.HISTORIES`) is walked from
its HEAD; the window it imports is placed by its gold changes, so a newer snapshot gives the
same window, and the HEAD it read is part of the cache key all the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from train.past_fixes.build_data import HISTORIES
from train.past_fixes.sources import MSB_COMMIT, MSB_REPO
from train.provenance import git
from train.ranker.agents import RUNS

DEFAULT_MIRRORS = Path("/work/.mirror")

# The commits the shipped model's sessions were read at (train/ranker/README.md: "sources").
RUN_COMMITS = {"mini": "d12a71affd95403b036b2bdbd827349b77bfffb9", "vorflux": "9e2acad", "openhands": "2b8d930"}


@dataclass(frozen=True)
class Source:
    repository: str  # owner/name on GitHub
    commit: str | None  # read at this commit; None: at the mirror's HEAD
    why: str

    def git_dir(self, mirrors: Path) -> Path:
        return mirrors / self.repository.replace("/", "+") / "repo"

    def resolved(self, mirrors: Path) -> str | None:
        """The full commit this source is read at, or None where the mirror lacks it."""
        directory = self.git_dir(mirrors)
        if not (directory / "HEAD").is_file():
            return None
        return git("--git-dir", str(directory), "rev-parse", "--verify", "--quiet", f"{self.commit or 'HEAD'}^{{commit}}")

    def fetch_line(self, mirrors: Path) -> str:
        at = f"commit {self.commit}" if self.commit else "any commit (read at HEAD)"
        held = "" if not (self.git_dir(mirrors) / "HEAD").is_file() else "; the mirror there lacks that commit"
        return f"fetch github:{self.repository}  ({at}; {self.why}{held})"


def agent_run(name: str) -> Source:
    run = RUNS[name]
    return Source(run.repository, RUN_COMMITS[name], f"the {name} agent's sessions, {run.license}")


MULTI_SWE_BENCH = Source(MSB_REPO, MSB_COMMIT, "Multi-SWE-bench's bug reports, CC0")


def histories() -> list[Source]:
    return [Source(repo, None, "a past-fix history") for repo in HISTORIES]


def missing(sources: list[Source], mirrors: Path) -> list[Source]:
    """The sources not on this machine at the commit they are read at."""
    return [s for s in sources if s.resolved(mirrors) is None]
