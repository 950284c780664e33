"""Language identification: file extensions, markdown fence tags, and a cheap
content sniff for untagged code blocks.

The grammar table lives here too, so adding a language means one line in
``GRAMMARS`` plus a ``queries/<lang>-tags.scm`` file.
"""

from __future__ import annotations

import re

# language -> (grammar module, function returning the language pointer)
GRAMMARS: dict[str, tuple[str, str]] = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "java": ("tree_sitter_java", "language"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
}

# tsx reuses the typescript query: the grammars share node names.
QUERY_FILES: dict[str, str] = {lang: lang for lang in GRAMMARS} | {"tsx": "typescript"}

_EXTENSIONS: dict[str, str] = {
    "py": "python", "pyi": "python", "pyw": "python",
    "js": "javascript", "mjs": "javascript", "cjs": "javascript", "jsx": "javascript",
    "ts": "typescript", "mts": "typescript", "cts": "typescript",
    "tsx": "tsx",
    "java": "java",
    "go": "go",
    "rs": "rust",
    "c": "c", "h": "c",
    "cc": "cpp", "cpp": "cpp", "cxx": "cpp", "c++": "cpp", "hpp": "cpp", "hh": "cpp",
    "hxx": "cpp", "h++": "cpp", "ipp": "cpp", "inl": "cpp", "tpp": "cpp",
}

# Code we hold no grammar for: still worth keyword/indentation heuristics, unlike
# prose and data files, whose "definitions" would be noise.
_OTHER_CODE_EXTENSIONS = frozenset(
    "rb php cs kt kts swift scala m mm lua pl pm r jl dart ex exs erl hs ml fs clj groovy sh "
    "bash zsh ps1 vue svelte pyx pxd sol zig nim v cr elm".split()
)

_FENCE_TAGS: dict[str, str] = {
    "python": "python", "py": "python", "python3": "python", "py3": "python", "pycon": "python",
    "ipython": "python", "javascript": "javascript", "js": "javascript", "jsx": "javascript",
    "node": "javascript", "mjs": "javascript", "typescript": "typescript", "ts": "typescript",
    "tsx": "tsx", "java": "java", "go": "go", "golang": "go", "rust": "rust", "rs": "rust",
    "c": "c", "h": "c", "cpp": "cpp", "c++": "cpp", "cxx": "cpp", "cc": "cpp", "hpp": "cpp",
}

DIFF_TAGS = frozenset({"diff", "patch", "udiff", "git"})
SHELL_TAGS = frozenset(
    {"bash", "sh", "shell", "console", "zsh", "shell-session", "terminal", "cmd", "powershell"}
)

# Ordered sniffers for untagged blocks: first match wins, so the more specific come first.
_SNIFFERS: list[tuple[str, re.Pattern[str]]] = [
    ("go", re.compile(r"^package \w+\s*$|^func (?:\([^)]*\) )?\w+\(", re.M)),
    ("rust", re.compile(r"^\s*(?:pub(?:\([^)]*\))? )?(?:fn \w+|impl\b|use \w+::)|\blet mut\b",
                        re.M)),
    ("java", re.compile(r"^\s*(?:public|private|protected)\s+(?:static\s+)?(?:final\s+)?"
                        r"(?:class|interface|enum|void|[A-Z]\w*(?:<[^>]*>)?)\s+\w+", re.M)),
    ("cpp", re.compile(r"^#include\s*<(?:iostream|vector|string|memory|map)>|\bstd::|"
                       r"^\s*(?:class|namespace)\s+\w+\s*\{|^template\s*<", re.M)),
    ("c", re.compile(r"^#include\s*[<\"]|^\s*(?:static\s+)?(?:int|void|char|size_t)\s+\*?\w+\(",
                     re.M)),
    ("python", re.compile(r"^\s*(?:async\s+)?def \w+\(.*\)\s*(?:->.*)?:\s*$|^\s*class \w+.*:\s*$|"
                          r"^\s*(?:from [\w.]+ )?import [\w., ]+$|^>>> ", re.M)),
    ("typescript", re.compile(r"^\s*(?:export\s+)?(?:interface|type)\s+\w+.*[={]|"
                              r":\s*(?:string|number|boolean)\b", re.M)),
    ("javascript", re.compile(r"^\s*(?:export\s+)?(?:async\s+)?function\s*\*?\s*\w+\s*\(|"
                              r"^\s*(?:const|let|var)\s+\w+\s*=|=>\s*\{|\brequire\(['\"]", re.M)),
]


def language_for_path(path: str) -> str | None:
    """Language of a file by extension; ``None`` for anything we hold no grammar for."""
    if not isinstance(path, str):
        return None
    base = path.strip().rsplit("/", 1)[-1].rsplit("\\", 1)[-1]
    if "." not in base:
        return None
    return _EXTENSIONS.get(base.rsplit(".", 1)[-1].lower())


CODE_EXTENSIONS = frozenset(_EXTENSIONS) | _OTHER_CODE_EXTENSIONS


def is_code_path(path: str) -> bool:
    """Whether ``path`` names source code (with or without a grammar here)."""
    base = path.rsplit("/", 1)[-1]
    return "." in base and base.rsplit(".", 1)[-1].lower() in CODE_EXTENSIONS


def language_for_tag(tag: str) -> str | None:
    """Language of a markdown fence info string (```python, ```ts title=x.ts, ```foo.rs)."""
    word = tag.strip().split(maxsplit=1)[0].lower() if tag.strip() else ""
    word = word.lstrip("{.").rstrip("}")
    if word in _FENCE_TAGS:
        return _FENCE_TAGS[word]
    return language_for_path(word) if "." in word else None


def guess_language(code: str) -> str | None:
    """Best guess for an untagged code block; ``None`` when it does not look like code."""
    sample = code[:2000]
    for language, pattern in _SNIFFERS:
        if pattern.search(sample):
            return language
    return None
