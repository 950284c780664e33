"""Compile, at install, the bytecode of what the `codemem` command and the service import.

`make setup` installs with `pip install --no-compile`: by default pip compiles every module
of every package it installs, about 77 MB of bytecode (numpy's tests, faker's locales, pip
itself), of which codemem imports a fraction. Python compiles what it imports at first use
and keeps it where it may write. Where it may not (the deployment we ship: `sudo make setup`
in /opt/codemem, the service run as the user `codemem`), it would compile again at every
start, and the hook's cold `codemem search` would pay for it each time. So `make setup` runs
this, as the user who installs:

    python -m cli.bytecode

It imports every module of codemem's packages, then runs what they import lazily: a server
over a temporary data directory answers an Add, a Search and the page, and the command
line searches that directory as the hook does. Every module then loaded is compiled.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import importlib
import io
import pkgutil
import sys
import sysconfig
import tempfile
from pathlib import Path

import httpx

# codemem's own packages (pyproject.toml's), every module of which is imported.
PACKAGES = ("codemem", "parsers", "api", "integrations", "cli")


def import_packages() -> None:
    """Import every module of codemem's packages (not `__main__`, which runs the command)."""
    for top in PACKAGES:
        package = importlib.import_module(top)
        for module in pkgutil.walk_packages(package.__path__, f"{top}."):
            if not module.name.endswith("__main__"):
                importlib.import_module(module.name)


def exercise(data_dir: str) -> None:
    """What a server and the hook import on first use (uvicorn's protocols, LanceDB, ONNX
    Runtime, the tokenizer, Litestar's handlers and templates): `serve`'s app answers an Add,
    a Search and the page over HTTP, then the command line searches the same data directory."""
    from api.app import create_app
    from api.threaded import served
    from cli.main import main
    from cli.subcommands import server_options
    from codemem.config import Settings

    settings = Settings.from_env({}, overrides={"storage.data_dir": data_dir, "maintenance.interval_s": 0,
                                                "server.host": "127.0.0.1", "server.port": 0})
    options = server_options(settings, None) | {"log_config": None, "log_level": "warning"}  # a quiet install
    messages = [{"role": "user", "content": "Fix the crash in parsers/diff.py when a hunk header has no context"},
                {"role": "assistant", "content": "Guarded the split in parse_hunk_header; the tests pass."}]
    with served(create_app(settings), **options) as (host, port), \
            httpx.Client(base_url=f"http://{host}:{port}", timeout=300, trust_env=False) as client:
        client.post("/add", json={"user_id": "setup", "session_id": "s1", "request_id": "r1",
                                  "messages": messages}).raise_for_status()
        client.post("/search", json={"user_id": "setup", "query": "hunk header crash", "top_k": 5}).raise_for_status()
        client.get("/ui").raise_for_status()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        main(["search", "--data-dir", data_dir, "--user-id", "setup", "hunk header crash"])


def loaded_sources() -> list[Path]:
    """The source file of every module loaded, from the virtualenv or this checkout."""
    roots = [Path(sysconfig.get_paths()["purelib"]), Path(sysconfig.get_paths()["platlib"]), Path(__file__).parents[1]]
    files = {Path(path) for module in list(sys.modules.values())
             if isinstance(path := getattr(module, "__file__", None), str) and path.endswith(".py")}
    return sorted(f for f in files if any(f.is_relative_to(root) for root in roots))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--list", action="store_true", help="print the source files instead of compiling them")
    args = ap.parse_args(argv)
    if not args.list:
        print("codemem: compiling what codemem imports (a server answers a first Add and Search; under a minute)...",
              flush=True)
    import_packages()
    with tempfile.TemporaryDirectory(prefix="codemem-setup-") as tmp:
        exercise(tmp)
    sources = loaded_sources()
    if args.list:
        print("\n".join(map(str, sources)))
        return 0
    compiled = sum(bool(compileall.compile_file(f, quiet=2)) for f in sources)
    print(f"codemem: compiled the bytecode of the {compiled} modules it imports")
    return 0 if compiled == len(sources) else 1


if __name__ == "__main__":
    sys.exit(main())
