"""Keeps `import lancedb` from building a REST client that a local store never calls.

`lancedb` imports `lance_namespace`, which takes its request and response models from
`lance_namespace_urllib3_client.models`. That package's `__init__` also imports its nine
generated API classes, whose hundreds of methods each build a pydantic `validate_call`
validator: a large part of the CPU time of importing the store, for the REST namespace
client, which a directory or S3 bucket never uses. A cold `codemem search` and the MCP
server's first tool call wait for that import.

`defer_rest_client()` defers that one `__init__`, in the way `importlib.util.LazyLoader`
defers a module, but keeping the package's `__path__` so its submodules (`models`) import as
usual: the first attribute read from the package itself (`ApiClient`, `TableApi`, ...) runs
its real `__init__` and then answers. Nothing changes for code that does use the client, only
when its cost is paid.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
from collections.abc import Sequence
from types import ModuleType
from typing import Any

REST_CLIENT = "lance_namespace_urllib3_client"


class _DeferredInit(importlib.abc.Loader):
    """Creates the package with its spec's attributes (`__path__` among them) and runs its
    `__init__` on the first read of any other attribute."""

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self._loader = loader
        self._lock = threading.RLock()
        self._done = False

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None  # the default module, with __name__, __path__, __spec__ set by the import system

    def exec_module(self, module: ModuleType) -> None:
        def __getattr__(name: str) -> Any:  # PEP 562: called only for names not yet defined
            if name.startswith("__") and name != "__all__":  # `import *` reads __all__: it runs __init__
                raise AttributeError(name)  # probes such as __wrapped__ run nothing
            with self._lock:
                if not self._done:
                    self._done = True
                    try:
                        self._loader.exec_module(module)
                    except BaseException:
                        self._done = False  # the next read tries again, and sees the error
                        raise
            try:
                return module.__dict__[name]
            except KeyError:
                raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}") from None

        module.__getattr__ = __getattr__  # type: ignore[method-assign]


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != REST_CLIENT:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None or spec.submodule_search_locations is None:
            return spec  # not installed, or not the package we know: imported as it is
        spec.loader = _DeferredInit(spec.loader)
        return spec


def defer_rest_client() -> None:
    """Install the deferral, once, before `lancedb` is first imported (no effect after)."""
    if REST_CLIENT in sys.modules or any(isinstance(f, _Finder) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _Finder())
