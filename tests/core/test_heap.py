"""When freed memory is handed back to the system (`codemem.heap.Releaser`)."""

from __future__ import annotations

import platform

from codemem import heap


def test_memory_is_released_once_adds_pause_and_now_and_then_while_they_go_on() -> None:
    now, released = [0.0], []
    r = heap.Releaser(quiet_s=2, every_s=30, clock=lambda: now[0], release=lambda: released.append(now[0]) or True)
    assert not r.tick()  # nothing happened: nothing to give back
    for t in range(0, 61):  # an Add every second for a minute
        now[0] = float(t)
        r.active()
        r.tick()
    assert released == [30.0, 60.0]
    now[0] = 61.0
    assert not r.tick()  # one second quiet: not yet
    now[0] = 62.5
    assert r.tick() and released[-1] == 62.5
    now[0] = 100.0
    assert not r.tick()  # released since the last Add: nothing owed


def test_memory_is_given_back_where_the_allocator_is_glibc() -> None:
    assert heap.release() is (platform.libc_ver()[0] == "glibc")
