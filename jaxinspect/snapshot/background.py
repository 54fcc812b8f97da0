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

import _thread
import mmap
import os
import pickle
import select
import signal
import struct
import sys
from collections.abc import Callable
from typing import Generic, TypeVar, cast

T = TypeVar("T")
U = TypeVar("U")

#: Inputs below this many characters are not worth a fork (about 1 ms of page-table copying).
MIN_FORK_CHARS = 1_000_000


#: One value a child computes: a function of the text and of the values computed before it.
Step = Callable[[str, list[object]], object]


class _Child:
    """A forked child computing ``functions`` of one text in turn (each given the values
    before it), or their values computed inline, when asked for, where forking is unsafe or
    not worth it.

    Each value's pickle goes to an unnamed file the two processes share, and only where it
    lies to a pipe: a pipe holds 64 KiB, and a value written there would wait until this
    process reads it, holding up the next one (the old text's names, after its counts). A
    value is unpickled only when it is asked for.

    With ``answer``, the child then waits for one question (``ask``) and sends
    ``answer(text, values, question)`` as one more value: a question about a large value
    (which of a few thousand names the old text defines) is answered where that value
    already is, instead of sending it whole. A question that is already waiting when the last
    value is known is answered before that value is sent: the parent is waiting for it. So
    each value's place names its slot, and values may arrive out of order.
    """

    def __init__(
        self,
        functions: tuple[Step, ...],
        text: str,
        answer: Callable[[str, list[object], object], object] | None = None,
    ) -> None:
        self.functions, self.text, self.answer = functions, text, answer
        self.slots = len(functions) + (answer is not None)  # the values there will be
        self.places: dict[int, tuple[int, int]] = {}  # slot -> where the child put its value
        self._values: dict[int, object] = {}
        self._question: tuple[object] | None = None
        self.pid = 0
        self._pipe = self._store = self._asks = self._asked = -1
        if len(text) < MIN_FORK_CHARS or not fork_is_safe():
            return
        try:
            store = _unnamed_file()
        except OSError:
            return  # no file to share (too many open): computed inline, when asked for
        try:
            asked = _unnamed_file() if answer is not None else -1
        except OSError:
            os.close(store)
            return
        read_end, write_end = os.pipe()
        asks_read, asks_write = os.pipe() if answer is not None else (-1, -1)
        pid = os.fork()
        if pid == 0:  # the child: compute, send, and leave without running any cleanup
            status = 1
            try:
                os.close(read_end)
                if asks_write >= 0:
                    os.close(asks_write)
                _serve(store, write_end, functions, text, (asks_read, asked, answer))
                status = 0
            finally:
                os._exit(status)
        os.close(write_end)
        if asks_read >= 0:
            os.close(asks_read)
        self.pid, self._pipe, self._store = pid, read_end, store
        self._asks, self._asked = asks_write, asked

    def value(self, index: int) -> object:
        """The ``index``-th value: received, or computed here if the child failed (the result
        never depends on whether a fork happened)."""
        if index == len(self.functions) and self._question is None:
            raise RuntimeError("an answer was asked for before its question")
        while index not in self.places and index not in self._values:
            received = self._next_place()
            if received is None:
                self.close()  # the child failed or was stopped: what it never sent is
                self._values[index] = self._computed(index)  # computed here
                break
            slot, place = received
            self.places[slot] = place
        if index not in self._values:
            self._values[index] = self._load(*self.places[index])
        if len(self.places) == self.slots:
            self.close()  # every value is here: reap the child
            if len(self._values) == self.slots:
                self._close_store()  # and every value read from the shared file
        return self._values[index]

    @property
    def asked(self) -> bool:
        """Whether its question was asked."""
        return self._question is not None

    def ask(self, question: object) -> None:
        """Send the question that ``answer`` answers (once: its answer is the last value)."""
        if self.answer is None or self._question is not None:
            raise RuntimeError("this child answers one question, once")
        self._question = (question,)
        if self._asks < 0:
            return  # answered here, when its answer is asked for
        try:
            payload = pickle.dumps(question, protocol=pickle.HIGHEST_PROTOCOL)
            _write_at(self._asked, 0, payload)  # a file: a pipe would wait for the child
            os.write(self._asks, _PLACE.pack(0, 0, len(payload)))
        except OSError:
            self.close()  # the child is gone: answered here

    def close(self) -> None:
        """Stop the child if it is still running, and reap it. The values it sent stay
        readable (each is unpickled when first asked for) until this object goes."""
        if self.pid:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
            self.pid = 0
        for fd in (self._pipe, self._asks, self._asked):
            if fd >= 0:
                os.close(fd)
        self._pipe = self._asks = self._asked = -1

    def __del__(self) -> None:
        try:
            self.close()
            self._close_store()
        except Exception:  # noqa: BLE001  # at interpreter exit os may be gone; the kernel closes
            pass

    def _close_store(self) -> None:
        if self._store >= 0:
            os.close(self._store)
            self._store = -1

    def _computed(self, index: int) -> object:
        if index < len(self.functions):
            return self.functions[index](self.text, [self.value(k) for k in range(index)])
        assert self._question is not None and self.answer is not None  # see ``value``
        values = [self.value(k) for k in range(len(self.functions))]
        return self.answer(self.text, values, self._question[0])

    def _next_place(self) -> tuple[int, tuple[int, int]] | None:
        """The slot of the next value the child sent and where it lies, or ``None`` where
        it sent none (it failed, or was stopped)."""
        if self._pipe < 0:
            return None
        place = _read_exactly(self._pipe, _PLACE.size)
        if len(place) < _PLACE.size:
            return None
        slot, offset, size = _PLACE.unpack(place)
        if os.fstat(self._store).st_size < offset + size:
            return None
        return slot, (offset, size)

    def _load(self, offset: int, size: int) -> object:
        # Mapped, not read: the pickle is unpickled from the child's pages themselves (a
        # copy of a few MB into fresh memory first cost as much as the unpickling).
        with (
            mmap.mmap(self._store, offset + size, access=mmap.ACCESS_READ) as mapped,
            memoryview(mapped) as view,
        ):
            return pickle.loads(view[offset : offset + size])


