from __future__ import annotations

from parsers import Frame, extract_text_refs
from tests.parsers.conftest import read_fixture

SITE = "/usr/local/lib/python3.6/site-packages/django/db"


def test_python_chained_traceback() -> None:
    refs = extract_text_refs(read_fixture("tracebacks/python_chained.txt"))
    assert refs.exceptions == ["psycopg2.errors.UndefinedTable", "django.db.utils.ProgrammingError"]
    assert refs.error_messages == [
        'psycopg2.errors.UndefinedTable: relation "django_admin_log" does not exist',
        'django.db.utils.ProgrammingError: relation "django_admin_log" does not exist',
    ]
    assert refs.frames[0] == Frame(f"{SITE}/backends/utils.py", 84, "_execute", "python")
    assert Frame(f"{SITE}/utils.py", 90, "__exit__", "python") in refs.frames
    assert len(refs.frames) == 5  # 7 frame lines, two repeats deduplicated
    assert f"{SITE}/models/sql/compiler.py" in refs.files
    assert "psycopg2.errors.UndefinedTable" not in refs.symbols


def test_python_traceback_terms_reach_module_paths_and_bare_exception() -> None:
    terms = extract_text_refs(read_fixture("tracebacks/python_chained.txt")).terms()
    for term in ["django/db/models/sql/compiler.py", "compiler.py", "django.db.models.sql.compiler",
                 "programmingerror", "django.db.utils.programmingerror", "execute_sql"]:
        assert term in terms
    assert terms == [t.lower() for t in terms]


def test_ipython_traceback() -> None:
    refs = extract_text_refs(read_fixture("tracebacks/python_ipython.txt"))
    path = "/root/sympy/sympy/ntheory/residue_ntheory.py"
    assert refs.frames[0] == Frame(path, 780, "nthroot_mod", "python")
    assert refs.frames[-1] == Frame(path, 1056, "_discrete_log_trial_mul", "python")
    assert refs.exceptions == ["ValueError"]
    assert refs.error_messages == ["ValueError: Log does not exist"]
    assert "sympy.ntheory.residue_ntheory" not in refs.terms()  # absolute, not site-packages
    assert "residue_ntheory.py" in refs.terms()


def test_javascript_stack_trace() -> None:
    refs = extract_text_refs(read_fixture("tracebacks/javascript.txt"))
    assert refs.exceptions == ["TypeError"]
    assert refs.error_messages == [
        "TypeError: Cannot read properties of undefined (reading 'name')"]
    assert refs.frames[:3] == [
        Frame("/app/src/routes/users.js", 42, "getUserName", "javascript"),
        Frame("/app/node_modules/express/lib/router/layer.js", 95, "Layer.handle", "javascript"),
        Frame("/app/src/controllers/user.js", 17, "UserController.show", "javascript"),
    ]
    assert Frame("/app/src/boot.mjs", 3, None, "javascript") in refs.frames
    assert "node:internal/modules/cjs/loader" not in refs.files
    assert "Node.js" not in refs.files and "Node.js" not in refs.symbols
    assert refs.commands == ["node src/server.js"]


def test_java_stack_trace_with_cause() -> None:
    refs = extract_text_refs(read_fixture("tracebacks/java.txt"))
    assert refs.exceptions == ["java.lang.IllegalStateException", "java.lang.NullPointerException"]
    assert refs.error_messages[0] == (
        "java.lang.IllegalStateException: Order repository is not initialised")
    assert refs.error_messages[1].startswith("java.lang.NullPointerException: Cannot invoke")
    assert refs.frames[0] == Frame(
        "OrderService.java", 21, "com.example.shop.OrderService.placeOrder", "java")
    assert Frame("ArrayList.java", 1541, "java.util.ArrayList.forEach", "java") in refs.frames
    assert all(f.file.endswith(".java") for f in refs.frames)
    assert {"orderservice.placeorder", "placeorder", "nullpointerexception"} <= set(refs.terms())


def test_go_panic_with_goroutine_trace() -> None:
    refs = extract_text_refs(read_fixture("tracebacks/go.txt"))
    assert refs.exceptions == ["panic"]
    assert refs.error_messages[0].startswith("panic: runtime error: invalid memory address")
    assert Frame("/home/dev/app/server/server.go", 42, "server.Server.serve", "go") in refs.frames
    assert Frame("/home/dev/app/server/server.go", 35, "server.Server.ListenAndServe",
                 "go") in refs.frames
    assert Frame("/usr/local/go/src/testing/testing.go", 1648, "testing.T.Run", "go") in refs.frames
    assert refs.test_ids == ["TestListenAndServe"]
    assert "server.listenandserve" in refs.terms()


def test_rust_panic_and_test_names() -> None:
    refs = extract_text_refs(read_fixture("tracebacks/rust.txt"))
    assert refs.exceptions == ["panic"]
    assert refs.frames == [Frame("src/cache.rs", 78, None, "rust")]
    assert refs.error_messages[0] == "panicked at 'assertion failed: cache.get(&1).is_none()'"
    assert refs.test_ids == ["tests::evicts_oldest", "tests::keeps_newest"]
    assert refs.files == ["src/cache.rs"]


def test_old_style_rust_panic_message() -> None:
    refs = extract_text_refs("thread 'main' panicked at 'index out of bounds', src/main.rs:4:5\n")
    assert refs.frames == [Frame("src/main.rs", 4, None, "rust")]
    assert refs.error_messages == ["panicked at 'index out of bounds'"]


def test_inline_error_mentions() -> None:
    refs = extract_text_refs(
        "With requests 2.11 I get `AttributeError: 'NoneType' object has no attribute 'readline'` "
        "when streaming.\nUncaught ReferenceError: foo is not defined\n"
        '"TypeError: cannot pickle" when applying | to a Q object\n'
        "error[E0308]: mismatched types\n"
        "It raised a KeyError, then a django.core.exceptions.FieldError.\n")
    assert refs.exceptions == ["AttributeError", "ReferenceError", "TypeError", "KeyError",
                               "django.core.exceptions.FieldError"]
    assert refs.error_messages == [
        "AttributeError: 'NoneType' object has no attribute 'readline'",
        "ReferenceError: foo is not defined",
        "TypeError: cannot pickle",
        "error[E0308]: mismatched types",
    ]


def test_bare_error_word_in_prose_is_not_an_exception() -> None:
    refs = extract_text_refs("There was an Error somewhere.\nError: Cannot find module 'express'\n")
    assert refs.exceptions == ["Error"]
    assert refs.error_messages == ["Error: Cannot find module 'express'"]
