"""Run one pure function in a forked child while this process goes on: two cores for ``diff``.

Counting the ops of a 14 MB HLO text is regex work that holds the GIL, so a thread cannot
overlap it with the line diff; a forked child reads the same text copy-on-write and sends back
a small pickle. Where forking is unsafe or not worth it, the function runs inline instead:
no ``os.fork`` (Windows), jax loaded (its runtime threads make a fork unsafe, and tests or the
pytest plugin may call ``diff`` in such a process), other Python threads, or a small input.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

#: Inputs below this many characters are not worth a fork (about 1 ms of page-table copying).
MIN_FORK_CHARS = 1_000_000


class Pending(Generic[T]):
    """``function(text)``, computed in a forked child or already inline.

    Call it for the value (waits for the child; later calls return the same value), or
    ``close`` it where the value is no longer wanted, so that no child is left behind.
    """

    def __init__(self, function: Callable[[str], T], text: str) -> None:
        self._function, self._text = function, text
        self._pid = 0
        self._read_end = -1
        self._value: tuple[T] | None = None
        if len(text) < MIN_FORK_CHARS or not fork_is_safe():
            self._value = (function(text),)
            return
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: compute, send, and leave without running any cleanup
            status = 1
            try:
                os.close(read_end)
                payload = pickle.dumps(function(text), protocol=pickle.HIGHEST_PROTOCOL)
                with os.fdopen(write_end, "wb") as pipe:
                    pipe.write(payload)
                status = 0
            finally:
                os._exit(status)
        os.close(write_end)
        self._pid, self._read_end = pid, read_end

    def __call__(self) -> T:
        if self._value is None:
            payload, status = b"", 1
            if self._pid:  # not closed
                with os.fdopen(self._read_end, "rb") as pipe:
                    payload = pipe.read()
                status = self._reap()
            # If the child failed in any way, the value is computed inline: the result never
            # depends on whether a fork happened.
            value = pickle.loads(payload) if status == 0 and payload else self._function(self._text)
            self._value = (value,)
        return self._value[0]

    def close(self) -> None:
        """Stop the child if its value was never asked for (an error came first); a later
        call computes the value inline."""
        if self._value is None and self._pid:
            os.kill(self._pid, signal.SIGKILL)
            os.close(self._read_end)
            self._reap()

    def _reap(self) -> int:
        _, status = os.waitpid(self._pid, 0)
        self._pid = 0
        return status


def in_background(function: Callable[[str], T], text: str) -> Pending[T]:
    """Start ``function(text)``; the returned ``Pending`` waits for and returns its value."""
    return Pending(function, text)


def will_fork(text: str) -> bool:
    """Whether ``in_background(function, text)`` would compute in a forked child."""
    return len(text) >= MIN_FORK_CHARS and fork_is_safe()


def fork_is_safe() -> bool:
    """Whether this process may fork a child that runs Python code."""
    return (
        hasattr(os, "fork")
        and threading.active_count() == 1
        and "jax" not in sys.modules
        and "jaxlib" not in sys.modules
    )
