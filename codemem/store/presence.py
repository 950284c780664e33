"""Which users hold rows, remembered between Searches so that a Search of a memory that does
not exist yet costs no query.
"""

from __future__ import annotations


class UserPresence:
    """Which users hold rows, as `Store.holds_user` last found: a present user stays
    present until this process deletes rows (`clear`; another process's delete only costs
    its Searches their work), an absent one stays absent while no commit was counted since
    (`generation`; on object storage, with no shared count, never). Bounded: past
    `max_absent` absent entries they are dropped together."""

    def __init__(self, max_absent: int = 4096) -> None:
        self._present: set[str] = set()
        self._absent: dict[str, int] = {}  # user_key -> the commit count it was absent at
        self._max_absent = max_absent

    def get(self, user_key: str, generation: int | None) -> bool | None:
        if user_key in self._present:
            return True
        if generation is not None and self._absent.get(user_key) == generation:
            return False
        return None

    def put(self, user_key: str, present: bool, generation: int | None) -> None:
        if present:
            self._present.add(user_key)
            self._absent.pop(user_key, None)
        elif generation is not None:
            if len(self._absent) >= self._max_absent:
                self._absent.clear()  # one step, safe beside other threads' reads
            self._absent[user_key] = generation

    def clear(self) -> None:
        self._present.clear()
        self._absent.clear()
