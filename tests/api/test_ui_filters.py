"""The pages' pure helpers: a card read back into its sections, diffs highlighted (and
escaped), staleness notes picked from metadata."""

from __future__ import annotations

from api.ui.filters import (
    card_section,
    card_sections,
    evidence_of,
    highlight_diff,
    stale_notes,
    unfence,
)

CARD = """## Task
Fix <b>the</b> parser

## Outcome
Edited parser.py

## Final diff
```diff
--- a/parser.py
+++ b/parser.py
@@ -1 +1 @@
-x = "<script>alert(1)</script>"
+x = 1
```

Evidence from this session:

[step: edit, assistant, position 3]
Edit parser.py"""


def test_a_card_reads_back_into_its_sections_without_the_evidence() -> None:
    assert [title for title, _ in card_sections(CARD)] == ["Task", "Outcome", "Final diff"]
    assert card_section(CARD, "Task") == "Fix <b>the</b> parser"
    assert unfence(card_section(CARD, "Final diff")).startswith("--- a/parser.py")
    assert unfence(card_section(CARD, "Final diff")).endswith("+x = 1")
    assert evidence_of(CARD).startswith("[step: edit")
    assert card_sections("no headings at all") == [("", "no headings at all")]


def test_a_highlighted_diff_escapes_what_it_shows() -> None:
    html = str(highlight_diff(unfence(card_section(CARD, "Final diff"))))
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert 'class="gd"' in html and 'class="gi"' in html  # deleted and inserted lines told apart


def test_staleness_notes_are_the_metadata_keys_about_staleness() -> None:
    meta = {"outcome": "ok", "stale_files": ["a.py"], "staleness": "2 of 3 files changed since", "not_stale": None}
    assert stale_notes(meta) == [("stale_files", ["a.py"]), ("staleness", "2 of 3 files changed since")]
