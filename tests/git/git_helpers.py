"""Builders for small real repositories with the shapes the importer must survive.

History (author = committer dates, one per day from 2024-01-01, newest last):
c1 add app/service.py, web/*.js, README.md       c2 fix in Service.save (KeyError message)
c3 rename web/util.js -> web/dates.js, edit        c4 add binary logo.png
c5 non-UTF-8 message + diff bytes              c6 (branch feature) edit Service.load
c7 (main) edit web/dates.js, Store.save in JS     c8 merge feature into main (--no-ff)
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import git

BASE = datetime(2024, 1, 1, 12, 0, tzinfo=UTC)

SERVICE_V1 = '''\
import json


class Service:
    """Loads and saves users."""

    def __init__(self, path):
        self.path = path
        self.cache = {}

    def load(self, key):
        with open(self.path) as fh:
            data = json.load(fh)
        return data[key]

    def save(self, key, value):
        self.cache[key] = value
        with open(self.path, "w") as fh:
            json.dump(self.cache, fh)


def helper():
    return 1
'''

SERVICE_V2 = SERVICE_V1.replace(
    "        self.cache[key] = value\n",
    "        if not self.cache:\n"
    "            self.cache = self._read()\n"
    "        self.cache[key] = value\n",
)
SERVICE_V3 = SERVICE_V2.replace("        return data[key]\n", "        return data.get(key)\n")

UTIL_JS = """\
export function formatDate(d) {
  const y = d.getFullYear();
  return `${y}-${d.getMonth()}-${d.getDate()}`;
}

export function parseDate(s) {
  return new Date(s);
}
"""
STORE_JS = """\
export class Store {
  constructor(path) {
    this.path = path;
    this.data = {};
  }

  save(key, value) {
    if (!key) {
      throw new Error("key required");
    }
    this.data[key] = value;
    return this;
  }
}
"""
STORE_JS_2 = STORE_JS.replace("this.data[key] = value;", "this.data[key] = value ?? null;")
DATES_JS = UTIL_JS.replace("d.getMonth()", "d.getMonth() + 1")
DATES_JS_2 = DATES_JS.replace("return new Date(s);", "return new Date(Date.parse(s));")


@dataclass
class HistoryRepo:
    path: Path
    shas: dict[str, str]  # "c1".."c8" -> sha


def commit(repo: git.Repo, message: bytes | str, day: int) -> str:
    """Commit the index with fixed author and committer dates, message given as raw bytes."""
    when = (BASE + timedelta(days=day)).isoformat()
    msg_file = Path(repo.git_dir) / "MSG"
    msg_file.write_bytes(message if isinstance(message, bytes) else message.encode())
    env = {"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
    repo.git.commit("-q", "-F", str(msg_file), env=env)
    return repo.head.commit.hexsha


def commit_raw(repo: git.Repo, message: bytes, day: int, encoding: str | None = None) -> str:
    """Commit the index with a message stored byte for byte (``git commit`` would re-encode it),
    optionally declaring its ``encoding`` header."""
    when = int((BASE + timedelta(days=day)).timestamp())
    tree = repo.git.write_tree()
    ident = f"Ada Lovelace <ada@example.com> {when} +0000".encode()
    body = b"tree " + tree.encode() + b"\n"
    if repo.head.is_valid():
        body += b"parent " + repo.head.commit.hexsha.encode() + b"\n"
    body += b"author " + ident + b"\ncommitter " + ident + b"\n"
    if encoding is not None:
        body += b"encoding " + encoding.encode() + b"\n"
    body += b"\n" + message
    raw = Path(repo.git_dir) / "RAW_COMMIT"
    raw.write_bytes(body)
    sha = repo.git.hash_object("-t", "commit", "-w", str(raw))
    repo.git.update_ref("HEAD", sha)
    return str(sha)


def init_repo(path: Path) -> git.Repo:
    repo = git.Repo.init(path, initial_branch="main")
    with repo.config_writer() as cfg:
        cfg.set_value("user", "name", "Ada Lovelace")
        cfg.set_value("user", "email", "ada@example.com")
        cfg.set_value("commit", "gpgsign", "false")
    return repo


def write(root: Path, rel: str, content: str | bytes) -> None:
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        target.write_bytes(content)
    else:
        target.write_text(content)
