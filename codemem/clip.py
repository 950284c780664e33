"""Text cut to a character budget: the one way the core shortens text for a reader.

Two shapes, because two kinds of text are cut. A card field, a command or a diff reads from
its start, so `clip` keeps the head and says where it stopped. A tool output tends to put its
error or result at the end, so `clip_middle` keeps the head and the tail and says how much
it left out between them.
"""

from __future__ import annotations


def clip(text: str, limit: int, marker: str = "...", break_at: str = "") -> str:
    """`text` in at most `limit` characters: whole when it fits, else its head and `marker`.

    With `break_at` (" " for words, "\\n" for lines) the head ends before the last
    `break_at` that fits, so no word or line is cut in two, unless that would keep half of
    `limit` or less; then the head is cut mid-word where the room ends."""
    if len(text) <= limit:
        return text
    room = max(limit - len(marker), 0)
    cut = text.rfind(break_at, 0, room) if break_at else -1
    return text[: cut if cut > limit // 2 else room] + marker


def clip_middle(text: str, max_chars: int) -> tuple[str, int]:
    """`text` cut to about `max_chars` (0: no limit), its head then its tail, with a line
    saying how many characters were left out between them; and that number."""
    if max_chars <= 0 or len(text) <= max_chars:
        return text, 0
    head = max_chars * 2 // 3
    tail = max_chars - head
    omitted = len(text) - head - tail
    return f"{text[:head]}\n[... {omitted} characters omitted ...]\n{text[-tail:]}", omitted
