"""One worker runs every Add; the other workers hand theirs to it.

With `codemem serve --workers N` each worker is a process with its own `Memory` over the
shared data directory. Adds split between processes lose what makes them cheap in one:
a group commit joins the Adds of one process only, so two writers take turns on the write
lock with half the Adds in each commit, and a session whose Adds land on both workers has
its state and history read back from the store whenever the other one wrote last.

So the worker that holds the leader lock (`.codemem-locks/adds-leader.lock`) runs every
Add, and the others send theirs to it over a Unix socket (Linux's abstract namespace: no
file to clean up, no path-length limit), authenticated with a key that the leader writes
beside the lock, readable by the data directory's owner alone. Searches run on every worker.

Correctness never depends on it: the session locks and the write lock hold across
processes as before. A worker that reaches no leader (it died, or is still starting) runs
the Add itself, and now and then tries to become the leader; an Add whose answer never
came back (the leader died midway) is run again here, which stores nothing twice (a
request_id is checked under its session's lock).
"""

from __future__ import annotations

import hashlib
import logging
import os
import queue
import secrets
import socket
import threading
import time
from collections.abc import Callable
from multiprocessing import AuthenticationError
from multiprocessing.connection import Client, Connection, Listener
from pathlib import Path

from codemem.contract.types import AddRequest, AddResult
from codemem.store.locks import ProcessLock

log = logging.getLogger(__name__)

# How often a worker without a leader tries again to become one, or to reach one.
RETRY_S = 1.0
# How long closing waits for the Adds the leader is running for other workers.
CLOSE_WAIT_S = 30.0


class AddLeader:
    """Runs `run(req)` here when this process leads (or no leader answers), else forwards
    the request to the process that does and returns its result or raises its error."""

    def __init__(self, lock_dir: Path, run: Callable[[AddRequest], AddResult]) -> None:
        self._run = run
        self._lock = ProcessLock(lock_dir / "adds-leader.lock")
        self._key_path = lock_dir / "adds-leader.key"
        self.address = "\0codemem-adds-" + hashlib.sha256(str(lock_dir.resolve()).encode()).hexdigest()[:32]
        self.leading = False
        self.forwarded = 0  # Adds this process sent to the leader and got answered
        self.served = 0  # Adds this process ran for other workers
        self._listener: Listener | None = None
        self._idle: queue.SimpleQueue[Connection] = queue.SimpleQueue()
        self._next_lead = 0.0  # when to try again to take the lead
        self._next_connect = 0.0  # when to try again to reach a leader
        self._try_lock = threading.Lock()
        self._closed = False
        self._busy = 0
        self._busy_changed = threading.Condition()

    # -- any worker -------------------------------------------------------------------------

    def add(self, req: AddRequest) -> AddResult:
        if self.leading or self._try_lead():
            return self._run(req)
        conn = self._connection()
        if conn is None:
            return self._run(req)
        try:
            conn.send(req)
            status, value = conn.recv()
        except (OSError, EOFError):  # the leader went away, perhaps midway: a retry stores nothing twice
            conn.close()
            self._next_lead = self._next_connect = 0.0  # the lock may be free now
            return self._run(req)
        if status == "gone":  # the leader is closing
            conn.close()
            return self._run(req)
        self._idle.put(conn)
        if status == "error":
            raise value
        self.forwarded += 1
        return value

    def _try_lead(self) -> bool:
        """Take the leader lock if it is free (at most every RETRY_S), and start serving."""
        if self._closed or time.monotonic() < self._next_lead or not self._try_lock.acquire(blocking=False):
            return self.leading
        try:
            if self.leading or not self._lock.acquire(blocking=False):
                self._next_lead = time.monotonic() + RETRY_S
                return self.leading
            key = secrets.token_bytes(32)
            fd = os.open(self._key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(key)
            self._listener = Listener(self.address, family="AF_UNIX", backlog=128, authkey=key)
            threading.Thread(target=self._accept, name="codemem-add-leader", daemon=True).start()
            self.leading = True
            log.info("this worker runs every Add (the other workers forward theirs)")
            return True
        except OSError:
            log.exception("could not start serving other workers' Adds; each worker runs its own")
            self._lock.release()
            self._next_lead = time.monotonic() + RETRY_S
            return False
        finally:
            self._try_lock.release()

    def _connection(self) -> Connection | None:
        """An idle connection to the leader, or a new one; None when none can be had now."""
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            pass
        if time.monotonic() < self._next_connect:
            return None
        try:
            return Client(self.address, family="AF_UNIX", authkey=self._key_path.read_bytes())
        except (OSError, EOFError, AuthenticationError) as exc:  # no leader listening yet, a stale key
            log.debug("no Add leader reachable (%s)", exc)
            self._next_connect = time.monotonic() + RETRY_S
            return None

    # -- the leader -------------------------------------------------------------------------

    def _accept(self) -> None:
        listener = self._listener
        assert listener is not None
        while not self._closed:
            try:
                conn = listener.accept()
            except (OSError, EOFError, AuthenticationError):  # closed, or a client without the key
                continue
            except Exception:  # the listener must outlive any one client's failed handshake
                log.exception("a worker's connection failed")
                continue
            if self._closed:
                conn.close()
                break
            threading.Thread(target=self._serve, args=(conn,), name="codemem-add-forwarded", daemon=True).start()

    def _serve(self, conn: Connection) -> None:
        """Run the Adds one follower thread sends, one at a time, until it hangs up."""
        with conn:
            while True:
                try:
                    req = conn.recv()
                except (OSError, EOFError):
                    return
                with self._busy_changed:
                    if self._closed:
                        conn.send(("gone", None))
                        return
                    self._busy += 1
                try:
                    answer: tuple[str, object] = ("ok", self._run(req))
                    self.served += 1
                except Exception as exc:  # noqa: BLE001 - the follower raises it as its own
                    answer = ("error", exc)
                finally:
                    with self._busy_changed:
                        self._busy -= 1
                        self._busy_changed.notify_all()
                try:
                    conn.send(answer)
                except (OSError, EOFError):  # the follower is gone
                    return
                except Exception:  # noqa: BLE001 - an error that does not pickle: say what it was
                    conn.send(("error", RuntimeError(f"the Add failed on another worker: {answer[1]!r}")))

    def close(self) -> None:
        """Stop serving: Adds sent from now on are run by their own workers; the ones
        running here finish first (up to CLOSE_WAIT_S)."""
        with self._busy_changed:
            self._closed = True
            self._busy_changed.wait_for(lambda: self._busy == 0, timeout=CLOSE_WAIT_S)
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                break
        if self._listener is not None:
            try:  # wake the accept loop, which then sees it is closed (a bare connect: no handshake to wait on)
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as wake:
                    wake.connect(self.address)
            except OSError:
                pass
            self._listener.close()
            self._listener = None
            self._lock.release()
            self.leading = False
