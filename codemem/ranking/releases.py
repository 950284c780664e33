"""Changes released since the version a report names: the likelier fixes among look-alikes.

A report says which version it was seen in ("Lombok version: 1.18.16", "tokio: 0.2.18",
"ripgrep 13.0.0", "since 2.8.2"); its fix landed after that release. Commit experiences
carry the release they came after (`codemem.git.releases`); this index holds it per
experience, and `reported` finds the report's version: the first one written after one of
the project's names, else the first that is one of its releases (so "rustc 1.41.0" beside
"tokio: 0.2.18" is read as tokio's 0.2.18). `Memory.signals` turns that into a feature of
the relevance model (`since_rr`: 1 for every candidate released since that version): what
tells the changes that can be the fix from older ones that only look like it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from codemem.git.versions import VERSION, parse_version
from codemem.ranking.card_indexes import CardIndex

# A version in running text: not part of a longer dotted number (an IP address, a build id).
_MENTION = re.compile(rf"(?<![\w.])v?({VERSION})(?![\w.]*\d)")
_BEFORE = 24  # characters before a version searched for a project name ("Lombok version: ")


@dataclass
class ReleaseIndex(CardIndex):
    """One user's commit experiences by the release each came after."""

    after: dict[str, tuple[int, ...]] = field(default_factory=dict)  # session_key -> version
    names: set[str] = field(default_factory=set)  # the projects' names
    versions: set[tuple[int, ...]] = field(default_factory=set)  # every release named by a card

    def put(self, cards: Iterable[Mapping[str, Any]]) -> None:
        """Add these card rows' `after_release` and `project` (JSON `metadata`); a card without
        them (an agent session, a change before the first release) is left out."""
        for card in cards:
            meta = json.loads(str(card.get("metadata") or "{}"))
            key = str(card["session_key"])
            self.after.pop(key, None)
            if (release := meta.get("after_release")) is None:
                continue
            version = parse_version(str(release))
            self.after[key] = version
            self.versions.add(version)
            self.names.update(str(n).lower() for n in meta.get("project") or ())

    def copy(self) -> ReleaseIndex:
        return ReleaseIndex(dict(self.after), set(self.names), set(self.versions))

    def reported(self, text: str) -> tuple[int, ...] | None:
        """The version `text` (a report) says it was seen in, or None."""
        if not self.after:
            return None
        named = re.compile("|".join(rf"\b{re.escape(n)}\b" for n in sorted(self.names)) or r"(?!)")
        known = None
        for m in _MENTION.finditer(text):
            version = parse_version(m[1])
            if named.search(text[max(0, m.start() - _BEFORE):m.start()].lower()):
                return version
            if known is None and version in self.versions:
                known = version
        return known

    def since(self, version: tuple[int, ...], keys: Iterable[str]) -> list[str]:
        """Those of `keys` that came after the release of `version` (or a later one)."""
        return [k for k in keys if k in self.after and self.after[k] >= version]