#: Which value a child sent and where its pickle lies in the shared file: its slot, offset and
#: length (a question's place: slot 0).
_PLACE = struct.Struct("<QQQ")


def _unnamed_file() -> int:
    """A file with no name, which nothing outlives: in memory where the system has
    ``memfd_create`` (Linux), else a temporary file removed at once."""
    if hasattr(os, "memfd_create"):
        return os.memfd_create("jaxinspect-diff", os.MFD_CLOEXEC)
    import tempfile  # here: a few milliseconds before the fork, where it is not needed

    with tempfile.TemporaryFile() as file:  # removed on creation where the system allows
        return os.dup(file.fileno())


def _serve(
    store: int,
    pipe: int,
    functions: tuple[Step, ...],
    text: str,
    asking: tuple[int, int, Callable[[str, list[object], object], object] | None],
) -> None:
    """In the child: each function's value written to ``store``, and its slot and where it
    lies to ``pipe`` (a message of a few bytes, which never waits for the reader); then,
    with an ``answer``, the answer to the one question asked (``asks``, ``asked``): before
    the last value where the question is already waiting, else after it."""
    asks, asked, answer = asking
    values: list[object] = []
    offset = 0
    for slot, function in enumerate(functions):
        values.append(function(text, values))
        if answer is not None and slot == len(functions) - 1 and _waiting(asks):
            offset = _answer_once(store, pipe, offset, asks, asked, answer, text, values)
            answer = None  # answered
        offset = _send(store, pipe, offset, slot, values[-1])
    if answer is not None:
        _answer_once(store, pipe, offset, asks, asked, answer, text, values)


def _send(store: int, pipe: int, offset: int, slot: int, value: object) -> int:
    """``value``'s pickle written at ``offset``, and where it lies sent; the next offset."""
    payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    _write_at(store, offset, payload)
    os.write(pipe, _PLACE.pack(slot, offset, len(payload)))
    return offset + len(payload)


