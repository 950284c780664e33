from __future__ import annotations

import pytest

from parsers import language_for_path
from parsers.languages import GRAMMARS, guess_language, is_code_path, language_for_tag
from parsers.treesitter import get_language, get_query


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("django/db/models/query.py", "python"),
        ("stubs/typing.pyi", "python"),
        ("lib/router/index.js", "javascript"),
        ("src/App.jsx", "javascript"),
        ("esm/entry.mjs", "javascript"),
        ("src/store.ts", "typescript"),
        ("src/components/Counter.tsx", "tsx"),
        ("src/main/java/com/example/OrderService.java", "java"),
        ("server/server.go", "go"),
        ("src/cache.rs", "rust"),
        ("src/buffer.c", "c"),
        ("include/buffer.h", "c"),
        ("src/geo/shapes.cpp", "cpp"),
        ("include/geo/shapes.hpp", "cpp"),
        ("SRC/MAIN.PY", "python"),
        ("C:\\work\\app\\main.go", "go"),
        ("README.md", None),
        ("Makefile", None),
        ("app/models/user.rb", None),
        ("", None),
        ("noextension", None),
    ],
)
def test_language_for_path(path: str, language: str | None) -> None:
    assert language_for_path(path) == language


def test_language_for_path_rejects_non_strings() -> None:
    assert language_for_path(None) is None  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("tag", "language"),
    [("python", "python"), ("py", "python"), ("ts", "typescript"), ("tsx", "tsx"),
     ("golang", "go"), ("rs", "rust"), ("c++", "cpp"), ("java title=Foo.java", "java"),
     ("src/cache.rs", "rust"), ("ruby", None), ("", None), ("text", None)],
)
def test_language_for_tag(tag: str, language: str | None) -> None:
    assert language_for_tag(tag) == language


@pytest.mark.parametrize(
    ("code", "language"),
    [
        ("def foo(x):\n    return x\n", "python"),
        (">>> from django.db.models import Q\n>>> Q()\n", "python"),
        ("package main\n\nfunc main() {}\n", "go"),
        ("fn main() {\n    let mut v = Vec::new();\n}\n", "rust"),
        ("public class Foo {\n    public void run() {}\n}\n", "java"),
        ("#include <vector>\nstd::vector<int> v;\n", "cpp"),
        ("#include <stdio.h>\nint main(void) { return 0; }\n", "c"),
        ("interface Props { a: string }\n", "typescript"),
        ("const add = (a, b) => {\n  return a + b;\n};\n", "javascript"),
        ("Everything worked fine, 3 tests passed.\n", None),
    ],
)
def test_guess_language(code: str, language: str | None) -> None:
    assert guess_language(code) == language


@pytest.mark.parametrize("language", sorted(GRAMMARS))
def test_every_language_has_a_grammar_and_a_query_file(language: str) -> None:
    assert get_language(language) is not None
    assert get_query(language) is not None


def test_unknown_language_has_no_grammar_or_query() -> None:
    assert get_language("cobol") is None
    assert get_query("cobol") is None


@pytest.mark.parametrize(
    ("path", "code"),
    [("a/b.py", True), ("app/models/user.rb", True), ("docs/index.rst", False),
     ("CHANGES.md", False), ("src/lib.rs", True)],
)
def test_is_code_path(path: str, code: bool) -> None:
    assert is_code_path(path) is code


@pytest.mark.parametrize("language", ["javascript", "typescript", "tsx"])
def test_the_shared_ecma_patterns_are_included(language: str) -> None:
    """javascript and typescript include `ecma-shared.scm`: a named arrow function and a
    call are found in both."""
    from parsers import extract_symbols

    found = {(s.name, s.kind) for s in extract_symbols("const add = (a, b) => a + b;\nadd(1, 2);\n", language)}
    assert ("add", "function") in found and ("add", "call") in found
