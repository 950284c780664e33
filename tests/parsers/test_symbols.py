from __future__ import annotations

import pytest

from parsers import Symbol, enclosing_symbols, extract_symbols
from tests.parsers.conftest import read_fixture


def line_of(source: str, needle: str) -> int:
    """1-based line of the only line containing ``needle``."""
    hits = [i for i, line in enumerate(source.split("\n"), 1) if needle in line]
    assert len(hits) == 1, (needle, hits)
    return hits[0]


def definitions(symbols: list[Symbol]) -> set[tuple[str, str]]:
    return {(s.qualified_name, s.kind) for s in symbols if s.kind != "call"}


def calls(symbols: list[Symbol]) -> set[str]:
    return {s.qualified_name for s in symbols if s.kind == "call"}


CASES = [
    ("python/query.py", "python",
     {("BaseIterable", "class"), ("BaseIterable.__init__", "method"), ("QuerySet", "class"),
      ("QuerySet.db", "method"), ("QuerySet.filter", "method"),
      ("QuerySet._filter_or_exclude", "method"), ("QuerySet._combine", "method"),
      ("QuerySet._combine._merge", "function"), ("prefetch_related_objects", "function")},
     {"router.db_for_read", "copy.deepcopy", "clone._filter_or_exclude_inplace", "Q", "reduce"}),
    ("javascript/router.js", "javascript",
     {("Router", "class"), ("Router.constructor", "method"), ("Router.use", "method"),
      ("Router.handle", "method"), ("Router.handle.next", "function"), ("restore", "function"),
      ("mergeParams", "function")},
     {"stack.push", "layer.handleRequest", "Object.assign", "Layer", "fn.apply"}),
    ("typescript/store.ts", "typescript",
     {("Subscriber", "interface"), ("Subscriber.notify", "method"), ("Reducer", "type"),
      ("Status", "enum"), ("BaseStore", "class"), ("BaseStore.snapshot", "method"),
      ("Store", "class"), ("Store.dispatch", "method"), ("Store.subscribe", "method"),
      ("Store.unsubscribe", "method"), ("createStore", "function")},
     {"reducer", "emitter.emit", "subscribers.forEach", "Store", "EventEmitter"}),
    ("tsx/Counter.tsx", "tsx",
     {("CounterProps", "interface"), ("Counter", "function"), ("Counter.increment", "function"),
      ("Panel", "class"), ("Panel.render", "method")},
     {"useState", "setCount"}),
    ("java/OrderService.java", "java",
     {("OrderService", "class"), ("OrderService.OrderService", "method"),
      ("OrderService.placeOrder", "method"), ("OrderService.cancelAll", "method"),
      ("OrderService.Validator", "class"), ("OrderService.Validator.validate", "method"),
      ("OrderRepository", "interface"), ("OrderRepository.save", "method")},
     {"repository.save", "Objects.requireNonNull", "IllegalArgumentException", "order.cancel"}),
    ("go/server.go", "go",
     {("Handler", "interface"), ("Handler.Serve", "method"), ("Server", "class"),
      ("NewServer", "function"), ("Server.ListenAndServe", "method"), ("Server.serve", "method"),
      ("Server.Close", "method")},
     {"net.Listen", "fmt.Errorf", "s.serve", "s.handler.Serve", "errors.New"}),
    ("rust/cache.rs", "rust",
     {("Cache", "class"), ("Event", "class"), ("Cache.new", "method"), ("Cache.get", "method"),
      ("Cache.insert", "method"), ("Cache.evict", "method"), ("Event.fmt", "method"),
      ("Evict", "interface"), ("Evict.evict_one", "method"), ("tests", "module"),
      ("tests.evicts_oldest", "function")},
     {"HashMap.new", "entries.insert", "order.push", "Cache.new", "write"}),
    ("c/buffer.c", "c",
     {("buffer", "class"), ("buffer_t", "type"), ("grow", "function"),
      ("buffer_append", "function"), ("buffer_detach", "function")},
     {"realloc", "memcpy", "grow"}),
    ("cpp/shapes.cpp", "cpp",
     {("geo", "namespace"), ("geo.Shape", "class"), ("geo.Circle", "class"),
      ("geo.Circle.area", "method"), ("geo.Canvas", "class"), ("geo.Canvas.add", "method"),
      ("geo.Canvas.totalArea", "method"), ("main", "function")},
     {"shapes_.push_back", "std.move", "canvas.totalArea", "s.area"}),
]


@pytest.mark.parametrize(("fixture", "language", "expected_defs", "expected_calls"), CASES,
                         ids=[c[1] for c in CASES])
