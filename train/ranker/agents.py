"""Public agent runs on SWE-bench Verified, each read into the Add messages that a Coding-track
client would send for that agent's session.

The ranker must not learn one transcript format: the evaluation does not say which agent wrote
its trajectories. So each run keeps its agent's own rendering: mini-swe-agent's THOUGHT and
```bash``` blocks with `<returncode>`/`<output>` observations; Vorflux's typed tool calls as the
model emitted them (OpenAI `tool_calls` JSON) and its tool results as the `role: tool` messages
its harness fed back; OpenHands CodeAct's `<function=...><parameter=...>` calls and
`EXECUTION RESULT of [tool]:` observations. The contract has two roles, so what the agent
emitted is `assistant` and what it was given (the task, tool results) is `user`.

Left out everywhere: the system prompt, and the harness's generic instructions around the task
(setup commands, rules, submission steps): the same in every session, they would make every
session look alike. Only the issue stays in the first message, in the agent's own wrapper.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codemem.contract.types import Message, Role
from train.licences import licence_of

Reader = Callable[[dict[str, Any]], list[Message]]


def _message(role: Role, content: str) -> Message | None:
    return Message(role=role, content=content) if content.strip() else None


def _between(text: str, starts: tuple[str, ...], ends: tuple[str, ...], keep_end: bool) -> str:
    """`text` from the first of `starts` to the first of `ends` after it (included when
    `keep_end`). A task message without them is not the harness's: a clear error."""
    start = min((i for s in starts if (i := text.find(s)) >= 0), default=-1)
    if start < 0:
        raise ValueError(f"no task start ({' or '.join(starts)}) in the first message")
    cut = [(i, e) for e in ends if (i := text.find(e, start)) >= 0]
    if not cut:
        raise ValueError(f"no task end ({' or '.join(ends)}) in the first message")
    i, end = min(cut)
    return text[start: i + len(end) if keep_end else i].rstrip()


# -- mini-swe-agent ---------------------------------------------------------------------------

def mini_messages(trajectory: dict[str, Any]) -> list[Message]:
    """mini-swe-agent's `messages`: no system prompt; the task message ends with the task's
    `</pr_description>` (its instructions after it are the same in every session)."""
    out: list[Message] = []
    for msg in trajectory["messages"]:
        role, content = msg["role"], str(msg["content"])
        if role not in ("user", "assistant"):
            continue
        if not out and role == "user":
            content = _between(content, ("<pr_description>",), ("</pr_description>",), keep_end=True)
        if (m := _message(role, content)) is not None:
            out.append(m)
    return out


# -- Vorflux ----------------------------------------------------------------------------------

# The harness's sections around the issue in its task prompt (two prompt versions).
VORFLUX_TASK = ("## Issue\n", "### Problem Statement\n")
VORFLUX_AFTER_TASK = ("\n## Approach", "\n## Rules", "\n## Notes", "\n## When done", "\n### Approach",
                      "\n### Integrity Rules", "\n### Coding Rules", "\n### Submission")


def _decoded(value: Any) -> Any:
    """A JSON object held as a string (a call's `arguments`, a tool's result) as the object,
    so that a rendered message escapes its text once, not twice; anything else unchanged."""
    if isinstance(value, str) and value.lstrip().startswith("{"):
        try:
            return json.loads(value)
        except ValueError:
            pass
    return value


def _vorflux_call(call: dict[str, Any]) -> str:
    """One tool call as the model emitted it (`{"id", "type": "function", "function": {"name",
    "arguments"}}`), its arguments string decoded."""
    function = call.get("function")
    if isinstance(function, dict):
        call = {**call, "function": {**function, "arguments": _decoded(function.get("arguments"))}}
    return json.dumps(call, ensure_ascii=False)


def _vorflux_call_lines(message: dict[str, Any]) -> list[str]:
    """The model's text, then each of its tool calls, one JSON object a line."""
    lines = [str(message.get("content") or "").strip()]
    return lines + [_vorflux_call(call) for call in message.get("tool_calls") or []]


def _vorflux_tool(call_id: str, content: Any) -> str:
    """A tool result as a `role: tool` message: the tool's text, or its result object
    (`{"stdout":...,"exitCode":0}`; the harness fed it back as that object's JSON, kept as the
    object here so that its text is escaped once, not twice)."""
    ids = {"tool_call_id": call_id} if call_id else {}
    return json.dumps({"role": "tool", **ids, "content": _decoded(content)}, ensure_ascii=False)


