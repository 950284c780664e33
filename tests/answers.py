"""Read the raw messages back out of a Search answer (test helper).

An answer lists each experience as one item, its card with the strongest evidence
inlined under "Evidence from this session:", then further evidence as items of their own;
a memory of dialogue is answered turn by turn, each turn's text after its date."""

import re

EVIDENCE = "Evidence from this session:"
_DATED = re.compile(r"^\[\d{4}-\d{2}-\d{2}\] ")


def message_texts(hits: list[dict]) -> list[str]:
    """The raw messages a result carries, in reading order (test messages are one paragraph)."""
    out: list[str] = []
    for h in hits:
        kind = h["metadata"]["kind"]
        if kind == "message":
            out.append(h["content"])
        elif kind == "turn":
            text = h["content"]
            if isinstance(text, str):
                text = _DATED.sub("", text, count=1)
                if "dates" in h["metadata"] or "superseded_by" in h["metadata"]:  # notes follow in brackets
                    text = text.rsplit(" (", 1)[0]
            out.append(text)
        elif kind == "card" and EVIDENCE in h["content"]:
            for block in h["content"].split(EVIDENCE, 1)[1].split("\n\n[")[1:]:
                label, _, text = block.partition("\n")
                if label.startswith("message"):
                    out.append(text)
    return out
