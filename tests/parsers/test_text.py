from __future__ import annotations

import pytest

from parsers import CodeRefs, Frame, extract_text_refs, merge_refs
from tests.parsers.conftest import read_fixture


def test_agent_message() -> None:
    refs = extract_text_refs(read_fixture("text/agent_message.md"))
    assert refs.files[:3] == ["django/db/models/query.py", "tests/queries/test_q.py",
                              "tests/runtests.py"]
    assert "django/db/models/sql/query.py" not in refs.files  # only inside a URL
    assert refs.test_ids == [
        "tests/queries/test_q.py::QTests::test_combine_and_empty",
        "queries.tests.Ticket20101Tests.test_ticket_20101",
        "queries.tests.ExcludeTests.test_exclude_plain",
    ]
    assert refs.commands == [
        "cd /repo",
        "python -m pytest tests/queries/test_q.py::QTests::test_combine_and_empty -q",
        "git diff --stat",
        "./tests/runtests.py queries --parallel 1",
        "make test",
    ]
    for symbol in ["QuerySet._filter_or_exclude", "negate",
                   "django.db.models.sql.Query.build_filter",
                   "_filter_or_exclude", "FilterHelper", "FilterHelper.normalise", "kwargs.items"]:
        assert symbol in refs.symbols
    assert refs.exceptions == [] and refs.frames == []


def test_requests_issue_from_swebench() -> None:
    refs = extract_text_refs(read_fixture("text/requests_issue.md"))
    assert refs.exceptions == ["AttributeError"]
    assert refs.error_messages == ["AttributeError: 'NoneType' object has no attribute 'readline'"]
    assert refs.commands == ["./bin/pip freeze", "./bin/python case.py"]
    assert refs.frames[0] == Frame("case.py", 6, "<module>", "python")
    assert refs.frames[-1].function == "read_chunked"
    assert {"requests.get", "response.iter_lines", "iter_lines"} <= set(refs.symbols)
    assert "Traceback" not in refs.symbols  # the traceback block is output, not code
    terms = refs.terms()
    assert {"requests/models.py", "requests.models", "models.py",
            "requests.packages.urllib3.response", "iter_lines", "attributeerror"} <= set(terms)


def test_flask_issue_code_block_symbols() -> None:
    refs = extract_text_refs(read_fixture("text/flask_issue.md"))
    assert refs.symbols[:4] == ["Flask", "Blueprint", "ui.errorhandler", "ui_error_handler"]
    assert {"api_index", "app.register_blueprint", "jsonify"} <= set(refs.symbols)
    assert "print" not in refs.symbols and "Exception" not in refs.symbols
    assert refs.exceptions == ["Exception"]
    assert refs.frames[-1] == Frame("app.py", 29, "api_index", "python")
    assert "flask.app" in refs.terms()  # module path of the site-packages frame file


def test_pytest_output() -> None:
    refs = extract_text_refs(read_fixture("text/pytest_output.txt"))
    assert refs.test_ids == ["tests/test_query.py::TestFilter::test_exclude_none",
                             "tests/test_query.py::test_slice[negative-index]"]
    assert refs.exceptions == ["AssertionError", "ValueError"]
    assert refs.error_messages == ["AssertionError: assert 2 == 3",
                                   "ValueError: Negative indexing is not supported."]
    assert refs.commands == ["python -m pytest tests/test_query.py -x -q"]
    assert refs.files == ["tests/test_query.py"]
    assert Frame("tests/test_query.py", 41, None, "python") in refs.frames
    terms = refs.terms()
    assert {"test_exclude_none", "testfilter.test_exclude_none", "test_slice",
            "tests.test_query"} <= set(terms)


@pytest.mark.parametrize(("text", "files"), [
    ("Edit `src/app/models.py` and ./setup.cfg then README.md.",
     ["src/app/models.py", "setup.cfg", "README.md"]),
    ("--- a/django/forms/forms.py\n+++ b/django/forms/forms.py", ["django/forms/forms.py"]),
    ("See https://github.com/org/repo/blob/main/lib/x.py and www.example.com/y.js", []),
    ("Windows: C:\\Users\\dev\\proj\\main.go failed", ["C:/Users/dev/proj/main.go"]),
    ("call response.json() then self.py stays; e.g. this is fine", []),
    ("CI lives in .github/workflows/ci.yml, build in Makefile and src/CMakeLists.txt",
     [".github/workflows/ci.yml", "Makefile", "src/CMakeLists.txt"]),
    ("at /home/u/app/server.go:12 and lib/util.rs:3:9", ["/home/u/app/server.go", "lib/util.rs"]),
])
def test_file_paths(text: str, files: list[str]) -> None:
    assert extract_text_refs(text).files == files


