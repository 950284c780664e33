"""Opening/closing tag pairs found in linear time.

A lazy ``<tag>(.*?)</tag>`` regex rescans to the end of the text for every opener that is
never closed, which is quadratic on garbage; here every opener and closer is found once and
paired in order, so any text costs one pass.
"""

from __future__ import annotations

import re
from bisect import bisect_left

import msgspec


class Block(msgspec.Struct, frozen=True):
    start: int  # where the opener starts
    body_start: int  # just after the opener
    body_end: int  # where the closer starts (or where the block was cut off)
    end: int  # just after the closer
    groups: tuple[str | None, ...] = ()  # the opener's regex groups


MAX_BLOCKS = 1000  # per pattern and text: a message is not a thousand tool calls


def paired_blocks(text: str, opener: re.Pattern[str], closer: str) -> list[Block]:
    """Each opener with the first closer after it; an unclosed opener runs to the next
    opener (or the end). Openers inside a block already taken are skipped; the last block
    kept runs to the end when more than ``MAX_BLOCKS`` would follow."""
    closers = [m.start() for m in re.finditer(re.escape(closer), text)] if closer else []
    openers = list(opener.finditer(text))
    blocks: list[Block] = []
    cursor = 0
    for i, m in enumerate(openers):
        if m.start() < cursor:
            continue
        at = bisect_left(closers, m.end())
        next_open = openers[i + 1].start() if i + 1 < len(openers) else len(text)
        if at < len(closers):
            body_end, end = closers[at], closers[at] + len(closer)
        else:
            body_end = end = next_open
        if len(blocks) == MAX_BLOCKS - 1:
            body_end = end = len(text)
        blocks.append(Block(m.start(), m.end(), body_end, end, m.groups()))
        cursor = end
        if len(blocks) >= MAX_BLOCKS:
            break
    return blocks
