"""Which experience an id names, when it is given shortened as people are shown it.

People are shown ids cut short (`codemem search` prints a commit's SHA to 12 characters and
a `git show` hint), and hand them back to tools that take an id (`get_experience`, the
/ui pages). A unique prefix of `MIN_PREFIX` or more characters names an experience: of its
session id (`git:d49cfb35d4bb`), of a commit's SHA alone (`d49cfb35d4bb`: a commit's
session id is `git:<sha>`), or of an item id (`c_9f2e1a7`). A prefix that several
experiences share is refused, naming them. Whole ids are looked up by the callers first,
by key; only an id that names nothing whole is looked up here.
"""

from __future__ import annotations

import re

from codemem.errors import InvalidInput, NotFound
from codemem.store.lance import Store
from codemem.store.schema import key_of

MIN_PREFIX = 7  # characters of the id itself, after a scheme (`git:`) or an item kind (`c_`)
NAMED = 5  # candidates an ambiguous prefix's error names
_SCHEME = re.compile(r"^(?:[a-z]+:|[a-z]{1,2}_)")
_HEX = re.compile(r"^[0-9a-f]+$")
_ITEM = re.compile(r"^[a-z]{1,2}_[0-9a-f]+$")  # c_ cards, st_ steps, m_ messages


def session_of(store: Store, user_id: str, ref: str) -> str:
    """The session_id of the one experience of `user_id` whose id `ref` begins.

    `NotFound` when none does (or `ref` is too short to name one), `InvalidInput` naming
    the candidates when several do. Each kind of id is one prefix query scoped to the user:
    the session ids of its cards, and the ids of its items when `ref` is shaped like one."""
    user_key = key_of(user_id)
    if len(_SCHEME.sub("", ref, count=1)) < MIN_PREFIX:
        raise NotFound(f"no experience {ref!r} in the memory of {user_id!r} (a shortened id needs "
                       f"at least {MIN_PREFIX} characters)")
    found: dict[str, str] = {}  # session_id -> the id `ref` begins
    try:
        found.update((sid, sid) for sid in store.session_ids(user_key, ref))
        if _HEX.match(ref):  # a commit's SHA alone
            found.update((sid, sid) for sid in store.session_ids(user_key, "git:" + ref))
        if _ITEM.match(ref):
            for row in store.ids_starting(user_key, ref, limit=NAMED * 20):
                if row["user_id"] == user_id:
                    found.setdefault(str(row["session_id"]), str(row["id"]))
    except ValueError:  # characters no id of ours holds: it begins none
        pass
    if not found:
        raise NotFound(f"no experience {ref!r} in the memory of {user_id!r}")
    if len(found) > 1:
        named = sorted(found.values())
        more = f" and {len(named) - NAMED} more" if len(named) > NAMED else ""
        raise InvalidInput(f"id {ref!r} is ambiguous in the memory of {user_id!r}: it begins the ids of "
                           f"{len(named)} experiences ({', '.join(named[:NAMED])}{more}); give more of it")
    return next(iter(found))