@pytest.mark.parametrize(("text", "commands"), [
    ("$ pytest -x tests/test_a.py\n1 passed\n", ["pytest -x tests/test_a.py"]),
    ("dev@box:~/repo$ git status\n", ["git status"]),
    ("npm test\ngo test ./...\ncargo test --lib\ntox -e py311\n./manage.py test auth\n",
     ["npm test", "go test ./...", "cargo test --lib", "tox -e py311", "./manage.py test auth"]),
    ("Make sure the tests pass.\nGit is great.\ngo to the docs\nmake test\n", ["make test"]),
    ("Run `python -m pytest tests/` now.", ["python -m pytest tests/"]),
    ('{"command": "cd /repo && pytest -q tests/test_x.py", "description": "run"}',
     ["cd /repo && pytest -q tests/test_x.py"]),
    ("```sh\nexport X=1\npip install -e . \\\n  --no-deps\n# comment\n```\n",
     ["export X=1", "pip install -e . --no-deps"]),
    ("```console\n$ make lint\nruff check .\nAll checks passed!\n```\n", ["make lint"]),
])
def test_commands(text: str, commands: list[str]) -> None:
    assert extract_text_refs(text).commands == commands


def test_backticks_and_dotted_names() -> None:
    refs = extract_text_refs(
        "The bug is in `QuerySet.filter()` and ``send_file``; `Foo::bar` and `Widget#render` too. "
        "Also django.db.models.Q and e.g. foo, see example.com. `True` and `x` are not symbols.")
    assert refs.symbols == ["QuerySet.filter", "send_file", "Foo.bar", "Widget.render",
                            "django.db.models.Q"]


def test_fenced_blocks_by_tag_and_by_sniffing() -> None:
    text = ("```go\nfunc (s *Server) Stop() { s.ln.Close() }\n```\n"
            "```\nfn evict(&mut self) { self.order.clear(); }\nimpl Cache {}\n```\n"
            "```ruby\ndef greet; end\n```\n"
            "```\nAll 3 tests passed\n```\n")
    refs = extract_text_refs(text)
    assert refs.symbols == ["Server.Stop", "s.ln.Close", "evict", "order.clear"]


def test_python_repl_lines_are_code() -> None:
    refs = extract_text_refs(">>> from django.db.models import Q\n>>> Q(x__in={}.keys())\n"
                             "<Q: (AND: ('x__in', dict_keys([])))>\n")
    assert "Q" in refs.symbols and "django.db.models" in refs.symbols


def test_diff_in_text_contributes_files_and_symbols() -> None:
    refs = extract_text_refs("Patch:\n\n" + read_fixture("diffs/java.diff"))
    assert refs.files[0] == "src/main/java/com/example/shop/OrderService.java"
    assert {"placeOrder", "Validator.validate"} <= set(refs.symbols)


def test_merge_refs_is_an_order_preserving_union() -> None:
    a = CodeRefs(files=["a.py", "b.py"], symbols=["f"], frames=[Frame("a.py", 1, "f", "python")])
    b = CodeRefs(files=["b.py", "c.py"], symbols=["g", "f"], exceptions=["KeyError"],
                 frames=[Frame("a.py", 1, "f", "python"), Frame("c.py", 2, None, "python")])
    merged = merge_refs([a, b, CodeRefs()])
    assert merged.files == ["a.py", "b.py", "c.py"]
    assert merged.symbols == ["f", "g"]
    assert merged.exceptions == ["KeyError"]
    assert merged.frames == [Frame("a.py", 1, "f", "python"), Frame("c.py", 2, None, "python")]
    assert merge_refs([]) == CodeRefs()


def test_code_refs_dedupe_and_emptiness() -> None:
    refs = CodeRefs(files=["x.py", "x.py", ""], commands=["ls", "ls"])
    assert refs.files == ["x.py"] and refs.commands == ["ls"]
    assert not refs.is_empty()
    assert CodeRefs().is_empty()
    assert extract_text_refs("Thanks, that looks good to me!").is_empty()


def test_terms_normalise_paths_symbols_and_tests() -> None:
    refs = CodeRefs(
        files=["./src/flask/app.py", "/venv/lib/python3.11/site-packages/django/db/models/query.py",
               "pkg/__init__.py"],
        symbols=["django.db.models.QuerySet.filter", "Cache::get"],
        exceptions=["django.core.exceptions.FieldError"],
        test_ids=["tests/test_x.py::TestA::test_y[1-2]"],
    )
    assert refs.terms() == [
        "src/flask/app.py", "app.py", "flask.app",
        "/venv/lib/python3.11/site-packages/django/db/models/query.py",
        "django/db/models/query.py", "query.py", "django.db.models.query",
        "pkg/__init__.py", "pkg",
        "django.db.models.queryset.filter", "queryset.filter", "filter",
        "cache.get", "get",
        "django.core.exceptions.fielderror", "exceptions.fielderror", "fielderror",
        "tests/test_x.py::testa::test_y[1-2]", "tests/test_x.py", "test_x.py", "tests.test_x",
        "testa.test_y", "test_y",
    ]
