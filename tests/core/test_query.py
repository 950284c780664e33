"""Long task texts become a short query that keeps what names the problem."""

from codemem.ranking.query import MAX_WORDS, parse_query

ISSUE = """
### Description
QuerySet.union() ignores ordering when combined with values_list() in
django/db/models/sql/compiler.py. Steps to reproduce:

```python
qs = Book.objects.values_list("title").union(Author.objects.values_list("name")).order_by("title")
```

Traceback (most recent call last):
  File "django/db/models/sql/compiler.py", line 431, in get_combinator_sql
    raise DatabaseError('ORDER BY term does not match any column in the result set.')
django.db.utils.DatabaseError: ORDER BY term does not match any column in the result set.

### Expected behavior
The union is ordered. ### Environment
Python 3.11, Django 4.2, PostgreSQL 15, Ubuntu 22.04
""" + " ".join(f"filler{i}" for i in range(300))


def test_boilerplate_is_dropped_and_code_words_come_first() -> None:
    q = parse_query(ISSUE)
    assert len(q.words) == MAX_WORDS
    for word in ("description", "steps", "reproduce", "expected", "behavior", "environment", "the", "python"):
        assert word not in q.words
    # Words of the code references outrank the 300 filler words that follow them.
    for word in ("compiler", "combinator", "databaseerror"):
        assert word in q.words
    assert not any(w.startswith("filler") for w in q.words[:20])


def test_references_are_kept_whole() -> None:
    q = parse_query(ISSUE)
    assert "django/db/models/sql/compiler.py" in q.refs
    assert "databaseerror" in q.refs or "django.db.utils.databaseerror" in q.refs


def test_a_short_query_keeps_its_words() -> None:
    q = parse_query("slow autocomplete in admin")
    assert set(q.words) == {"slow", "autocomplete", "admin"}
    assert q.bm25 == " ".join(q.words)


def test_exact_identifiers_are_kept_whole_with_their_digits() -> None:
    q = parse_query("AssertionError in module_377 after #1234 (see E501)")
    assert {"module_377", "#1234", "e501"} <= set(q.refs)
    # The number inside an identifier is a word to match; a bare version number is not.
    assert "377" in q.words
    assert "3" not in parse_query("broken since Python 3.11").words
