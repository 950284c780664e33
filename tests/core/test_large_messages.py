"""A 2 MB message of each shape agents' tool results take (a build log of ~30k lines, one
line of minified JSON, one line of a few repeated words, a diff, prose) is stored whole and found; how
fast is `eval.load.large_messages`'s to say (issue 42: each within 3 s)."""

from __future__ import annotations

import pytest

from codemem.contract.types import AddRequest, Message, SearchRequest
from codemem.memory import Memory
from codemem.store.schema import key_of
from eval.load.large_messages import SHAPES, marked


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_2_mb_message_is_stored_whole_and_found(memory: Memory, shape: str) -> None:
    mark = f"mark{shape.replace('_', '')}x"
    text = marked(SHAPES[shape](2_000_000), mark)
    result = memory.add(AddRequest(request_id="r1", user_id="u", session_id=shape,
                                   messages=[Message(role="assistant", content=text)]))
    assert result.stored == 1
    hits = memory.search(SearchRequest(user_id="u", query=mark, top_k=5))
    assert hits and hits[0].session_id == shape
    stored = memory.store.session_rows(key_of("u", shape), ["message"], columns=["text"])
    assert [r["text"] for r in stored] == [text]
