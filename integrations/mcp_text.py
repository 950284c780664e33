"""Search answers and experiences as text a model reads in a tool result.

Each item is one tagged block whose attributes carry what a model needs to act on it (the id
to pass to `get_experience`, the session, the rank). A search answer is compact
(`codemem.compact`): each experience's brief card and the evidence that matched best, then
what was left out and how to read it; an experience opened by id comes whole, as stored.
"""

from __future__ import annotations

from html import escape

from codemem import times
from codemem.compact import MAX_NAMED, Brief, CompactAnswer, card_and_evidence
from codemem.contract.types import Hit, TextPart
from codemem.experience.building.render import short_card

NOTHING = "Nothing closely related in the memory of {user_id}: nothing there came close to this query (or the memory is empty)."


def search_answer(answer: CompactAnswer, user_id: str, max_tokens: int) -> str:
    """A compact answer (`codemem.compact`): what it holds, each experience brief, then what
    was left out and how to read it."""
    if not answer.shown:
        return NOTHING.format(user_id=user_id)
    shown = len(answer.shown)
    head = (f"{shown} of {answer.found}{'+' if answer.more else ''} past experiences found in the memory "
            f"of {user_id}, best first, each in brief: its card (task, outcome, files and symbols edited, errors, "
            "tests) and the evidence that matched best, trimmed. get_experience(id) opens one in full.")
    if answer.quiet:
        head += " None stands out as the one this task is about: these are the nearest."
    parts = [head, *(brief_block(item, rank) for rank, item in enumerate(answer.shown, 1))]
    if answer.left_out:
        named = "\n".join(f"- {h.id}: {_headline(h)}" for h in answer.left_out[:MAX_NAMED])
        more = " (and more may match: raise top_k)" if answer.more else ""
        parts.append(f"Left out, to stay within max_tokens={max_tokens:,}: {_count(len(answer.left_out), 'more experience')}"
                     f"{more}:\n{named}\nOpen one with get_experience(id), or search again with a larger max_tokens "
                     "to read more of them at once.")
    elif answer.more:
        parts.append("More may match: search again with a larger top_k.")
    return "\n\n".join(parts)


def brief_block(item: Brief, rank: int) -> str:
    """One experience of a compact answer: its brief card, then the evidence that matched."""
    body = item.card.strip()
    if item.evidence:
        body += f"\n\nMatched evidence ({item.label or 'item'}):\n{item.evidence.strip()}"
    return _block(item.hit, rank=rank, body=body)


def _headline(hit: Hit) -> str:
    return short_card(card_and_evidence(hit)[0], 120).split("\n", 1)[0]


def experience_answer(hits: list[Hit], user_id: str) -> str:
    """`hits` as Memory.experience returns them: the card first, then its evidence."""
    card, evidence = hits[0], hits[1:]
    head = (
        f"Experience {card.session_id} from the memory of {user_id}: its card, then "
        f"{_count(len(evidence), 'evidence item')} in session order."
    )
    return "\n\n".join([head, *(_block(hit) for hit in hits)])


def _block(hit: Hit, rank: int | None = None, body: str | None = None) -> str:
    kind = str(hit.metadata.get("kind", "item"))
    tag = "experience" if kind == "card" else "evidence"
    attrs: dict[str, object] = {"rank": rank, "id": hit.id, "session": hit.session_id}
    if tag == "evidence":
        step = hit.metadata.get("step")
        attrs["kind"] = f"step: {step}" if kind == "step" and step else kind
        attrs["role"] = hit.metadata.get("role")
        attrs["position"] = hit.metadata.get("position")
    if rank is not None:
        attrs["score"] = f"{hit.score:.4f}"
    stamp = hit.metadata.get("timestamp")
    if times.representable(stamp):  # the experience's own time: the commit's, the session's
        attrs["at"] = times.iso(stamp)[:19] + "Z"
    attrs["stored"] = hit.metadata.get("stored_at") or hit.created_at
    if omitted := hit.metadata.get("omitted_chars"):
        attrs["omitted_chars"] = omitted
    opening = " ".join([tag, *(f'{k}="{escape(str(v))}"' for k, v in attrs.items() if v is not None)])
    text = content_text(hit).strip() if body is None else body
    return f"<{opening}>\n{_matched(hit)}{text}\n</{tag}>"


def _matched(hit: Hit) -> str:
    """The commits inside a merge that the query matched (`codemem/ranking/merged.py`), first:
    a merge's own subject rarely says why it was found."""
    value = hit.metadata.get("matched_commits")
    matched = [m for m in value if isinstance(m, dict)] if isinstance(value, list) else []
    if not matched:
        return ""
    listed = "\n".join(f"- {str(m.get('sha', ''))[:7]} {m.get('subject', '')}" for m in matched)
    return f"Commits of this merge that match the query:\n{listed}\n\n"


def content_text(hit: Hit) -> str:
    if isinstance(hit.content, str):
        return hit.content
    return "\n".join(p.text if isinstance(p, TextPart) else "[image]" for p in hit.content)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
