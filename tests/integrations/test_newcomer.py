"""The newcomer's path of the README on one machine, with no flags beyond what it shows:
import a repository's history with the CLI, find a commit through `codemem mcp` started in
that repository, capture a session through the hook, find it with `codemem search`. All of
it lands in one memory, in the one data directory every command defaults to."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
import git
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import TextContent

from codemem.embedding import MiniLMEmbedder
from tests.integrations.test_mcp_server import _history

ROOT = Path(__file__).resolve().parents[2]
USER = "repo:github.com/acme/calc"
FIXTURE = ROOT / "tests" / "fixtures" / "experience" / "claude_code_session.jsonl"


def _codemem(*args: str, cwd: Path, env: dict[str, str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-P", "-m", "cli", *args], cwd=cwd, env=env, input=stdin,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


async def _search_through_mcp(repo: Path, env: dict[str, str], query: str) -> str:
    params = StdioServerParameters(command=sys.executable, args=["-P", "-m", "cli", "mcp"], cwd=repo,
                                   env={k: env[k] for k in ("PYTHONPATH", "XDG_DATA_HOME", "XDG_CACHE_HOME")})
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        answer = await session.call_tool("search_memory", {"query": query, "top_k": 3})
    assert not answer.is_error and isinstance(answer.content[0], TextContent)
    return answer.content[0].text


def test_one_memory_however_it_is_reached(tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    # The session's embedder cached the query encoder, as any import does for a user.
    env = os.environ | {"PYTHONPATH": str(ROOT), "XDG_DATA_HOME": str(tmp_path / "share"), "TQDM_DISABLE": "1"}
    repo = _history(tmp_path / "calc")
    git.Repo(repo).create_remote("origin", "git@github.com:acme/calc.git")

    # 1. `codemem ingest-git .` in the repository.
    imported = _codemem("ingest-git", ".", cwd=repo, env=env)
    assert "Read 3 commits: 3 added" in imported.stdout and USER in imported.stderr

    # 2. `codemem mcp` started there finds the imported fix through a real MCP client.
    found = anyio.run(_search_through_mcp, repo, env, "ZeroDivisionError when dividing by zero")
    assert f"from the memory of {USER}, best first" in found.splitlines()[0]
    assert "Fix ZeroDivisionError in divide" in found.split("</experience>")[0]

    # 3. The hook, as the README installs it, captures a session of that repository.
    transcript = tmp_path / "session.jsonl"
    transcript.write_text(FIXTURE.read_text())
    payload = {"transcript_path": str(transcript), "cwd": str(repo), "session_id": "newcomer-1",
               "hook_event_name": "SessionEnd"}
    _codemem("hook", "claude-code", cwd=tmp_path, env=env, stdin=json.dumps(payload))
    log = tmp_path / "share" / "codemem" / "hooks" / "claude-code.log"
    deadline = time.monotonic() + 300
    while "chunks added to" not in (log.read_text() if log.exists() else ""):
        assert time.monotonic() < deadline, log.read_text() if log.exists() else "no hook log"
        time.sleep(1)
    assert f"added to {USER}" in log.read_text()

    # 4. `codemem search` in the repository finds the captured session and the commit alike.
    hits = json.loads(_codemem("search", "--json", "Square.area returns twice the side", cwd=repo, env=env).stdout)
    assert hits["data"][0]["session_id"] == "sess-1"  # the transcript's own session id
    shown = _codemem("search", "divide by zero", cwd=repo, env=env).stdout
    assert "open: git show " in shown and "Fix ZeroDivisionError in divide" in shown
    memories = _codemem("memories", cwd=tmp_path, env=env).stdout.splitlines()
    assert memories[0].startswith("1 memory in ") and memories[2].split()[0] == USER
