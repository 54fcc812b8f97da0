"""``jaxinspect.compile_log()``: the compile log of a block of Python, for scripts and notebooks."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from jaxinspect.runlog.model import Compilation, CompileLog


class CompileLogView:
    """The compilations of a ``compile_log()`` block; displays as a table or HTML.

    Filled while the block runs; read it after the block (``log.report`` is a frozen
    ``CompileLog`` of what was recorded so far).
    """

    def __init__(self, max_compiles: int | None = None) -> None:
        self._compilations: list[Compilation] = []
        self._lock = threading.Lock()
        self._max_compiles = max_compiles

    def add(self, compilation: Compilation) -> None:
        """Record one compilation (the recorder's sink)."""
        with self._lock:
            self._compilations.append(compilation)

    @property
    def report(self) -> CompileLog:
        """What was recorded, as the immutable log the renderers take."""
        with self._lock:
            compilations = tuple(self._compilations)
        return CompileLog(None, compilations, max_compiles=self._max_compiles)

    @property
    def compilations(self) -> tuple[Compilation, ...]:
        """Every compilation, in order."""
        return self.report.compilations

    @property
    def recompilations(self) -> tuple[Compilation, ...]:
        """The compilations of functions that had compiled before."""
        return self.report.recompilations

    def to_json(self) -> str:
        """The log as ``jaxinspect run --format json`` writes it (``runlog.schema.json``)."""
        from jaxinspect.runlog.jsondoc import render_log_json

        return render_log_json(self.report)

    def __rich__(self) -> Any:
        from jaxinspect.runlog.console import render_log_console

        return render_log_console(self.report)

    def _repr_html_(self) -> str:
        from jaxinspect.runlog.html import render_log_html

        return render_log_html(self.report)

    def __repr__(self) -> str:
        report = self.report
        return (
            f"<CompileLog: {len(report.compilations)} compilations, "
            f"{len(report.recompilations)} recompilations>"
        )


@contextmanager
def compile_log(max_compiles: int | None = None) -> Iterator[CompileLogView]:
    """Record every JAX compilation in the block.

    ``with jaxinspect.compile_log() as log: train(...)``, then print ``log`` with rich, show
    it in a notebook, or ``log.to_json()``.

    Args:
        max_compiles: Per-function limit shown in the verdict (``report.over_limit``).
    """
    from jaxinspect.runlog.recorder import CompileRecorder

    view = CompileLogView(max_compiles)
    recorder = CompileRecorder(view.add)
    recorder.start()
    try:
        yield view
    finally:
        recorder.stop()
