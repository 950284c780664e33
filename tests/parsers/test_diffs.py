from __future__ import annotations

import pytest

from parsers import DiffFile, parse_diff
from tests.parsers.conftest import read_fixture

# (diff fixture, new-side fixture, path in the diff,
#  hunk symbols resolved from the hunk alone, hunk symbols resolved with the new source)
LANGUAGE_DIFFS = [
    ("python", "python/query.py", "django/db/models/query.py",
     [["db"], ["exclude"], ["_combine._merge"], ["prefetch_related_objects"]],
     [["QuerySet.db"], ["QuerySet.exclude"], ["QuerySet._combine._merge"],
      ["prefetch_related_objects"]]),
    ("javascript", "javascript/router.js", "lib/router/index.js",
     [["Router.next"], ["mergeParams"]],
     [["Router.handle.next"], ["mergeParams"]]),
    ("typescript", "typescript/store.ts", "src/store.ts",
     [["Store.dispatch"], ["Store.subscribe"]],
     [["Store.dispatch"], ["Store.subscribe"]]),
    ("java", "java/OrderService.java", "src/main/java/com/example/shop/OrderService.java",
     [["placeOrder"], ["Validator.validate"]],
     [["OrderService.placeOrder"], ["OrderService.Validator.validate"]]),
    ("go", "go/server.go", "server/server.go",
     [["Server.ListenAndServe"], ["Server.serve", "Server.Close"]],
     [["Server.ListenAndServe"], ["Server.serve", "Server.Close"]]),
    ("rust", "rust/cache.rs", "src/cache.rs",
     [["insert"], ["Event.fmt"], ["evicts_oldest"]],
     [["Cache.insert"], ["Event.fmt"], ["tests.evicts_oldest"]]),
    ("c", "c/buffer.c", "src/buffer.c",
     [["grow"], ["buffer_detach"]],
     [["grow"], ["buffer_detach"]]),
    ("cpp", "cpp/shapes.cpp", "src/geo/shapes.cpp",
     [["Circle.area"], ["Canvas.add"]],
     [["geo.Circle.area"], ["geo.Canvas.add"]]),
]
IDS = [c[0] for c in LANGUAGE_DIFFS]


@pytest.mark.parametrize(("lang", "source", "path", "from_hunks", "_"), LANGUAGE_DIFFS, ids=IDS)
def test_diff_symbols_from_the_hunks_alone(lang: str, source: str, path: str,
                                           from_hunks: list[list[str]], _: object) -> None:
    [f] = parse_diff(read_fixture(f"diffs/{lang}.diff"))
    assert f.path == path
    assert f.language == lang
    assert [h.symbols for h in f.hunks] == from_hunks


@pytest.mark.parametrize(("lang", "source", "path", "_", "with_source"), LANGUAGE_DIFFS, ids=IDS)
def test_diff_symbols_with_the_new_source(lang: str, source: str, path: str, _: object,
                                          with_source: list[list[str]]) -> None:
    new = read_fixture(f"languages/{source}")
    [f] = parse_diff(read_fixture(f"diffs/{lang}.diff"), {path: new})
    assert [h.symbols for h in f.hunks] == with_source
    assert f.symbols == [s for h in with_source for s in dict.fromkeys(h)]


def test_python_diff_counts_and_hunk_fields() -> None:
    [f] = parse_diff(read_fixture("diffs/python.diff"))
    assert (f.added, f.removed, f.is_new, f.is_deleted, f.old_path) == (4, 6, False, False, None)
    first = f.hunks[0]
    assert (first.old_start, first.old_len, first.new_start, first.new_len) == (29, 7, 29, 7)
    assert first.header == "def db(self):"
    assert first.removed == ["        return router.db_for_read(self.model, **self._hints)"]
    assert first.added == [
        "        return self._db or router.db_for_read(self.model, **self._hints)"]
    assert f.hunks[1].removed[0] == "    def exclude(self, *args, **kwargs):"


