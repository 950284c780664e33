"""Whose memory a working directory belongs to: a stable, readable user_id from git.

`codemem mcp` and the Claude Code hook run with no configuration, so both must answer
"which memory is this?" the same way for a directory. A repository's remote names it the
same in every clone and worktree (`repo:github.com/owner/name`); a repository with no
remote is named by its top-level path (`repo:/home/me/project`), and a directory outside
git by its own path (`dir:/tmp/scratch`).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

# git answers these in milliseconds; the bound only keeps a hook from hanging on a broken
# filesystem.
GIT_TIMEOUT_S = 5.0
# `user@host:path` (scp-like syntax): no "/" before the colon, and a host of more than one
# character, so a Windows drive letter is not taken for a host.
_SCP = re.compile(r"^(?:[^@/]+@)?(?P<host>[^:/]{2,}):(?P<path>.+)$")


def repo_user_id(path: str | os.PathLike[str]) -> str:
    """The user_id of the repository (or plain directory) at `path`."""
    directory = Path(path).expanduser().resolve()
    top = _git(directory, "rev-parse", "--show-toplevel")
    if top is None:
        return f"dir:{directory}"
    remote = _remote_url(top)
    if remote is None:
        return f"repo:{top}"
    if remote.startswith("."):  # a remote given relative to the repository
        remote = os.path.normpath(os.path.join(top, remote))
    return f"repo:{normalise_remote(remote)}"


def git_top_level(path: str | os.PathLike[str]) -> str | None:
    """The top-level directory of the git work tree `path` is in (the repository itself, or
    any directory inside it), a bare repository's own directory, or None outside git."""
    directory = Path(path).expanduser()
    if not directory.is_dir():
        return None
    directory = directory.resolve()
    if top := _git(directory, "rev-parse", "--show-toplevel"):
        return top
    bare = _git(directory, "rev-parse", "--is-bare-repository", "--absolute-git-dir")
    return bare.split("\n", 1)[1] if bare and bare.startswith("true\n") else None


def normalise_remote(url: str) -> str:
    """A remote URL as `host/owner/name`: scheme, credentials, port and `.git` dropped, so
    the https and ssh URLs of one repository give the same id. Local remotes stay paths."""
    url = url.strip()
    if "://" in url:
        parts = urlsplit(url)
        if parts.scheme == "file" or not parts.hostname:
            return _strip(parts.path)
        return f"{parts.hostname.lower()}/{_strip(parts.path).lstrip('/')}"
    m = _SCP.match(url)
    if m and not url.startswith((".", "/", "~")):
        return f"{m['host'].lower()}/{_strip(m['path']).lstrip('/')}"
    return _strip(url)


def _strip(path: str) -> str:
    path = path.rstrip("/")
    return path[: -len(".git")] if path.endswith(".git") else path


def _remote_url(top: str) -> str | None:
    """`origin`'s URL, else the first remote's in name order, else None."""
    listing = _git(Path(top), "config", "--get-regexp", r"^remote\..*\.url$")
    if not listing:
        return None
    urls: dict[str, str] = {}
    for line in listing.splitlines():
        key, _, value = line.partition(" ")
        name = key[len("remote.") : -len(".url")]
        if value.strip():
            urls[name] = value.strip()
    if not urls:
        return None
    return urls.get("origin") or urls[min(urls)]


def _git(cwd: Path, *args: str) -> str | None:
    """git's stdout, stripped, or None when git fails, is missing or `cwd` is not a repo."""
    try:
        done = subprocess.run(
            ["git", "-C", str(cwd), *args], capture_output=True, text=True, timeout=GIT_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.strip() or None
