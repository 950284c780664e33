"""An agent's patch becomes one edit per hunk, read by the same diff parser as everything else."""

from codemem.experience.building.patches import PatchHunk, patch_hunks


def test_unified_patch_gives_each_hunk_its_sides_start_and_header() -> None:
    patch = (
        "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n"
        "@@ -1,3 +1,3 @@ def f():\n a\n-b\n+c\n d\n"
        "@@ -10,2 +10,3 @@\n e\n+f\n g\n"
    )
    assert list(patch_hunks(patch)) == [
        PatchHunk("x.py", "a\nb\nd", "a\nc\nd", 1, False, "def f():"),
        PatchHunk("x.py", "e\ng", "e\nf\ng", 10, False, ""),
    ]


def test_new_file_and_hand_written_hunk_without_line_numbers() -> None:
    created = list(patch_hunks("--- /dev/null\n+++ b/new.py\n@@ -0,0 +1,2 @@\n+a\n+b\n"))
    assert created == [PatchHunk("new.py", "", "a\nb", 1, True, "")]
    # No line numbers: the edit has no known place (not line 1).
    loose = list(patch_hunks("--- a/z.py\n+++ b/z.py\n@@\n-old\n+new\n context\n"))
    assert loose == [PatchHunk("z.py", "old\ncontext", "new\ncontext", None, False, "")]


def test_hunk_counts_bound_the_body_and_a_patch_without_a_file_gives_nothing() -> None:
    hunks = list(patch_hunks("--- a/w.py\n+++ b/w.py\n@@ -1,2 +1,2 @@\n-a\n+b\n c\nnot part of it\n"))
    assert [(h.old, h.new) for h in hunks] == [("a\nc", "b\nc")]
    assert list(patch_hunks("@@ -1 +1 @@\n-a\n+b\n")) == []