def _waiting(fd: int) -> bool:
    """Whether ``fd`` has something to read (or its writer is gone), without waiting."""
    return bool(select.select([fd], [], [], 0)[0])


def _answer_once(
    store: int,
    pipe: int,
    offset: int,
    asks: int,
    asked: int,
    answer: Callable[[str, list[object], object], object],
    text: str,
    values: list[object],
) -> int:
    """In the child: wait for the question (none comes where the parent closes ``asks``),
    and send its answer in the last slot; the next offset."""
    place = _read_exactly(asks, _PLACE.size)
    if len(place) < _PLACE.size:
        return offset
    _, at, size = _PLACE.unpack(place)
    payload = b""
    while len(payload) < size:
        chunk = os.pread(asked, size - len(payload), at + len(payload))
        if not chunk:
            return offset  # never here: the parent wrote the question before saying where
        payload += chunk
    question = pickle.loads(payload)
    return _send(store, pipe, offset, len(values), answer(text, values, question))


def _write_at(fd: int, offset: int, payload: bytes) -> None:
    view = memoryview(payload)
    written = 0
    while written < len(view):
        written += os.pwrite(fd, view[written:], offset + written)


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
        if not child.pid and index == 0 and not child.places:
            child.value(0)  # not forked: the first value is computed at once, as a child would

    def __call__(self) -> T:
        return cast(T, self._child.value(self._index))

    @property
    def in_child(self) -> bool:
        """Whether a forked child computes the value (not yet sent, or not yet read)."""
        return bool(self._child.pid) and self._index not in self._child.places

    def close(self) -> None:
        """Stop the child if this value, or one computed after it, was never asked for (an
        error came first, or it was not needed); a later call computes the value inline."""
        if len(self._child.places) < self._child.slots:
            self._child.close()

    def ask(self, question: object) -> Pending[object] | None:
        """The answer to ``question`` from the child that computes this value (see
        ``in_background_then``'s ``answer``), started now; ``None`` where it answers none, or
        was asked already."""
        child = self._child
        if child.answer is None or child.asked:
            return None
        child.ask(question)
        return Pending(child, child.slots - 1)


def in_background(function: Callable[[str], T], text: str) -> Pending[T]:
    """Start ``function(text)``; the returned ``Pending`` waits for and returns its value."""
    return Pending(_Child((lambda text, _: function(text),), text), 0)


def in_background_then(
    function: Callable[[str], T],
    then: Callable[[str, T], U],
    text: str,
    answer: Callable[[str, list[object], object], object] | None = None,
) -> tuple[Pending[T], Pending[U]]:
    """Start ``function(text)``, and ``then(text, its value)`` after it in the same child:
    the first value is sent as soon as it is known, the second may be asked for or closed
    later (inline, ``then`` runs only when its value is asked for). With ``answer``, the
    child then answers one question about them: ``Pending.ask`` on either returns
    ``answer(text, [value, then's value], question)``."""
    child = _Child(
        (lambda text, _: function(text), lambda text, done: then(text, cast(T, done[0]))),
        text,
        answer,
    )
    return Pending(child, 0), Pending(child, 1)


def will_fork(text: str) -> bool:
    """Whether ``in_background(function, text)`` would compute in a forked child."""
    return len(text) >= MIN_FORK_CHARS and fork_is_safe()


def fork_is_safe() -> bool:
    """Whether this process may fork a child that runs Python code."""
    # No other thread started from Python: ``_thread`` counts them without importing
    # ``threading`` (a millisecond before the fork); ``threading`` also knows foreign threads
    # that have called into Python, where it is loaded.
    threading = sys.modules.get("threading")
    return (
        hasattr(os, "fork")
        and _thread._count() == 0
        and (threading is None or threading.active_count() == 1)
        and "jax" not in sys.modules
        and "jaxlib" not in sys.modules
    )
