"""Every training command the docs show is one the code takes: each `python -m train...` line
of the READMEs and the Makefile names a module, and every option on it is one that module's
`--help` lists (a Reproduce section that drifted from the code is how issue 47 found them)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ("README.md", "Makefile", "train/README.md", "train/ranker/README.md", "train/past_fixes/README.md",
        "train/decisions/README.md")


def _commands() -> list[tuple[str, str, str]]:
    """(doc, module, the rest of its command line), continuation lines joined."""
    out = []
    for doc in DOCS:
        text = (ROOT / doc).read_text().replace("\\\n", " ")
        for line in text.splitlines():
            for m in re.finditer(r"python -m (train(?:\.\w+)*)(.*)", line):
                out.append((doc, m.group(1), m.group(2)))
    return out


COMMANDS = _commands()


def test_the_docs_show_the_training_commands() -> None:
    assert {"train", "train.ranker.train", "train.past_fixes.build_data"} <= {m for _, m, _ in COMMANDS}


@pytest.mark.parametrize(("doc", "module", "rest"), COMMANDS, ids=[f"{d}:{m}" for d, m, _ in COMMANDS])
def test_every_training_command_in_the_docs_is_one_the_module_takes(doc: str, module: str, rest: str,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    entry = importlib.import_module(f"{module}.__main__" if module == "train" else module)
    with pytest.raises(SystemExit) as stop:
        entry.main(["--help"])
    assert stop.value.code == 0
    usage = capsys.readouterr().out
    for option in re.findall(r"(?<![\w-])--[a-z][\w-]*", rest.split("#")[0]):
        assert option in usage, f"{doc}: python -m {module} takes no {option}"
