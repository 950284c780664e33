"""The filter expressions the store builds: one user's rows, a kind, an id prefix, a list of
ids. Only keys we made (hex digests) and our own kind names reach an expression, each checked
here before it does; user ids never do.
"""

from __future__ import annotations

from collections.abc import Iterable


def user_scope(user_key: str) -> str:
    """The filter selecting one user's rows (a hex key: safe in an expression)."""
    return f"user_key = '{user_key}'"


def kind_name(name: str) -> str:
    """A kind name of ours, checked before it enters an expression."""
    if not name.replace("_", "").isalnum():
        raise ValueError(f"not a kind name: {name!r}")
    return name


def kinds_filter(kinds: Iterable[str]) -> str:
    """The filter selecting rows of these kinds (names of ours, checked)."""
    names = [kind_name(k) for k in kinds]
    listed = ", ".join(f"'{k}'" for k in names)
    return f"kind = {listed}" if len(names) == 1 else f"kind IN ({listed})"


def encoder_name(name: str) -> str:
    """An encoder's name (`Embedder.name`), checked before it enters an expression: letters,
    digits and ``/._@+:-``."""
    if not name or not name.translate(_NAME_PUNCTUATION).isalnum() or not name.isascii():
        raise ValueError(f"not an encoder name: {name!r}")
    return name


_NAME_PUNCTUATION = str.maketrans("", "", "/._@+:-")


def id_prefix(prefix: str) -> str:
    """An id prefix, checked before it enters a LIKE pattern: letters, digits and ``:-_./``.
    A ``_`` there matches any one character, so callers keep only the rows that start with
    the prefix itself."""
    if not prefix or not prefix.translate(_PREFIX_PUNCTUATION).isalnum():
        raise ValueError(f"not an id prefix: {prefix!r}")
    return prefix


_PREFIX_PUNCTUATION = str.maketrans("", "", ":-_./")


def id_list(ids: list[str]) -> str:
    """Ids quoted for an `IN (...)` filter. Ids are ours (a prefix, `_`, hex): anything else
    is dropped rather than allowed into an expression."""
    return ", ".join(f"'{i}'" for i in ids if i.replace("_", "").isalnum())
