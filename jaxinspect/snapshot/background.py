"""Run pure functions of a text in a forked child while this process goes on: two cores for
``diff``.

Counting the ops of a 14 MB HLO text is regex work that holds the GIL, so a thread cannot
overlap it with the line diff; a forked child reads the same text copy-on-write and sends back
a pickle (and may compute a second value of the text after the first). Where forking is
unsafe or not worth it, the function runs inline instead: no ``os.fork`` (Windows), jax loaded
(its runtime threads make a fork unsafe, and tests or the pytest plugin may call ``diff`` in
such a process), other Python threads, or a small input.
"""

from __future__ import annotations

import mmap
import os
import pickle
import signal
import struct
import sys
import tempfile
import threading
from collections.abc import Callable
from typing import Generic, TypeVar, cast

T = TypeVar("T")
U = TypeVar("U")

#: Inputs below this many characters are not worth a fork (about 1 ms of page-table copying).
MIN_FORK_CHARS = 1_000_000


class _Child:
    """A forked child computing ``functions`` of one text in turn, or their values computed
    inline, when asked for, where forking is unsafe or not worth it.

    Each value's pickle goes to an unnamed file the two processes share, and only where it
    lies to a pipe: a pipe holds 64 KiB, and a value written there would wait until this
    process reads it, holding up the next one (the old text's names, after its counts).
    """

    def __init__(self, functions: tuple[Callable[[str], object], ...], text: str) -> None:
        self.functions, self.text = functions, text
        self.values: list[tuple[object]] = []  # the values received (or computed), in order
        self.pid = 0
        self._pipe = self._store = -1
        if len(text) < MIN_FORK_CHARS or not fork_is_safe():
            return
        try:
            store = _unnamed_file()
        except OSError:
            return  # no file to share (too many open): computed inline, when asked for
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: compute, send, and leave without running any cleanup
            status = 1
            try:
                os.close(read_end)
                _send_each(store, write_end, functions, text)
                status = 0
            finally:
                os._exit(status)
        os.close(write_end)
        self.pid, self._pipe, self._store = pid, read_end, store

    def value(self, index: int) -> object:
        """The ``index``-th function's value: received, or computed here if the child failed
        (the result never depends on whether a fork happened)."""
        while len(self.values) <= index:
            received = self._receive()
            if received is None:
                self.close()
                received = (self.functions[len(self.values)](self.text),)
            self.values.append(received)
        if len(self.values) == len(self.functions):
            self.close()  # every value is here: reap the child
        return self.values[index][0]

    def close(self) -> None:
        """Stop the child if it is still running, and reap it."""
        if self.pid:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
            self.pid = 0
        for fd in (self._pipe, self._store):
            if fd >= 0:
                os.close(fd)
        self._pipe = self._store = -1

    def _receive(self) -> tuple[object] | None:
        """The next value from the child, or ``None`` where it sent none (it failed)."""
        if self._pipe < 0:
            return None
        place = _read_exactly(self._pipe, _PLACE.size)
        if len(place) < _PLACE.size:
            return None
        offset, size = _PLACE.unpack(place)
        if os.fstat(self._store).st_size < offset + size:
            return None
        # Mapped, not read: the pickle is unpickled from the child's pages themselves (a
        # copy of a few MB into fresh memory first cost as much as the unpickling).
        with (
            mmap.mmap(self._store, offset + size, access=mmap.ACCESS_READ) as mapped,
            memoryview(mapped) as view,
        ):
            return (pickle.loads(view[offset : offset + size]),)


#: Where a value's pickle lies in the shared file: its offset and length.
_PLACE = struct.Struct("<QQ")


def _unnamed_file() -> int:
    """A file with no name, which nothing outlives: in memory where the system has
    ``memfd_create`` (Linux), else a temporary file removed at once."""
    if hasattr(os, "memfd_create"):
        return os.memfd_create("jaxinspect-diff", os.MFD_CLOEXEC)
    with tempfile.TemporaryFile() as file:  # removed on creation where the system allows
        return os.dup(file.fileno())


def _send_each(
    store: int, pipe: int, functions: tuple[Callable[[str], object], ...], text: str
) -> None:
    """In the child: each function's value written to ``store``, and where it lies to
    ``pipe`` (a message of a few bytes, which never waits for the reader)."""
    offset = 0
    for function in functions:
        payload = memoryview(pickle.dumps(function(text), protocol=pickle.HIGHEST_PROTOCOL))
        written = 0
        while written < len(payload):
            written += os.pwrite(store, payload[written:], offset + written)
        os.write(pipe, _PLACE.pack(offset, len(payload)))
        offset += len(payload)


def _read_exactly(fd: int, size: int) -> bytes:
    """``size`` bytes from ``fd``, or fewer where it ends first."""
    data = b""
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            break
        data += chunk
    return data


class Pending(Generic[T]):
    """``function(text)``, computed in a forked child or inline.

    Call it for the value (waits for the child; later calls return the same value), or
    ``close`` it where the value is no longer wanted, so that no child is left behind.
    """

    def __init__(self, child: _Child, index: int) -> None:
        self._child, self._index = child, index
        if not child.pid and index == 0 and not child.values:
            child.value(0)  # not forked: the first value is computed at once, as a child would

    def __call__(self) -> T:
        return cast(T, self._child.value(self._index))

    @property
    def in_child(self) -> bool:
        """Whether a forked child computes the value (not yet sent, or not yet read)."""
        return bool(self._child.pid) and len(self._child.values) <= self._index

    def close(self) -> None:
        """Stop the child if this value, or one computed after it, was never asked for (an
        error came first, or it was not needed); a later call computes the value inline."""
        if len(self._child.values) < len(self._child.functions):
            self._child.close()


def in_background(function: Callable[[str], T], text: str) -> Pending[T]:
    """Start ``function(text)``; the returned ``Pending`` waits for and returns its value."""
    return Pending(_Child((function,), text), 0)


def in_background_then(
    function: Callable[[str], T], then: Callable[[str], U], text: str
) -> tuple[Pending[T], Pending[U]]:
    """Start ``function(text)``, and ``then(text)`` after it in the same child: the first
    value is sent as soon as it is known, the second may be asked for or closed later
    (inline, ``then`` runs only when its value is asked for)."""
    child = _Child((function, then), text)
    return Pending(child, 0), Pending(child, 1)


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
