"""Deadlines kept by one sweep of each event loop, instead of a timer each.

A request sets up to three deadlines (its head's, its body's, a read's backend answer's) and
almost never reaches one; a timer each (`loop.call_later` and its cancel, `asyncio.timeout`,
`asyncio.wait_for`) cost a cached DescribeTable several per cent of its CPU. Here a deadline is
an entry in a set, and one callback a tick fires those that are due: each fires within `tick`
seconds after it is due (a tenth of a second, against limits of seconds), and setting or
clearing one costs a set's add or discard.

All of it runs on the event loop's thread: the server's protocol, its body reads and its
backend waits.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from types import TracebackType

logger = logging.getLogger("lance_adapter")

# Seconds between two sweeps of a loop that has deadlines pending.
TICK = 0.1


class Deadline:
    """`callback` due at `when` (the event loop's clock), unless cleared first."""

    __slots__ = ("_pending", "callback", "when")

    def __init__(self, when: float, callback: Callable[[], None], pending: set[Deadline]) -> None:
        self.when = when
        self.callback = callback
        self._pending = pending

    def clear(self) -> None:
        self._pending.discard(self)


class _Sweep:
    """The deadlines of one event loop, and the tick that fires those due."""

    def __init__(self, owner: Deadlines, loop: asyncio.AbstractEventLoop) -> None:
        self.owner = owner
        self.loop = loop
        self.pending: set[Deadline] = set()
        loop.call_later(owner.tick, self.fire)

    def fire(self) -> None:
        now = self.loop.time()
        for deadline in [deadline for deadline in self.pending if deadline.when <= now]:
            self.pending.discard(deadline)
            try:
                deadline.callback()
            except Exception:  # one failing callback must not keep the others from firing
                logger.exception("a deadline's callback failed")
        if self.pending:
            self.loop.call_later(self.owner.tick, self.fire)
        else:  # a sweep lives only while its loop has deadlines
            self.owner.sweeps.pop(self.loop, None)


class Deadlines:
    """A server's deadlines, each loop's swept every `tick` seconds (see the module's doc)."""

    def __init__(self, tick: float = TICK) -> None:
        self.tick = tick
        self.sweeps: dict[asyncio.AbstractEventLoop, _Sweep] = {}

    def at(self, when: float, callback: Callable[[], None]) -> Deadline:
        """`callback()` on the running loop once its clock reaches `when`, unless cleared."""
        loop = asyncio.get_running_loop()
        sweep = self.sweeps.get(loop)
        if sweep is None:
            sweep = self.sweeps[loop] = _Sweep(self, loop)
        deadline = Deadline(when, callback, sweep.pending)
        sweep.pending.add(deadline)
        return deadline

    def within(self, seconds: float | None) -> TaskDeadline:
        """A `with` block the current task leaves with `TimeoutError` once it has run for
        `seconds` (no limit when `seconds` is 0 or None), as with `asyncio.timeout`."""
        if not seconds:
            return TaskDeadline(self, None)
        return TaskDeadline(self, asyncio.get_running_loop().time() + seconds)

    def until(self, when: float | None) -> TaskDeadline:
        """The same, until the loop's clock reaches `when` (None: no limit)."""
        return TaskDeadline(self, when)


class TaskDeadline:
    """Cancels the task in its block when due (`when`; None: never); the block then raises
    `TimeoutError`, unless the task was also cancelled otherwise (that cancellation goes on).
    `expired` tells this `TimeoutError` from one the block raised itself."""

    __slots__ = ("_cancelling", "_deadline", "_deadlines", "_task", "_when", "expired")

    def __init__(self, deadlines: Deadlines, when: float | None) -> None:
        self._deadlines = deadlines
        self._when = when
        self.expired = False

    def __enter__(self) -> TaskDeadline:
        if self._when is None:
            return self
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("a task deadline must be set inside a task")
        self._task = task
        self._cancelling = task.cancelling()
        self._deadline = self._deadlines.at(self._when, self._expire)
        return self

    def _expire(self) -> None:
        self.expired = True
        self._task.cancel()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._when is None:
            return
        self._deadline.clear()
        if not self.expired:
            return
        if self._task.uncancel() <= self._cancelling and kind is asyncio.CancelledError:
            raise TimeoutError from error
