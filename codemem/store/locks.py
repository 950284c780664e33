"""Locks that hold across the processes sharing one data directory.

Several `codemem serve` workers (or a server and a CLI import) may write the same LanceDB
table. LanceDB retries a commit that raced another, but two things need more than that:
the Adds of one session must run one at a time everywhere (each rebuilds the session's
card from what the one before wrote, and a retried request_id must see the first copy),
and a compaction that lost a race must be able to land. On a local data directory these
are advisory `flock`s on small files beside the data; on object storage (no shared file
system) they are this process's locks only, and the deployment notes say how to route.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

from codemem.config import is_object_storage

LOCK_DIR = ".codemem-locks"


class ProcessLock:
    """A thread lock, plus an exclusive `flock` on `path` when there is one.

    The thread lock comes first: `flock` is held per open file, so two threads of one
    process sharing the descriptor would both get it."""

    def __init__(self, path: Path | None) -> None:
        self._thread_lock = threading.Lock()
        self._open_lock = threading.Lock()
        self._path = path
        self._fd: int | None = None
        self._probe_fd: int | None = None  # a second open file, whose `flock` meets the first's

    def acquire(self, blocking: bool = True) -> bool:
        if not self._thread_lock.acquire(blocking):
            return False
        if self._path is None:
            return True
        try:
            fcntl.flock(self._file(self._path), fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._thread_lock.release()
            return False
        except BaseException:
            self._thread_lock.release()
            raise
        return True

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        self._thread_lock.release()

    def locked(self) -> bool:
        return self._thread_lock.locked()

    def held(self) -> bool:
        """Whether a thread of this process or another process holds the lock now: a shared
        `flock` tried, without waiting, on a second open file of the lock (which meets the
        holder's exclusive one, even in this process) and given back at once. Probing takes
        no thread lock, so probes from many threads do not see one another as holders."""
        if self._thread_lock.locked():
            return True
        if self._path is None:
            return False
        with self._open_lock:
            if self._probe_fd is None:
                self._probe_fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o600)
            fd = self._probe_fd
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False

    def generation(self) -> int | None:
        """A counter kept in the lock file, raised (`bump`) by every process before it
        changes what the lock guards: a process that kept what it read under the lock sees
        from it whether anyone changed that since. None without a file (object storage:
        nothing to share it through)."""
        if self._path is None:
            return None
        data = os.pread(self._file(self._path), 8, 0)
        return int.from_bytes(data, "little") if len(data) == 8 else 0

    def bump(self) -> int | None:
        """Raise the generation (hold the lock: two bumps at once could lose one); returns
        the new one. A write of 8 bytes at the file's start, no fsync: a process that died
        leaves it in the page cache, which the others read, and a machine that restarts
        holds no process that could have kept anything."""
        old = self.generation()
        if old is None:
            return None
        self.record(old + 1)
        return old + 1

    def record(self, value: int) -> None:
        """Set the generation to `value` (hold the lock): a number the lock's holders share,
        such as the table version the last compaction left."""
        if self._path is not None:
            os.pwrite(self._file(self._path), value.to_bytes(8, "little"), 0)

    def _file(self, path: Path) -> int:
        """The lock file's descriptor, opened once."""
        with self._open_lock:
            if self._fd is None:
                self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            return self._fd

    def __enter__(self) -> ProcessLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class Locks:
    """The named locks of one data directory: writes, compaction, and striped session locks
    (a fixed set, so neither memory nor lock files grow with the number of sessions)."""

    STRIPES = 256

    def __init__(self, uri: str) -> None:
        # On object storage there is no file system to share: the locks hold in this process.
        root = None if is_object_storage(uri) else Path(uri.removeprefix("file://")) / LOCK_DIR
        if root is not None:
            root.mkdir(parents=True, exist_ok=True)
        self.root = root  # None on object storage

        def lock(name: str) -> ProcessLock:
            return ProcessLock(None if root is None else root / name)

        self.write = lock("write.lock")
        self.compaction = lock("compaction.lock")
        # Its generation counts the commits of every process (`count_commit`): a process
        # whose table handle is current at the count it last saw reads without asking
        # LanceDB for a newer version (`Store`).
        self.commits = lock("commits.lock")
        # Held throughout every delete that no session lock covers (a user's, a purge), its
        # generation raised when one starts: what a process kept of any session may be gone,
        # and nothing read while one runs is kept (`writing.session_state.StateCache`).
        self.deletes = lock("deletes.lock")
        self._sessions = [lock(f"session-{i:03d}.lock") for i in range(self.STRIPES)]

    def count_commit(self) -> int | None:
        """Count one more commit to the store, after it landed; the new count (None without
        lock files). Under the lock: two processes counting at once must not count one."""
        with self.commits:
            return self.commits.bump()

    def stripe(self, session_key: str) -> int:
        """Which session lock guards this session (several sessions share each)."""
        return int(session_key[:8], 16) % self.STRIPES

    def session(self, session_key: str) -> ProcessLock:
        return self._sessions[self.stripe(session_key)]

    @contextlib.contextmanager
    def sessions(self, session_keys: Iterable[str]) -> Iterator[None]:
        """Several sessions' locks at once (a batch import), each stripe once, in stripe
        order, so two batches cannot deadlock."""
        stripes = sorted({self.stripe(k) for k in session_keys})
        with contextlib.ExitStack() as stack:
            for i in stripes:
                stack.enter_context(self._sessions[i])
            yield