def test_extract_symbols_names_definitions_and_calls(
    fixture: str, language: str, expected_defs: set[tuple[str, str]], expected_calls: set[str]
) -> None:
    symbols = extract_symbols(read_fixture(f"languages/{fixture}"), language)
    assert expected_defs <= definitions(symbols)
    assert expected_calls <= calls(symbols)


def test_symbols_carry_name_and_line() -> None:
    source = read_fixture("languages/python/query.py")
    symbols = extract_symbols(source, "python")
    filt = next(s for s in symbols if s.qualified_name == "QuerySet.filter")
    assert filt == Symbol("filter", "QuerySet.filter", "method", line_of(source, "def filter("))
    lines = [s.line for s in symbols]
    assert lines == sorted(lines)


def test_calls_strip_self_receiver() -> None:
    symbols = extract_symbols("class A:\n    def f(self):\n        self.g()\n", "python")
    assert [(s.name, s.qualified_name) for s in symbols if s.kind == "call"] == [("g", "g")]


ENCLOSING = [
    ("python/query.py", "python", [
        ("clone = self._chain()", "QuerySet._filter_or_exclude"),
        ("@property", "QuerySet.db"),
        ("return reduce(operator.or_", "QuerySet._combine._merge"),
        ("return copy.deepcopy(self)", "QuerySet._combine"),
        ("done_queries = {}", "prefetch_related_objects"),
    ]),
    ("javascript/router.js", "javascript", [
        ("return out(err);", "Router.handle.next"),
        ("this.stack.push(layer);", "Router.use"),
        ("return Object.assign", "mergeParams"),
    ]),
    ("typescript/store.ts", "typescript", [
        ("this.emitter.emit", "Store.dispatch"),
        ("return () => this.unsubscribe", "Store.subscribe"),
    ]),
    ("java/OrderService.java", "java", [
        ("pending.add(order);", "OrderService.placeOrder"),
        ("return order.total() > 0;", "OrderService.Validator.validate"),
    ]),
    ("go/server.go", "go", [
        ("ln, err := net.Listen", "Server.ListenAndServe"),
        ("s.closed = true", "Server.Close"),
        ("return &Server{", "NewServer"),
    ]),
    ("rust/cache.rs", "rust", [
        ("self.entries.insert(key, value);", "Cache.insert"),
        ('Event::Hit => write!(f, "hit")', "Event.fmt"),
        ("cache.insert(2, \"b\");", "tests.evicts_oldest"),
    ]),
    ("c/buffer.c", "c", [("memcpy(b->data", "buffer_append"), ("cap *= 2;", "grow")]),
    ("cpp/shapes.cpp", "cpp", [
        ("shapes_.push_back", "geo.Canvas.add"),
        ("return M_PI", "geo.Circle.area"),
        ("canvas.add(std::make_unique", "main"),
    ]),
]


@pytest.mark.parametrize(("fixture", "language", "expectations"), ENCLOSING,
                         ids=[c[1] for c in ENCLOSING])
def test_enclosing_symbols(fixture: str, language: str,
                           expectations: list[tuple[str, str]]) -> None:
    source = read_fixture(f"languages/{fixture}")
    lines = {line_of(source, needle): name for needle, name in expectations}
    assert enclosing_symbols(source, language, lines) == lines


def test_enclosing_symbols_omits_lines_outside_definitions() -> None:
    source = read_fixture("languages/python/query.py")
    import_line = line_of(source, "import operator")
    inside = line_of(source, "self._db = using")
    assert enclosing_symbols(source, "python", [import_line, inside, 10_000]) == {
        inside: "QuerySet.__init__"}


def test_unknown_language_extracts_nothing_but_encloses_by_indentation() -> None:
    source = read_fixture("languages/ruby/greeter.rb")
    assert extract_symbols(source, "ruby") == []
    assert enclosing_symbols(source, "ruby", [line_of(source, "@name = name"),
                                              line_of(source, '"Hello')]) == {
        line_of(source, "@name = name"): "Greetings.Greeter.initialize",
        line_of(source, '"Hello'): "Greetings.Greeter.greet",
    }


@pytest.mark.parametrize("source", ["", "\x00\x01\x02", "def (:\n  ))) class", "}" * 5000])
def test_broken_sources_do_not_raise(source: str) -> None:
    assert isinstance(extract_symbols(source, "python"), list)
    assert isinstance(enclosing_symbols(source, "python", [1, 2]), dict)
    assert isinstance(extract_symbols(source, "cpp"), list)


def test_syntax_errors_still_yield_the_intact_definitions() -> None:
    source = ("def ok(a):\n    return a\n\ndef broken(:\n    pass\n\n"
              "class K:\n    def m(self):\n        pass\n")
    names = {s.qualified_name for s in extract_symbols(source, "python") if s.kind != "call"}
    assert {"ok", "K", "K.m"} <= names