def _argument_values(arguments: Any) -> tuple[str, ...]:
    """A call's argument values, names left out: the harness's record of a call renames some
    (`file_path` -> `filePath`) but keeps the values."""
    arguments = _decoded(arguments)
    if not isinstance(arguments, dict):
        return (json.dumps(arguments),)
    return tuple(sorted(json.dumps(v, sort_keys=True) for v in arguments.values()))


def vorflux_messages(run: dict[str, Any]) -> list[Message]:
    """A Vorflux run (`trajectory`: `llm_call`, `tool_call` and `judge_call` entries) as the main
    agent's conversation.

    The first `llm_call` carries the task prompt (rarely a resumed conversation: its earlier
    messages follow it). Each `llm_call` output is an assistant message with its tool calls;
    a `tool_call` entry (the harness's record of one execution) is the result of one of the
    calls still waiting for it, matched by argument values, and is sent as the tool message.
    Entries that answer no call of the main agent are its sub-agents' own commands (their
    findings reach it through its `wait_any_task_result` calls) or the harness's bookkeeping:
    left out, as Claude Code's sidechains are.

    A third of the runs were exported without the model's `tool_calls` (every output has an
    empty list). There each execution record after an output is that output's call: it is
    written into the assistant message from the record (the harness's tool name and argument
    names), and records after the last output (the harness's bookkeeping) are left out.
    `judge_call`s are the harness's review of the final message's display, not the session."""
    entries = run.get("trajectory") or []
    outputs = [i for i, e in enumerate(entries) if e.get("type") == "llm_call" and isinstance(e.get("output"), dict)]
    recorded = any(entries[i]["output"].get("tool_calls") for i in outputs)
    last_output = outputs[-1] if outputs else -1
    turns: list[tuple[Role, list[str]]] = []
    waiting: list[tuple[str, tuple[str, ...]]] = []  # (call id, argument values)

    for index, entry in enumerate(entries):
        if entry.get("type") == "llm_call":
            for msg in entry.get("task_prompt") or []:
                role = msg.get("role")
                if role == "user":
                    content = str(msg.get("content") or "")
                    if not turns:
                        content = _between(content, VORFLUX_TASK, VORFLUX_AFTER_TASK, keep_end=False)
                    turns.append(("user", [content]))
                elif role == "assistant":
                    turns.append(("assistant", _vorflux_call_lines(msg)))
                elif role == "tool" and msg.get("content"):
                    turns.append(("user", [_vorflux_tool(str(msg.get("tool_call_id") or ""), msg["content"])]))
            output = entry.get("output")
            if isinstance(output, dict):
                turns.append(("assistant", _vorflux_call_lines(output)))
                waiting += [(str(c.get("id") or ""), _argument_values((c.get("function") or {}).get("arguments")))
                            for c in output.get("tool_calls") or []]
        elif entry.get("type") == "tool_call" and entry.get("result") not in (None, ""):
            if recorded:
                values = _argument_values(entry.get("arguments"))
                match = next((i for i, (_, v) in enumerate(waiting) if v == values), None)
                if match is not None:
                    turns.append(("user", [_vorflux_tool(waiting.pop(match)[0], entry["result"])]))
            elif index < last_output and turns:
                if turns[-1][0] != "assistant":
                    turns.append(("assistant", []))
                turns[-1][1].append(_vorflux_call({"type": "function", "function": {
                    "name": entry.get("tool"), "arguments": entry.get("arguments")}}))
                turns.append(("user", [_vorflux_tool("", entry["result"])]))
    return [m for role, lines in turns if (m := _message(role, "\n".join(x for x in lines if x.strip()))) is not None]


# -- OpenHands CodeAct ------------------------------------------------------------------------

OPENHANDS_TASK = ("<uploaded_files>",)
OPENHANDS_TASK_END = ("</issue_description>",)


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return str(content or "")


