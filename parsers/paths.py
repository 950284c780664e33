"""File paths in free text, and the normal forms used to match them.

A token counts as a path only with a known extension (or a well-known bare
name like ``Makefile``): ``response.json()`` or ``e.g.`` must not become files.
"""

from __future__ import annotations

import re

from parsers.languages import CODE_EXTENSIONS
from parsers.scan import run_start

_TEXT_EXTENSIONS = frozenset(
    "md rst txt json jsonl yaml yml toml cfg ini conf html htm css scss sass less xml csv tsv "
    "lock gradle properties sql proto graphql gql mk cmake tf tfvars ipynb po j2 jinja jinja2 "
    "tpl env example sample patch diff pyi pyx pxd pth spec bzl bazel nix mod sum "
    "editorconfig".split()
)
_KNOWN_EXTENSIONS = _TEXT_EXTENSIONS | CODE_EXTENSIONS
_BARE_NAMES = r"Makefile|Dockerfile|Gemfile|Rakefile|Procfile|Jenkinsfile|Vagrantfile|Containerfile"

_URL = re.compile(r"\b[a-zA-Z][\w+.-]*://[^\s<>\"'`)\]]+|\bwww\.[^\s<>\"'`)\]]+")
_PATH = re.compile(
    r"(?<![\w@/.:\\$%-])"
    r"(?P<path>(?:[A-Za-z]:[\\/]|~?/|\.{1,2}/)?(?:\.?[\w@+-][\w.@+-]*[\\/])*"
    rf"(?:\.?[\w@+-][\w.@+-]*\.(?P<ext>[A-Za-z0-9+]{{1,10}})|(?P<bare>{_BARE_NAMES})))"
    r"(?![\w/\\+(-]|\.\w)")
# Literal-led hint for lines that may hold a path (see scan.py).
PATH_HINT = re.compile(rf"\.[A-Za-z0-9+]|{_BARE_NAMES}")
_BARE_HINT = re.compile(_BARE_NAMES)
_EXT_HIT = re.compile(r"\.(?P<ext>[A-Za-z0-9+]{1,10})(?![\w/\\+(-]|\.\w)")
_PATH_CHARS = re.compile(r"[\w.@+/\\~-]*")
_NOT_STEMS = frozenset({"self", "this", "cls", "e", "i", "x", "os", "np", "pd", "sys"})
# Product names that look like files.
_NOT_FILES = frozenset(
    "node.js vue.js next.js nuxt.js react.js express.js d3.js three.js chart.js ember.js "
    "backbone.js angular.js alpine.js deno.js bun.js".split()
)


def strip_urls(text: str) -> str:
    """Blank out URLs so their path parts are not taken for repository files."""
    if "://" not in text and "www." not in text:
        return text
    return _URL.sub(lambda m: " " * len(m.group(0)), text)


def normalize_path(path: str) -> str:
    """Forward slashes, no ``./`` or git ``a/``/``b/`` prefix, no trailing punctuation."""
    path = path.replace("\\", "/").strip().rstrip(".,;:")
    while path.startswith("./"):
        path = path[2:]
    if path.startswith(("a/", "b/")) and len(path) > 2:
        path = path[2:]
    return path


def is_path_token(ext: str | None, path: str) -> bool:
    if ext is None:
        return True
    ext = ext.lower()
    if ext not in _KNOWN_EXTENSIONS:
        return False
    base = path.replace("\\", "/").rsplit("/", 1)[-1]
    stem = base[: -len(ext) - 1]
    if "/" not in path and (stem in _NOT_STEMS or (len(ext) == 1 and len(stem) < 3)
                            or base.lower() in _NOT_FILES):
        return False
    return bool(stem)


def find_paths(text: str) -> list[str]:
    """Paths in ``text`` (already URL-stripped), normalised, in order of appearance.

    Scans for extension hits (a literal-led pattern, fast in ``re``) and grows each
    hit backwards over path characters, instead of trying a path pattern at
    every position."""
    found: list[tuple[int, str]] = []
    seen: set[str] = set()
    for m in _EXT_HIT.finditer(text):
        if m.group("ext").lower() not in _KNOWN_EXTENSIONS:
            continue
        start = run_start(text, m.start(), _PATH_CHARS)
        if start >= 2 and text[start - 1] == ":" and text[start - 2].isalpha() and (
                start < 3 or not text[start - 3].isalnum()):
            start -= 2  # a Windows drive letter
        elif start > 0 and text[start - 1] in ":$%":
            continue
        token = text[start:m.end()]
        if token not in seen:
            seen.add(token)
            _add(start, token, found)
    for m in _BARE_HINT.finditer(text):
        if m.end() < len(text) and (text[m.end()].isalnum() or text[m.end()] in "_.-"):
            continue
        start = run_start(text, m.start(), _PATH_CHARS)
        _add(start, text[start:m.end()], found)
    found.sort(key=lambda pair: pair[0])
    return [path for _, path in found]


def _add(pos: int, token: str, out: list[tuple[int, str]]) -> None:
    m = _PATH.fullmatch(token)
    if m is not None and is_path_token(m.group("ext"), m.group("path")):
        out.append((pos, normalize_path(token)))


def is_file_extension(ext: str) -> bool:
    return ext.lower() in _KNOWN_EXTENSIONS


def is_path(token: str) -> bool:
    m = _PATH.fullmatch(token.strip())
    return m is not None and is_path_token(m.group("ext"), m.group("path"))


def python_module(path: str) -> str | None:
    """``django/db/models/query.py`` -> ``django.db.models.query``; ``None`` when the
    path is absolute outside an installed-packages dir (no importable name)."""
    if not path.endswith((".py", ".pyi")):
        return None
    for marker in ("site-packages/", "dist-packages/"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    else:
        if path.startswith(("/", "~")) or re.match(r"^[A-Za-z]:/", path):
            return None
    path = path.removeprefix("src/").removeprefix("lib/")
    parts = path.rsplit(".", 1)[0].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    if not parts or not all(p.isidentifier() for p in parts):
        return None
    return ".".join(parts)
