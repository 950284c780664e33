"""Whether a memory holds anything closely related to a query at all.

The model's relative features (`features.py`) and its ranking (`learned.py`) compare candidates
with each other: they say which experience comes first and how far it stands out, and so a
memory always has a "best" experience, however unrelated the question. What tells a query
about this memory from one about something else is absolute, and simple: whether the memory
uses the query's words and code at all, and whether anything in it means nearly the same.

A memory has nothing closely related to a query when
- no code reference of the query (a path, a symbol, an error code) is found in it, nor a code
  location it shares with an experience,
- nothing in it comes semantically close: the nearest item's cosine stays below
  `CLOSE_COSINE`, the level at which the embedding model reads two texts as saying much the
  same thing (a paraphrase shares no word and is still found), and
- no item found holds more than half of the query's telling words (`fields.words`: no
  function or template words; cut to their first letters as `subjects.STEM` cuts them, so
  "ignoring" meets "ignore_conflicts"), each weighted by its rarity among the memory's
  experiences (`fields.idf_of`; a word the memory never uses weighs as the rarest): a
  related text shares most of what a question is about, while a question about something
  else meets, in a large history, at most a few common words ("lower", "back") in an item
  about something else, and a string of invented words meets none.

Each condition alone lets a query through, so a real question loses nothing to this test:
one code reference found, one close text, or one item that holds most of its words. The two
numbers are set by hand, not fitted: more than half of the words is a majority, and
`CLOSE_COSINE` lies between the similarity unrelated short questions reach with the nearest
of 1,378 changes of a real history (0.1 to 0.3 with the packaged MiniLM) and that of a
report put in other words than its fix's (0.45 and up, in the tests' small memories).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

from codemem.ranking.fields import FieldIndex, idf_of, words
from codemem.ranking.relevance import SessionSignals
from codemem.ranking.subjects import STEM

CLOSE_COSINE = 0.4
# A query is about an item that holds more than this share of its telling words.
WORDS_HELD = 0.5
# The items read to see which words they hold: the first of the fused ranking.
ITEMS_READ = 20


def nothing_related(signals: SessionSignals, query: str, texts: Callable[[], Iterable[str]],
                    cards: Callable[[], FieldIndex]) -> bool:
    """Whether the memory holds nothing closely related to `query`, whose retrievals gave
    `signals`; `texts()` reads the text of the first items they found and `cards()` the
    memory's card fields (store reads, made only when the other evidence is missing)."""
    code = bool(signals.ranks.get("refs")) or any(e > 0 or m > 0 for e, m in signals.location.values())
    if code or max(signals.cosine.values(), default=0.0) >= CLOSE_COSINE:
        return False
    wanted = _stems(query)
    if not wanted or not signals.ranks.get("lexical"):  # BM25 found none of its words anywhere
        return True
    experiences = [{w[:STEM] for w in card.every} for card in cards().cards.values()]
    weight = idf_of(experiences)
    rarest = math.log(1 + len(experiences))
    total = sum(weight.get(w, rarest) for w in wanted)
    held = max((sum(weight.get(w, rarest) for w in wanted & _stems(text)) for text in texts()), default=0.0)
    return held <= WORDS_HELD * total


def _stems(text: str) -> set[str]:
    return {w[:STEM] for w in words(text)}