SWEBENCH = [
    # real SWE-bench patches: (fixture, {path: symbols}) resolved from the hunks alone
    ("swebench_django_32450.diff", {"django/db/models/query_utils.py": ["_combine"]}),
    ("swebench_flask_4039.diff", {"CHANGES.rst": [],
                                  "src/flask/blueprints.py": ["__init__", "add_url_rule"]}),
    ("swebench_requests_3481.diff", {"requests/models.py": ["__init__", "iter_content", "generate"],
                                     "requests/utils.py": ["stream_decode_response_unicode"]}),
]


@pytest.mark.parametrize(("fixture", "expected"), SWEBENCH, ids=[c[0] for c in SWEBENCH])
def test_swebench_patches(fixture: str, expected: dict[str, list[str]]) -> None:
    files = parse_diff(read_fixture(f"diffs/{fixture}"))
    assert {f.path: f.symbols for f in files} == expected
    assert all(f.language == ("python" if f.path.endswith(".py") else None) for f in files)


def test_swebench_hunk_reads_function_from_the_fragment_not_the_header() -> None:
    # header names the function above; the hunk's own context shows the one changed
    files = {f.path: f for f in parse_diff(read_fixture("diffs/swebench_requests_3481.diff"))}
    hunk = files["requests/utils.py"].hunks[0]
    assert hunk.header == "def get_encoding_from_headers(headers):"
    assert hunk.symbols == ["stream_decode_response_unicode"]
    assert (files["requests/utils.py"].added, files["requests/utils.py"].removed) == (0, 5)


EDGE = """Here is the change I made:

```diff
--- a/pkg/util.py
+++ b/pkg/util.py
@@ -1,3 +1,4 @@
 def helper(x):
-    return x
+    y = x * 2
+    return y
```

and a rename:
diff --git a/old name.py b/new name.py
similarity index 90%
rename from old name.py
rename to new name.py
index 1..2 100644
--- a/old name.py
+++ b/new name.py
@@ -1 +1 @@
-x = 1
+x = 2
\\ No newline at end of file
diff --git a/new.go b/new.go
new file mode 100644
index 0000000..1111111
--- /dev/null
+++ b/new.go
@@ -0,0 +1,3 @@
+package main
+
+func Hello() {}
diff --git a/gone.rs b/gone.rs
deleted file mode 100644
--- a/gone.rs
+++ /dev/null
@@ -1,2 +0,0 @@
-fn old() {
-}
diff --git a/img.png b/img.png
index 1..2 100644
Binary files a/img.png and b/img.png differ
diff --git a/scripts/run.sh b/scripts/run.sh
old mode 100644
new mode 100755
That is all.
"""


def _by_path(files: list[DiffFile]) -> dict[str, DiffFile]:
    return {f.path: f for f in files}


def test_embedded_multi_file_diff_with_renames_new_deleted_and_binary() -> None:
    files = _by_path(parse_diff(EDGE))
    assert list(files) == ["pkg/util.py", "new name.py", "new.go", "gone.rs", "img.png",
                           "scripts/run.sh"]
    util = files["pkg/util.py"]
    assert (util.added, util.removed, util.symbols) == (2, 1, ["helper"])
    renamed = files["new name.py"]
    assert (renamed.old_path, renamed.added, renamed.removed) == ("old name.py", 1, 1)
    assert files["new.go"].is_new and files["new.go"].symbols == ["Hello"]
    assert files["new.go"].hunks[0].added == ["package main", "", "func Hello() {}"]
    gone = files["gone.rs"]
    assert gone.is_deleted and not gone.is_new and gone.symbols == ["old"]
    assert files["img.png"].hunks == [] and files["img.png"].language is None
    assert files["scripts/run.sh"].hunks == []


def test_minus_plus_pair_without_git_line_and_hunk_without_counts() -> None:
    [f] = parse_diff("--- x.py\t2024-01-01 10:00:00\n+++ x.py\t2024-01-02 10:00:00\n@@\n"
                     " def f():\n-    a = 1\n+    a = 2\n\nafter the diff\n")
    assert f.path == "x.py"
    assert (f.added, f.removed, f.symbols) == (1, 1, ["f"])
    assert (f.hunks[0].old_len, f.hunks[0].new_len) == (2, 2)


