"""Repository-relative paths and scratch-looking names.

Agents name one file many ways (``./swebench/testbed/django/x.py``,
``/workspace/django__django__3.0/django/x.py``, ``django/x.py`` after a ``cd``). Paths are
made relative by prefixes learnt from the session's own patch (a tool path that ends with a
patch path gives away the checkout root), else by well-known checkout markers. Scratch files
(reproduction scripts, ad-hoc tests, output files) are what an agent writes around a fix,
not the fix.
"""

from __future__ import annotations

import posixpath
import re

# Checkout roots as SWE-style harnesses lay them out; the path after the last one is relative.
_ROOT_MARKER = re.compile(
    r"(?:^|/)(?:testbed|[A-Za-z][\w.\-]*__[\w.\-]+)/|^/(?:workspace/[^/]+|repo|app|code|src/repo)/"
)
# Words that mark a top-level file or folder as scratch work, as a whole ``_``/``-`` part.
_SCRATCH_WORD = re.compile(
    r"(?:^|[_\-])(?:tests?|repro|reproduce|reproduction|debug|scratch|tmp|temp|verify|verification|"
    r"validate|validation|check|demo|standalone|trial|experiment|investigate|explore|try|sample|"
    r"quick|minimal|example|final|simple)(?:[_\-.]|\d|$)",
    re.I,
)
_PROJECT_FILES = frozenset(
    {
        "setup.py",
        "conftest.py",
        "manage.py",
        "noxfile.py",
        "tasks.py",
        "runtests.py",
        "tox.ini",
        "setup.cfg",
        "pyproject.toml",
    }
)
_OUTPUT_SUFFIXES = ("_preds.json", ".patch", ".diff", ".orig", ".rej", ".bak", ".log")
_TEMP_DIRS = ("/tmp/", "tmp/", "/var/tmp/", "/private/tmp/")


def _last_marker(path: str) -> re.Match[str] | None:
    """The innermost checkout marker of a path (nested checkouts: the last one)."""
    found = None
    for found in _ROOT_MARKER.finditer(path):  # noqa: B007 - the last match is the answer
        pass
    return found


def clean(path: str) -> str:
    """A path without quotes, ``./`` prefixes, ``a/``-style noise or duplicate slashes."""
    path = path.strip().strip("\"'`")
    if not path:
        return ""
    path = (
        posixpath.normpath(path) if "/." in path or "//" in path or path.startswith("./") else path
    )
    return "" if path == "." else path


class PathMapper:
    """Makes tool paths repository-relative, learning checkout roots as it goes."""

    __slots__ = ("_roots",)

    def __init__(self) -> None:
        self._roots: list[str] = []

    def learn(self, raw: str, relative: str) -> None:
        """``raw`` names the same file as the repository path ``relative``: keep its root."""
        raw = clean(raw)
        if raw != relative and raw.endswith("/" + relative):
            root = raw[: len(raw) - len(relative)]
            if root not in self._roots:
                self._roots.append(root)
                self._roots.sort(key=len, reverse=True)

    def relative(self, raw: str) -> str:
        path = clean(raw)
        for root in self._roots:
            if path.startswith(root):
                return path[len(root) :]
        marker = _last_marker(path)
        if marker is not None:
            return path[marker.end() :]
        return path

    def under_root(self, raw: str) -> bool:
        """Whether a path sits under a known checkout root (learnt or by marker)."""
        path = clean(raw)
        return any(path.startswith(root) for root in self._roots) or bool(_ROOT_MARKER.search(path))


def match_patch_path(raw: str, patch_paths: list[str]) -> str | None:
    """The patch path ``raw`` names (equal, or ``raw`` ends with ``/`` + it); longest wins."""
    path = clean(raw)
    best = None
    for candidate in patch_paths:
        if (path == candidate or path.endswith("/" + candidate)) and (
            best is None or len(candidate) > len(best)
        ):
            best = candidate
    return best


def is_scratch_name(relative: str) -> bool:
    """A file that by name and place is an agent's scratch work, not part of a fix: in a temp
    folder, an output file, or a top-level file (or top-level folder) named like a
    reproduction, check or ad-hoc test."""
    if relative.startswith(_TEMP_DIRS) or relative.endswith(_OUTPUT_SUFFIXES):
        return True
    top = relative.split("/", 1)[0]
    if top in _PROJECT_FILES or top in ("tests", "test", "testing"):
        return False
    return bool(_SCRATCH_WORD.search(top))


def checkout_base(raw: str) -> str | None:
    """What comes before the checkout marker in a path (``swebench/`` of
    ``swebench/testbed/x.py``), or None when the path holds no marker."""
    path = clean(raw)
    marker = _last_marker(path)
    if marker is None:
        return None
    return path[: marker.start() + (1 if path[marker.start()] == "/" else 0)]
