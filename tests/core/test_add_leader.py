"""Several workers, one runner of Adds: forwarding, errors, and a leader that goes away.

Two `AddLeader`s on one lock directory stand for two worker processes: each holds its own
open file of the leader lock, and `flock` keeps the second from taking what the first holds,
as between processes."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from codemem.contract.types import AddRequest, AddResult, Message
from codemem.errors import InvalidInput
from codemem.writing import add_leader
from codemem.writing.add_leader import AddLeader


def request(i: int) -> AddRequest:
    return AddRequest(request_id=f"r{i}", user_id="u", session_id="s", messages=[Message("user", f"message {i}")])


class Worker:
    """Records which Adds it ran itself."""

    def __init__(self, name: str, lock_dir: Path) -> None:
        self.name = name
        self.ran: list[str] = []
        self.leader = AddLeader(lock_dir, self.run)

    def run(self, req: AddRequest) -> AddResult:
        if "bad" in req.request_id:
            raise InvalidInput(f"{req.request_id}: no such field")
        self.ran.append(req.request_id)
        return AddResult(req.request_id, req.user_id, req.session_id, stored=len(req.messages))


def test_every_add_runs_in_the_worker_that_leads(tmp_path: Path) -> None:
    first, second = Worker("first", tmp_path), Worker("second", tmp_path)
    try:
        assert first.leader.add(request(0)).stored == 1  # the first Add anywhere takes the lead
        assert first.leader.leading and not second.leader.leading
        results: list[AddResult] = []
        threads = [threading.Thread(target=lambda i=i: results.append(second.leader.add(request(i))))
                   for i in range(1, 9)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        # The second worker's Adds ran in the first one, each answered with its own result.
        assert sorted(r.request_id for r in results) == [f"r{i}" for i in range(1, 9)]
        assert sorted(first.ran) == [f"r{i}" for i in range(9)] and second.ran == []
        assert second.leader.forwarded == 8 and first.leader.served == 8
        # The leader's error is the follower's, with its type and message.
        with pytest.raises(InvalidInput, match="r-bad: no such field"):
            second.leader.add(AddRequest(request_id="r-bad", user_id="u", session_id="s",
                                         messages=[Message("user", "x")]))
    finally:
        first.leader.close()
        second.leader.close()


def test_a_closed_leader_hands_the_adds_back_and_another_worker_takes_the_lead(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(add_leader, "RETRY_S", 0.0)
    first, second = Worker("first", tmp_path), Worker("second", tmp_path)
    try:
        first.leader.add(request(0))
        second.leader.add(request(1))  # forwarded: the second now keeps a connection open
        assert first.ran == ["r0", "r1"]
        first.leader.close()  # a worker shutting down (SIGTERM): it runs no more Adds for others
        assert second.leader.add(request(2)).stored == 1
        second.leader.add(request(3))
        assert second.ran == ["r2", "r3"] and first.ran == ["r0", "r1"]
        assert second.leader.leading  # the lock was free: the second worker leads now
        third = Worker("third", tmp_path)
        third.leader.add(request(4))
        assert second.ran[-1] == "r4" and third.ran == []
        third.leader.close()
    finally:
        first.leader.close()
        second.leader.close()


def test_no_leader_reachable_means_each_worker_runs_its_own(tmp_path: Path) -> None:
    first, second = Worker("first", tmp_path), Worker("second", tmp_path)
    try:
        first.leader.add(request(0))
        # The leader's key is gone (a data directory another user cannot read, say): the
        # follower cannot connect and stores the Add itself rather than failing it.
        (tmp_path / "adds-leader.key").unlink()
        assert second.leader.add(request(1)).stored == 1
        assert second.ran == ["r1"]
    finally:
        first.leader.close()
        second.leader.close()
