"""Search answers and experiences as text a model reads in a tool result.

Each item is one tagged block whose attributes carry what a model needs to act on it (the id
to pass to `get_experience`, the session, the rank), and whose body is the item's text as
stored: cards are already written for a reader, so nothing is wrapped or cut here (the
answer's size is bounded where it is built, by the token budget).
"""

from __future__ import annotations

from html import escape

from codemem import times
from codemem.contract.types import Hit, TextPart


def search_answer(hits: list[Hit], user_id: str) -> str:
    if not hits:
        return f"Nothing in the memory of {user_id} matches this query."
    head = (
        f"{_count(len(hits), 'item')} from the memory of {user_id}, best first. Each <experience> is one past "
        "session: its card (task, outcome, files and symbols edited, tests, errors), then its "
        "strongest evidence. get_experience(id) opens one in full."
    )
    return "\n\n".join([head, *(_block(hit, rank=rank) for rank, hit in enumerate(hits, 1))])


def experience_answer(hits: list[Hit], user_id: str) -> str:
    """`hits` as Memory.experience returns them: the card first, then its evidence."""
    card, evidence = hits[0], hits[1:]
    head = (
        f"Experience {card.session_id} from the memory of {user_id}: its card, then "
        f"{_count(len(evidence), 'evidence item')} in session order."
    )
    return "\n\n".join([head, *(_block(hit) for hit in hits)])


def _block(hit: Hit, rank: int | None = None) -> str:
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
    return f"<{opening}>\n{_matched(hit)}{content_text(hit).strip()}\n</{tag}>"


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