def test_crlf_diff_and_prefix_stripping() -> None:
    diff = "diff --git a/src/app.ts b/src/app.ts\r\n--- a/src/app.ts\r\n+++ b/src/app.ts\r\n" \
           "@@ -1,3 +1,3 @@ export class App {\r\n   run(): void {\r\n" \
           "-    go(1);\r\n+    go(2);\r\n   }\r\n"
    [f] = parse_diff(diff)
    assert (f.path, f.language, f.symbols) == ("src/app.ts", "typescript", ["App.run"])
    assert f.hunks[0].added == ["    go(2);"]


def test_hunk_header_counts_default_to_one() -> None:
    [f] = parse_diff(
        "--- a/a.c\n+++ b/a.c\n@@ -5 +5 @@ int main(void)\n-  return 1;\n+  return 0;\n")
    h = f.hunks[0]
    assert (h.old_start, h.old_len, h.new_start, h.new_len) == (5, 1, 5, 1)
    assert h.symbols == ["main"]


def test_docs_files_get_no_symbols() -> None:
    files = _by_path(parse_diff(read_fixture("diffs/swebench_flask_4039.diff")))
    assert files["CHANGES.rst"].hunks[0].header == "Unreleased"
    assert files["CHANGES.rst"].symbols == []


def test_unknown_code_language_uses_the_header() -> None:
    diff = ("--- a/app/models/user.rb\n+++ b/app/models/user.rb\n"
            "@@ -10,3 +10,3 @@ class User < ApplicationRecord\n"
            "   def name\n-    @name\n+    @full_name\n   end\n")
    [f] = parse_diff(diff)
    assert f.language is None
    assert f.symbols == ["User.name"]


def test_new_sources_accept_the_b_prefixed_key() -> None:
    diff = read_fixture("diffs/go.diff")
    new = read_fixture("languages/go/server.go")
    [f] = parse_diff(diff, {"b/server/server.go": new})
    assert f.symbols == ["Server.ListenAndServe", "Server.serve", "Server.Close"]


@pytest.mark.parametrize("text", [
    "", "no diff here", "@@ -1 +1 @@\n-a\n+b\n", "diff --git", "--- a\n+++ b\n@@ -x +y @@\n",
    "diff --git a/x.py b/x.py\n@@ -1,100000 +1,100000 @@\n+a\n", "@@@ -1,2 -1,2 +1,3 @@@\n",
])
def test_malformed_diffs_do_not_raise(text: str) -> None:
    assert isinstance(parse_diff(text), list)


def test_headerless_hunks_are_dropped() -> None:
    assert parse_diff("@@ -1 +1 @@\n-a\n+b\n") == []


def test_truncated_hunk_keeps_what_was_read() -> None:
    [f] = parse_diff("diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n"
                     "@@ -1,10 +1,10 @@ def f():\n"
                     "     a = 1\n-    b = 2\n+    b = 3\n")
    assert (f.added, f.removed, f.symbols) == (1, 1, ["f"])
    assert (f.hunks[0].old_len, f.hunks[0].new_len) == (10, 10)


def test_coloured_diff_output() -> None:
    bold, cyan, red, green, reset = "\x1b[1m", "\x1b[36m", "\x1b[31m", "\x1b[32m", "\x1b[m"
    diff = (f"{bold}diff --git a/x.py b/x.py{reset}\n{bold}--- a/x.py{reset}\n"
            f"{bold}+++ b/x.py{reset}\n{cyan}@@ -1,2 +1,2 @@{reset} {reset}def run():{reset}\n"
            f"{red}-    go(1){reset}\n{green}+{reset}{green}    go(2){reset}\n {reset}    done()\n")
    [f] = parse_diff(diff)
    assert (f.path, f.added, f.removed, f.symbols) == ("x.py", 1, 1, ["run"])
    assert f.hunks[0].added == ["    go(2)"]


def test_very_large_diffs_keep_counts_past_the_resolution_budget() -> None:
    hunk = "@@ -{0},1 +{0},1 @@ def f{0}():\n-    a\n+    b\n"
    diff = "--- a/big.py\n+++ b/big.py\n" + "".join(hunk.format(i) for i in range(1, 2500))
    [f] = parse_diff(diff)
    assert (len(f.hunks), f.added, f.removed) == (2499, 2499, 2499)
    assert f.symbols == []
