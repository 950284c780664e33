"""A change's "Errors seen" are the messages its code raises, throws, logs or fails with, not
the marked-up spans of a changelog or documentation diff (reST's :class:`~io.StringIO`), type
expressions (``ErrorHandlerCallable[Exception]``) or a warning's text (codemem/git/facts.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from codemem.git.cards import commit_to_experience
from codemem.git.facts import change_facts, is_doc_path
from codemem.git.log import iter_changes
from parsers import parse_diff
from tests.history import build_history

CHANGELOG = """\
-   Fix type annotation for ``errorhandler`` decorator so that
    ``ErrorHandlerCallable[Exception]`` is accepted as an error handler. :issue:`4095`
-   ``send_file`` raises a ``TypeError`` when passed a text file object
    such as :class:`~io.StringIO` or :class:`~io.TextIOBase`, an error
    instead of an empty response. :issue:`4104`
-   Registering the same name twice warns "provide a unique name. This will become an error"
    in 2.1. Raise `an error` when the 'name is invalid here'. :issue:`4124`
"""


def _diff(path: str, added: str) -> str:
    lines = added.splitlines()
    body = "".join(f"+{line}\n" for line in lines)
    return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n{body}"


def _errors(path: str, added: str) -> list[str]:
    return change_facts(["change"], parse_diff(_diff(path, added))).error_strings


@pytest.mark.parametrize("path", ["CHANGES.rst", "docs/api.md", "HISTORY", "CHANGELOG.txt", "NEWS.adoc"])
def test_a_changelog_or_documentation_diff_gives_no_errors(path: str) -> None:
    assert is_doc_path(path)
    assert _errors(path, CHANGELOG) == []


@pytest.mark.parametrize(("path", "code", "message"), [
    ("flask/helpers.py", 'raise TypeError("send_file cannot read a file opened in text mode")',
     "send_file cannot read a file opened in text mode"),
    ("flask/app.py", 'raise ValueError(\n    "The view function did not return a valid response. The"\n'
     '    f" function either returned None or ended without a return"\n)',
     "The view function did not return a valid response. The function either returned None or ended without "
     "a return"),
    ("pkg/x_test.go", '\tt.Fatalf("lexer failed on heredoc")', "lexer failed on heredoc"),
    ("pkg/open.go", '\treturn nil, fmt.Errorf("could not open %s: %w", name, err)', "could not open %s: %w"),
    ("src/lexer.rs", '        panic!("unterminated heredoc marker");', "unterminated heredoc marker"),
    ("web/store.js", "    throw new Error(`missing key ${key} in store`);", "missing key ${key} in store"),
    ("src/log.ts", '  console.error("failed to flush the write queue");', "failed to flush the write queue"),
    ("app/cli.py", '    parser.add_argument("--n", help="invalid values are ignored")', "invalid values are ignored"),
    ("app/check.py", '    assert n > 0, "n must be a positive count"', "n must be a positive count"),
])
def test_the_messages_code_gives_are_errors(path: str, code: str, message: str) -> None:
    assert _errors(path, code) == [message]


@pytest.mark.parametrize("code", [
    'error_handler_spec: t.Dict[t.Type[Exception], "ErrorHandlerCallable[Exception]"] = {}',  # a type
    '    f" provide a unique name. This will become an error"',  # a piece of a string, no error raised
    '    name = "the error page template"',  # a string that names errors, in code that gives none
    '    # raise ValueError("a comment says what the code does")',
    '    """Raise an error when the name is not a string."""',
    '    raise KeyError("%s: %s" % (a, b))',  # a format, no words
])
def test_what_only_looks_like_an_error_is_not_one(code: str) -> None:
    assert _errors("flask/app.py", code) == []


def test_a_warning_is_matched_but_not_counted_as_an_error() -> None:
    code = ('warnings.warn(\n    f"The name \'{self_name}\' is already registered for"\n'
            '    f" {bp_desc} blueprint. Use \'name=\' to"\n    f" provide a unique name. This will become an error"\n'
            '    " in Flask 2.1.",\n    stacklevel=4,\n)\nraise ValueError("\'name\' may not contain a dot")')
    facts = change_facts(["change"], parse_diff(_diff("flask/blueprints.py", code)))
    assert facts.error_strings == ["'name' may not contain a dot"]
    assert facts.warning_strings == ["The name '{self_name}' is already registered for {bp_desc} blueprint. Use "
                                     "'name=' to provide a unique name. This will become an error in Flask 2.1."]


def test_a_merge_with_a_changelog_shows_only_its_codes_errors(tmp_path: Path) -> None:
    history = build_history(tmp_path / "flask")
    merge = next(r for r in iter_changes(str(history.path)) if r.sha == history.shas["merge"])
    experience = commit_to_experience(merge)
    assert experience.card.errors == ["'name' may not contain a dot '.' character.",
                                      "send_file cannot read a file opened in text mode"]
    section = experience.card.text.split("## Errors seen\n", 1)[1].split("\n\n", 1)[0]
    for junk in ("~io.StringIO", "~io.TextIOBase", "ErrorHandlerCallable[Exception]", "provide a unique name"):
        assert junk not in section
    # The warning's exact terms still find the change.
    assert {"self_name", "bp_desc", "existing_at"} <= set(experience.terms)
