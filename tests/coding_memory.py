"""A memory of a dozen coding experiences across projects (test helper): enough candidates for
the relevance model's nothing-related decision to judge (`codemem/ranking/absence.py` judges
only Searches with as many candidates as it learned from; a memory of two or three
experiences is answered quiet instead)."""

from __future__ import annotations

from codemem.contract.types import AddRequest, Message
from codemem.memory import Memory

TASKS = [
    ("QuerySet.bulk_create() crashes with a TypeError when ignore_conflicts=True",
     "Fixed _batched_insert in django/db/models/query.py; tests/bulk_create pass"),
    ("The paginator raises ZeroDivisionError when per_page is 0 in django/core/paginator.py",
     "Validated per_page in Paginator.__init__; added a case to tests/pagination/tests.py"),
    ("Migrations autodetector crashes on a renamed ForeignKey to a swapped model",
     "Handled the swapped model in django/db/migrations/autodetector.py generate_renamed_fields"),
    ("FileField storage callable is evaluated at deconstruct time",
     "Kept the callable in FileField.deconstruct in django/db/models/fields/files.py"),
    ("Admin changelist search crashes on a related lookup with __exact",
     "Fixed lookup_spawns_duplicates in django/contrib/admin/utils.py"),
    ("The CSV export of reports drops the last row when the file ends without a newline",
     "Flushed the writer in reports/export.py; tests/test_export.py covers it"),
    ("Login form accepts an email with trailing spaces and fails later", "Stripped the email in accounts/forms.py clean_email"),
    ("The cache middleware sets Vary: Cookie on static files", "Skipped static paths in middleware/cache.py process_response"),
    ("Sphinx autodoc shows the wrong signature for a decorated method",
     "Unwrapped functools.wraps in sphinx/ext/autodoc/__init__.py"),
    ("pytest's caplog fixture loses records after a logger level change",
     "Restored the handler level in src/_pytest/logging.py"),
    ("matplotlib colorbar ticks overlap when the norm is LogNorm",
     "Used LogLocator in lib/matplotlib/colorbar.py _get_ticker_locator_formatter"),
    ("sympy simplify hangs on a nested Piecewise with relational conditions",
     "Added a depth guard to sympy/functions/elementary/piecewise.py piecewise_simplify"),
]
# Words that occur nowhere, and a question about something no coding memory holds.
INVENTED = "Plombrix quervane stollicut yarbenthal"
OFF_TOPIC = "Which wildflowers bloom first in an alpine meadow after the snow melts?"
# A question about one of them in other words, and the session that answers it.
RELATED = ("paginator crashes when per_page is zero", "s1")


def fill(memory: Memory, user: str = "dev") -> None:
    for i, (task, done) in enumerate(TASKS):
        memory.add(AddRequest(f"{user}-r{i}", user, f"s{i}", [Message("user", task), Message("assistant", done)]))