def openhands_messages(completion: dict[str, Any]) -> list[Message]:
    """An OpenHands completion log (the last LLM call: its `messages` and its `response`) as the
    session. The model called tools in text (`<function=execute_bash>...</function>`) and read
    their results as user messages (`EXECUTION RESULT of [execute_bash]:`), as these `messages`
    hold them; the `fncall_*` copies are the same turns converted to native tool calls, which
    the model never saw. The first user message starts with an in-context example and ends with
    instructions: only `<uploaded_files>` ... `</issue_description>` is kept. The final answer
    is the `response`."""
    out: list[Message] = []
    for msg in completion["messages"]:
        role, content = msg.get("role"), _text(msg.get("content"))
        if role not in ("user", "assistant"):
            continue
        if not out and role == "user":
            content = _between(content, OPENHANDS_TASK, OPENHANDS_TASK_END, keep_end=True)
        if (m := _message(role, content)) is not None:
            out.append(m)
    for choice in (completion.get("response") or {}).get("choices") or []:
        if (m := _message("assistant", _text((choice.get("message") or {}).get("content")))) is not None:
            out.append(m)
    return out


# -- the runs ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Run:
    """One public run: where its trajectories lie in its repository and how to read one."""

    name: str
    agent: str
    repository: str  # github owner/name, for the search tool's fetch
    folder: str  # the trajectories' folder in it
    read: Reader
    layout: str  # "{iid}/{iid}.traj.json" style path of one trajectory, or "{iid}/" (its one file)

    @property
    def license(self) -> str:
        """The run's licence as the licence table states it (`train.licences`)."""
        entry = licence_of(self.name)
        return f"{entry.spdx} ({entry.where})"

    def path(self, mirror: Path, iid: str, rev: str = "HEAD") -> str | None:
        """The trajectory's path in the mirror at `rev`; None when the run has none for `iid`.
        Only this task's own folder is ever listed."""
        rel = self.layout.format(iid=iid)
        if not rel.endswith("/"):
            return f"{self.folder}/{rel}"
        names = subprocess.run(["git", "--git-dir", str(mirror), "ls-tree", "--name-only", rev, f"{self.folder}/{rel}"],
                               check=True, capture_output=True, text=True).stdout.split("\n")
        files = sorted(n for n in names if n.endswith(".json"))
        return files[0] if files else None


RUNS = {run.name: run for run in (
    Run("mini", "mini-swe-agent 1.15 with Gemini 3 Pro (bash only)", "gruckion/mini-swe-agent",
        "swebench_results/20251118_gemini-3-pro-74pct/trajs", mini_messages,
        "{iid}/{iid}.traj.json"),
    Run("vorflux", "Vorflux harness with Claude Opus 4.6 (typed tools: bash_execute, read, grep_search, edit_file)",
        "piyushhhxyz/vorflux-swe-benchmarks", "evaluation/verified/20250519_vorflux_opus46-code_gpt55h-review/trajs",
        vorflux_messages, "{iid}.json"),
    Run("openhands", "OpenHands CodeAct (Multi-SWE-bench's MopenHands) with Claude 3.5 Sonnet (Oct)",
        "gsmoon97/swe-agent-eval", "evaluation/python/verified/20250329_OpenHands_Claude-3.5-Sonnet(Oct)/trajs",
        openhands_messages, "{iid}/"),
)}


def read_sessions(run: Run, mirror: Path, ids: list[str], rev: str = "HEAD") -> Iterator[tuple[str, list[Message]]]:
    """Each instance's session from the mirror at `rev` (a pinned commit, so that a newer
    snapshot of the run changes nothing), in `ids` order (one `git cat-file --batch` for all);
    an instance the run lacks, or whose trajectory is empty, yields no messages. Only the
    trajectories of `ids` are opened."""
    proc = subprocess.Popen(["git", "--git-dir", str(mirror), "cat-file", "--batch"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for iid in ids:
            path = run.path(mirror, iid, rev)
            if path is None:
                yield iid, []
                continue
            proc.stdin.write(f"{rev}:{path}\n".encode())
            proc.stdin.flush()
            header = proc.stdout.readline().decode().split()
            if len(header) < 3 or header[1] == "missing":
                yield iid, []  # not in the run, or a file the snapshot does not hold (LFS, size)
                continue
            body = proc.stdout.read(int(header[2]))
            proc.stdout.read(1)  # the newline after each object
            try:
                yield iid, run.read(json.loads(body))
            except (ValueError, KeyError, TypeError) as e:
                raise SystemExit(f"{run.name}: cannot read {path}: {e}") from e
    finally:
        proc.stdin.close()
        proc.wait()
