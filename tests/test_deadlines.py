"""The server's deadlines (`app.deadlines`): one sweep a loop fires each within a tick after it
is due, never one cleared, and a task's deadline ends its block as `asyncio.timeout` does.
The servers' own limits (a head's, a body's, a backend's answer) are checked end to end in
test_safety_requests.py, test_safety_bodies.py and test_server_behaviour.py."""

from __future__ import annotations

import asyncio

import pytest

from app.deadlines import Deadlines

TICK = 0.02
# The most a test waits for what it expects (a bound, not a pause).
WAIT = 5.0


def run(coroutine) -> object:
    return asyncio.run(coroutine)


def test_a_deadline_fires_within_a_tick_after_it_is_due() -> None:
    async def check() -> float:
        loop = asyncio.get_running_loop()
        deadlines, fired = Deadlines(TICK), asyncio.Event()
        due = loop.time() + 0.05
        deadlines.at(due, fired.set)
        await asyncio.wait_for(fired.wait(), WAIT)
        return loop.time() - due

    late = run(check())
    # Never early; late by a tick and whatever the loop's scheduling adds on a busy machine
    # (bounded loosely: a sweep that did not tick would wait for WAIT and fail above).
    assert 0 <= late < TICK + 1.0


def test_a_cleared_deadline_never_fires_and_the_sweep_ends_with_the_last() -> None:
    async def check() -> tuple[list[str], int]:
        loop = asyncio.get_running_loop()
        deadlines, fired, last = Deadlines(TICK), [], asyncio.Event()
        cleared = deadlines.at(loop.time() + TICK, lambda: fired.append("cleared"))
        deadlines.at(loop.time() + 3 * TICK, lambda: (fired.append("kept"), last.set()))
        cleared.clear()
        await asyncio.wait_for(last.wait(), WAIT)
        return fired, len(deadlines.sweeps)  # the sweep that fired the last one ended

    assert run(check()) == (["kept"], 0)


def test_a_task_deadline_ends_its_block_with_a_timeout_and_the_task_goes_on() -> None:
    async def check() -> tuple[bool, str]:
        deadlines = Deadlines(TICK)
        deadline = deadlines.within(0.05)
        with pytest.raises(TimeoutError), deadline:
            await asyncio.Event().wait()  # never set: only the deadline ends it
        await asyncio.sleep(0)  # no cancellation is left pending on the task
        return deadline.expired, "went on"

    assert run(check()) == (True, "went on")


def test_a_block_that_ends_in_time_leaves_nothing_pending() -> None:
    async def check() -> tuple[bool, int]:
        deadlines = Deadlines(TICK)
        deadline = deadlines.within(WAIT)
        with deadline:
            await asyncio.sleep(0)
        return deadline.expired, sum(len(sweep.pending) for sweep in deadlines.sweeps.values())

    assert run(check()) == (False, 0)


def test_a_timeout_the_block_raises_itself_is_not_the_deadline() -> None:
    async def check() -> bool:
        deadline = Deadlines(TICK).within(WAIT)
        with pytest.raises(TimeoutError, match="its own"), deadline:
            raise TimeoutError("its own")
        return deadline.expired

    assert run(check()) is False


def test_a_cancellation_from_outside_is_not_turned_into_a_timeout() -> None:
    async def check() -> bool:
        deadline = Deadlines(TICK).within(WAIT)
        entered = asyncio.Event()

        async def wait() -> None:
            with deadline:
                entered.set()
                await asyncio.Event().wait()

        task = asyncio.create_task(wait())
        await asyncio.wait_for(entered.wait(), WAIT)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return deadline.expired

    assert run(check()) is False


def test_no_limit_sets_no_deadline() -> None:
    async def check() -> int:
        deadlines = Deadlines(TICK)
        for limit in (0, None):
            with deadlines.within(limit):
                await asyncio.sleep(0)
        with deadlines.until(None):
            await asyncio.sleep(0)
        return len(deadlines.sweeps)

    assert run(check()) == 0
