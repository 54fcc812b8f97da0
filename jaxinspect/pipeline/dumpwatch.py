"""The peak's dumps read while XLA is still compiling (no jax import).

On CPU, XLA writes the optimized module's buffer assignment, live ranges and memory-usage
report as soon as it has scheduled the module, then spends the rest of the compile generating
code: two fifths of it at 48 transformer blocks (0.8 of 2.0 s), with one core busy. Parsing the
first two and counting the live bytes at every step (``stages/livepeak.schedule_steps``: 70 ms
at 48 blocks, 150 ms at 96) can run meanwhile, in a thread, on another core, since
``Lowered.compile`` releases the GIL.

The thread only warms ``schedule_steps``' cache (keyed by the two texts). The peak is still
read after the compile from the files as they then are: a read that came too early (a backend
that writes its files in another order) costs time, never a wrong figure.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from jaxinspect.pipeline.dumps import written_peak_texts
from jaxinspect.pipeline.whilecompiling import spare_core

#: Seconds between two looks at the dump folder: a listing of a few dozen names, a few
#: microseconds of the GIL each time.
_POLL_S = 0.01


class PeakDumpWatch:
    """A context manager around the compile: while it runs, a thread waits for the peak's
    dumps in ``folder`` and calls ``warm(buffer_assignment, live_range)`` once they are
    written; leaving stops the wait (or lets a started ``warm`` finish: its result is the
    next thing the caller reads)."""

    def __init__(self, folder: Path, warm: Callable[[str, str], object]) -> None:
        self._folder = folder
        self._warm = warm
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> PeakDumpWatch:
        if spare_core():  # on one core the work would only take turns with the compile
            self._thread = threading.Thread(
                target=self._run, name="jaxinspect-peak-dumps", daemon=True
            )
            self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _run(self) -> None:
        while not self._done.wait(_POLL_S):
            texts = written_peak_texts(self._folder)
            if texts is not None:
                # A failure here is met again, and reported, where the peak is read.
                with contextlib.suppress(Exception):
                    self._warm(*texts)
                return
