"""Python work done in a thread while XLA compiles (no jax import).

``Lowered.compile`` releases the GIL for the whole of XLA's compile, and on CPU that compile
keeps one core busy: printing the jaxpr (a third of a second at 96 transformer blocks, pure
Python) can run meanwhile on another. Only work that reads what tracing made (Python objects
that nothing changes any more) belongs here: the MLIR module is XLA's input, and is not read
beside it. The compile's own timing is unchanged where the work ends first (it reads nothing
that the compile waits for); with a single core to run on, the work is done after the compile
instead, as before. The same holds after the compile for XLA's other work that releases the
GIL: ``stages/runner.py`` asks for ``memory_analysis()`` in such a thread while the module and
the stage texts are printed.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class WhileCompiling(Generic[T]):
    """``work()`` run in a thread of its own, started at once where a second core is free
    (and ``start``: else computed when its value is asked for)."""

    def __init__(
        self, work: Callable[[], T], *, start: bool = True, name: str = "jaxinspect-while-compiling"
    ) -> None:
        self._work = work
        self._value: tuple[T] | None = None
        self._thread: threading.Thread | None = None
        if start and spare_core():
            self._thread = threading.Thread(target=self._run, name=name, daemon=True)
            self._thread.start()

    def value(self) -> T:
        """The work's value: waited for, or computed here where no thread ran or it failed
        (an error is then raised here, where the caller handles it)."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._value is None:
            self._value = (self._work(),)
        return self._value[0]

    def join(self) -> None:
        """Wait for the thread, if one runs (an error it met is raised by ``value``)."""
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        try:
            self._value = (self._work(),)
        except BaseException:  # noqa: BLE001 - ``value`` computes it again and raises there
            self._value = None


def spare_core() -> bool:
    """Whether this process may run on more than one core."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) > 1
    return (os.cpu_count() or 1) > 1
