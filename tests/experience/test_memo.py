"""A message's text is read once while it is remembered (`experience.memo.TextMemo`)."""

from __future__ import annotations

from codemem.experience.memo import TextMemo


def test_texts_are_read_once_within_the_bound_least_recent_out_first() -> None:
    reads: list[str] = []

    def read(text: str, tag: str) -> tuple[str, ...]:
        reads.append(text)
        return (text.upper(), tag)

    memo = TextMemo(read, max_chars=10, max_text=8)
    assert memo("abcd", "u") == ("ABCD", "u") and memo("abcd", "u") == ("ABCD", "u")
    assert memo("abcd", "a") == ("ABCD", "a")  # another tag is another reading
    assert reads == ["abcd", "abcd"] and memo.chars == 8
    memo("efgh")  # past 10 characters: the least recently used goes
    assert memo.chars == 8
    memo("abcd", "a")
    memo("abcd", "u")
    assert reads == ["abcd", "abcd", "efgh", "abcd"]
    memo("a very long text")  # longer than max_text: read, never held
    memo("a very long text")
    assert reads[-2:] == ["a very long text"] * 2 and memo.chars <= 10
