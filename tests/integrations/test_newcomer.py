"""The newcomer's path of the README on one machine, with no flags beyond what it shows:
`make install` puts `codemem` on the PATH, the README's Start-here block runs as written in
a new repository (import its history, search it, list the memories, register the MCP
server), the MCP server registered so finds a commit and opens it by the SHA `codemem
search` printed, the hook captures a session, and `codemem search` finds it. All of it lands
in one memory, in the one data directory every command defaults to (under a home of its
own here)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import anyio
import git
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import TextContent

from codemem.encoders import ShippedEmbedder
from tests.integrations.test_mcp_server import _history

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
USER = "repo:github.com/me/my-project"  # what the README's block says it imports into
FIXTURE = ROOT / "tests" / "fixtures" / "experience" / "claude_code_session.jsonl"


def start_here_block() -> str:
    """The README's Start-here example that works in a repository (the one that `cd`s to it)."""
    section = README.split("\n## Start here", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", section, re.S)
    [block] = [b for b in blocks if "cd ~/src/my-project" in b]
    return block


def _run(command: list[str], cwd: Path, env: dict[str, str], stdin: str | None = None) -> str:
    done = subprocess.run(command, cwd=cwd, env=env, input=stdin, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{shlex.join(command)}: {done.stdout[-2000:]}{done.stderr[-3000:]}"
    return done.stdout


def _newcomer_env(home: Path, fake_bin: Path) -> dict[str, str]:
    """A fresh home: no XDG_DATA_HOME (the data goes to ~/.local/share/codemem, as the README
    says), no `codemem` on the PATH but what `make install` puts in ~/.local/bin, and a
    `claude` that records what it was asked. The cached query encoder (XDG_CACHE_HOME) is kept."""
    path = [p for p in os.environ["PATH"].split(os.pathsep) if p and not (Path(p) / "codemem").exists()]
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_DATA_HOME", "CODEMEM_DATA_DIR", "PYTHONPATH")}
    return env | {"HOME": str(home), "TQDM_DISABLE": "1",
                  "PATH": os.pathsep.join([str(home / ".local" / "bin"), str(fake_bin), *path])}


def _project(path: Path) -> Path:
    """~/src/my-project: the MCP tests' history, and the fix the README's example searches for."""
    repo = git.Repo(_history(path))
    repo.create_remote("origin", "git@github.com:me/my-project.git")
    (path / "filters.py").write_text("def keep(values, pred=None):\n    return [v for v in values if (pred or bool)(v)]\n")
    repo.index.add(["filters.py"])
    repo.index.commit("Fix TypeError in filter when the predicate is None")
    return path


async def _through_mcp(command: list[str], repo: Path, env: dict[str, str], sha: str) -> tuple[str, str]:
    params = StdioServerParameters(command=command[0], args=command[1:], cwd=repo, env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        found = await session.call_tool("search_memory", {"query": "ZeroDivisionError when dividing by zero", "top_k": 3})
        opened = await session.call_tool("get_experience", {"id": sha})
    for answer in (found, opened):
        assert not answer.is_error and isinstance(answer.content[0], TextContent), answer.content
    return found.content[0].text, opened.content[0].text  # type: ignore[union-attr]


def test_the_readme_start_here_runs_as_written(tmp_path: Path, embedder: ShippedEmbedder) -> None:
    # The session's embedder cached the query encoder, as any import does for a user.
    home, fake_bin = tmp_path / "home", tmp_path / "fake-bin"
    fake_bin.mkdir()
    (fake_bin / "claude").write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {tmp_path / "claude-args"}\n')
    (fake_bin / "claude").chmod(0o755)
    env = _newcomer_env(home, fake_bin)
    repo = _project(home / "src" / "my-project")

    # `make install`, with the virtualenv that runs these tests as the checkout's (already set up).
    venv = Path(sys.prefix)
    _run(["make", "-o", f"{venv}/.installed", "install", f"VENV={venv}"], ROOT, env)
    assert (home / ".local" / "bin" / "codemem").resolve() == (venv / "bin" / "codemem").resolve()

    # The Start-here block, as written, from the home directory.
    out = _run(["bash", "-euc", start_here_block()], home, env)
    assert "Read 4 commits: 4 added, 0 already stored. `codemem search \"...\"` in the repository" in out
    assert f"from the memory of {USER}:" in out and "Fix TypeError in filter when the predicate is None" in out
    sha = re.search(r"open: git show ([0-9a-f]{12})", out)
    assert sha, out
    assert re.search(rf"^{re.escape(USER)}\s+4\s+", out, re.M)  # `codemem memories`
    assert (home / ".local" / "share" / "codemem").is_dir()

    # The agent starts the command `claude mcp add` was given, in the project.
    args = (tmp_path / "claude-args").read_text().splitlines()
    assert args[:5] == ["mcp", "add", "--scope", "user", "codemem"] and args[5] == "--"
    assert args[6:] == [str(home / ".local" / "bin" / "codemem"), "mcp"]
    found, opened = anyio.run(_through_mcp, args[6:], repo, env, sha.group(1))
    assert f"found in the memory of {USER}, best first" in found.splitlines()[0]
    assert "Fix ZeroDivisionError in divide" in found.split("</experience>")[0]
    assert opened.startswith("Experience git:" + sha.group(1))  # the SHA as `codemem search` printed it

    # The hook, as the README installs it (`codemem hook claude-code`), captures a session of the project.
    transcript = tmp_path / "session.jsonl"
    transcript.write_text(FIXTURE.read_text())
    payload = {"transcript_path": str(transcript), "cwd": str(repo), "session_id": "newcomer-1",
               "hook_event_name": "SessionEnd"}
    _run(["codemem", "hook", "claude-code"], tmp_path, env, stdin=json.dumps(payload))
    log = home / ".local" / "share" / "codemem" / "hooks" / "claude-code.log"
    deadline = time.monotonic() + 300
    while "chunks added to" not in (log.read_text() if log.exists() else ""):
        assert time.monotonic() < deadline, log.read_text() if log.exists() else "no hook log"
        time.sleep(1)
    assert f"added to {USER}" in log.read_text()

    # `codemem search` in the project finds the captured session and the commit alike.
    hits = json.loads(_run(["codemem", "search", "--json", "Square.area returns twice the side"], repo, env))
    assert hits["data"][0]["session_id"] == "sess-1"  # the transcript's own session id
    shown = _run(["codemem", "search", "divide by zero"], repo, env)
    assert "open: git show " in shown and "Fix ZeroDivisionError in divide" in shown
    memories = _run(["codemem", "memories"], tmp_path, env).splitlines()
    assert memories[0].startswith("1 memory in ") and memories[2].split()[0] == USER
