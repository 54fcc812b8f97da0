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
import sys
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

#: Inputs below this many characters are not worth a fork (about 1 ms of page-table copying).
MIN_FORK_CHARS = 1_000_000


def in_background(function: Callable[[str], T], text: str) -> Callable[[], T]:
    """Start ``function(text)``; the returned callable waits for and returns its value.

    The callable must be called once. If the child fails in any way, the value is computed
    inline then, so the result never depends on whether a fork happened.
    """
    if len(text) < MIN_FORK_CHARS or not fork_is_safe():
        value = function(text)
        return lambda: value
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

    def result() -> T:
        with os.fdopen(read_end, "rb") as pipe:
            payload = pipe.read()
        _, status = os.waitpid(pid, 0)
        if status != 0 or not payload:
            return function(text)
        value: T = pickle.loads(payload)
        return value

    return result


def fork_is_safe() -> bool:
    """Whether this process may fork a child that runs Python code."""
    return (
        hasattr(os, "fork")
        and threading.active_count() == 1
        and "jax" not in sys.modules
        and "jaxlib" not in sys.modules
    )
