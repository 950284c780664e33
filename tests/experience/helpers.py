"""Loading the rendering-family fixtures: each is a short session plus what its card must say."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from codemem.contract.types import Message

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "experience"
FAMILIES = sorted(p.stem for p in FIXTURES.glob("*.json"))


def load_family(name: str) -> tuple[list[Message], dict[str, Any]]:
    data = json.loads((FIXTURES / f"{name}.json").read_text())
    messages = [Message(role=m["role"], content=m["content"]) for m in data["messages"]]
    return messages, data["expect"]
