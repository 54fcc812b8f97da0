"""XLA's dump of one compilation: a private folder, the compiler options, the files read back.

``Lowered.compile(compiler_options={"xla_dump_to": DIR, ...})`` makes XLA write, for that one
compilation only, the module as it enters XLA, the module after every pass that changed it
(with ``xla_dump_hlo_pass_re``), the optimized module, and its buffer assignment, live ranges
and memory-usage report. ``compilation_dump`` gives the options, the caller compiles (once),
``CompilationDump.read`` turns the files into a frozen ``DumpedModule``, and the folder is
deleted on the way out, whatever happened (an error, Ctrl-C)::

    with compilation_dump(passes=True) as dump:
        artifacts = run_pipeline(..., compiler_options=dump.compiler_options)
        module = dump.read(artifacts.compiled)
    module.passes, module.buffer_assignment, ...  # plain text, the folder already gone

The persistent compilation cache is off inside the block: a cache hit compiles nothing, and
XLA then writes neither pass snapshots nor a buffer assignment.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jaxinspect import jaxapi
from jaxinspect.errors import JaxInspectError

# module_0002.jit_f.0013.HLO_passes_after_layout_assignment.after_fusion.before_fusion-wrapper.txt
# (the name after "module_NNNN." is read from the before- or after-optimizations file, since a
# module's name may hold dots; snapshots a pass takes in the middle of its work, such as
# copy-insertion's steps, have no "before_").
_MODULE_FILE = re.compile(
    r"^module_(\d+)\.(.+)\.(?:before_optimizations|(?:[A-Za-z0-9]+_|sm_[0-9.]+[a-z]?_gpu_)?"
    r"after_optimizations)\.txt$"
)
_PASS_FILE = re.compile(r"^(\d+)\.(.+?)\.after_(.+?)(?:\.before_(.+))?\.txt$")
# cpu_after_optimizations.txt, cpu_after_optimizations-buffer-assignment.txt, ...; the prefix
# names the platform's compiler (the GPU compiler's names the target: sm_9.0a_gpu_).
_OPTIMIZED_FILE = re.compile(
    r"^(?:[A-Za-z0-9]+_|sm_[0-9.]+[a-z]?_gpu_)?after_optimizations(|-buffer-assignment|-live-range|-memory-usage-report)"
    r"\.txt$"
)
_OPTIMIZED_FIELDS = {
    "": "after_optimizations",
    "-buffer-assignment": "buffer_assignment",
    "-live-range": "live_range",
    "-memory-usage-report": "memory_usage_report",
}


@dataclass(frozen=True, slots=True)
class PassSnapshot:
    """The module as XLA printed it after one pass, in the order the passes ran.

    Attributes:
        sequence: XLA's snapshot number for the module (``NNNN`` in the file name), increasing.
        pipeline: The pass pipeline that ran the pass (``simplification``...).
        after: The pass that just ran; ``pipeline-start`` for the module entering a pipeline
            (printed whether or not anything changed since the last snapshot).
        before: The pass about to run (``pipeline-end`` at the end); ``None`` for a snapshot
            a pass took in the middle of its own work (copy-insertion's steps).
        text: The module, printed as ``HloModule.to_string`` does.
    """

    sequence: int
    pipeline: str
    after: str
    before: str | None
    text: str


@dataclass(frozen=True, slots=True)
class DumpedModule:
    """What XLA dumped for one compiled module; each text is ``None`` when XLA wrote none.

    Attributes:
        module_id: XLA's module id (``module_NNNN``; a process-wide counter).
        name: The module's name (``jit_predict``).
        passes: The snapshots after each pass in order; ``None`` when none were asked for or
            XLA wrote none (``reasons`` says why).
        before_optimizations: The module as it enters XLA (converted from StableHLO); printed
            without metadata unless pass snapshots were asked for (``compilation_dump``).
        after_optimizations: The optimized, scheduled module (the one XLA compiled); likewise.
        buffer_assignment: ``*-buffer-assignment.txt``: where each value lives.
        live_range: ``*-live-range.txt``: each value's first and last step of the schedule.
        memory_usage_report: ``*-memory-usage-report.txt``: XLA's summary of the allocations.
        reasons: ``(field, reason)`` for each field that is ``None``.
    """

    module_id: int
    name: str
    passes: tuple[PassSnapshot, ...] | None
    before_optimizations: str | None
    after_optimizations: str | None
    buffer_assignment: str | None
    live_range: str | None
    memory_usage_report: str | None
    reasons: tuple[tuple[str, str], ...] = ()

    def reason(self, field: str) -> str | None:
        """Why ``field`` is ``None`` (``None`` when it has a value)."""
        return next((why for name, why in self.reasons if name == field), None)


class CompilationDump:
    """A private dump folder for one compilation; made by ``compilation_dump``."""

    def __init__(self, folder: Path, *, passes: bool) -> None:
        self.folder = folder
        self.passes = passes

    @property
    def compiler_options(self) -> dict[str, Any]:
        """The options to pass to ``Lowered.compile`` (``run_pipeline(compiler_options=...)``)."""
        options: dict[str, Any] = {"xla_dump_to": str(self.folder)}
        if self.passes:
            options["xla_dump_hlo_pass_re"] = ".*"
        else:
            # Only the buffer assignment, live ranges and usage report are read then, which
            # print no metadata: the module texts XLA also writes (before and after
            # optimization) are printed without it, a third less text (1.4 of 4.4 MB at 96
            # transformer blocks) printed inside the timed compile.
            options["xla_dump_disable_metadata"] = True
        return options

    def read(self, compiled: Any = None, *, module_name: str | None = None) -> DumpedModule:
        """Read what XLA wrote for the compilation's module.

        Args:
            compiled: The ``jax.stages.Compiled`` that dumped here; its module's name picks
                the files when the folder holds more than one module.
            module_name: The module's name, instead of ``compiled``.

        Raises:
            JaxInspectError: (internal) XLA wrote nothing for the module: the options did
                not reach the compilation.
        """
        if module_name is None and compiled is not None:
            module = jaxapi.optimized_hlo_module(compiled, "the compilation's dump")
            module_name = str(module.name)
        return read_dump_folder(self.folder, module_name=module_name, passes=self.passes)


@contextmanager
def compilation_dump(*, passes: bool = False) -> Iterator[CompilationDump]:
    """A private temporary dump folder for the one compilation made inside the block.

    The folder and everything in it is deleted when the block ends, normally or not; read
    the files (``CompilationDump.read``) inside the block. The persistent compilation cache
    is off inside the block, so the compilation really happens and dumps.

    Args:
        passes: Also dump the module after every pass (``xla_dump_hlo_pass_re=".*"``).
    """
    folder = Path(tempfile.mkdtemp(prefix="jaxinspect-dump-"))
    try:
        with jaxapi.compilation_cache_disabled():
            yield CompilationDump(folder, passes=passes)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def read_dump_folder(folder: Path, *, module_name: str | None, passes: bool) -> DumpedModule:
    """Read one module's files from an XLA dump folder (see ``CompilationDump.read``).

    Of several modules the one named ``module_name`` is read (the last, when XLA compiled it
    more than once); with ``module_name=None`` the folder must hold one module.

    Raises:
        JaxInspectError: (internal) no module's files, or no way to tell which module.
    """
    names = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
    module_id, name = _pick_module(names, module_name, folder)
    prefix = f"module_{module_id:04d}.{name}."
    own = [n.removeprefix(prefix) for n in names if n.startswith(prefix)]
    texts: dict[str, str | None] = dict.fromkeys(_OPTIMIZED_FIELDS.values())
    snapshots: list[PassSnapshot] = []
    for rest in own:
        optimized = _OPTIMIZED_FILE.match(rest)
        if optimized:
            texts[_OPTIMIZED_FIELDS[optimized.group(1)]] = _read(folder / (prefix + rest))
            continue
        step = _PASS_FILE.match(rest) if passes else None  # hundreds of files: when asked
        if step:
            seq, pipeline, after, before = step.groups()
            text = _read(folder / (prefix + rest))
            snapshots.append(PassSnapshot(int(seq), pipeline, after, before, text))
    snapshots.sort(key=lambda s: s.sequence)
    before_path = folder / f"{prefix}before_optimizations.txt"
    texts["before_optimizations"] = _read(before_path) if before_path.is_file() else None
    reasons = [(field, _missing_reason(field)) for field, text in texts.items() if text is None]
    pass_tuple: tuple[PassSnapshot, ...] | None = tuple(snapshots)
    if not passes:
        pass_tuple = None
        reasons.append(("passes", "pass-by-pass snapshots were not asked for"))
    elif not snapshots:
        pass_tuple = None
        reasons.append(("passes", _missing_reason("passes")))
    return DumpedModule(
        module_id=module_id,
        name=name,
        passes=pass_tuple,
        before_optimizations=texts["before_optimizations"],
        after_optimizations=texts["after_optimizations"],
        buffer_assignment=texts["buffer_assignment"],
        live_range=texts["live_range"],
        memory_usage_report=texts["memory_usage_report"],
        reasons=tuple(reasons),
    )


def written_peak_texts(folder: Path) -> tuple[str, str] | None:
    """The buffer assignment and live ranges of the folder's one module, once XLA has written
    them; ``None`` before, or where the folder holds other than one module's.

    XLA writes a module's buffer assignment, then its live ranges, then its memory-usage
    report: with the report there, the other two are whole. (A read that comes too early
    only costs time: ``dumpwatch`` warms a cache with it, and the peak is read afresh.)
    """
    try:
        names = [entry.name for entry in os.scandir(folder)]
    except OSError:
        return None
    reports = [n for n in names if n.endswith("after_optimizations-memory-usage-report.txt")]
    if len(reports) != 1:
        return None
    stem = reports[0].removesuffix("-memory-usage-report.txt")
    try:
        return (
            _read(folder / f"{stem}-buffer-assignment.txt"),
            _read(folder / f"{stem}-live-range.txt"),
        )
    except OSError:
        return None


def _pick_module(names: list[str], module_name: str | None, folder: Path) -> tuple[int, str]:
    found = sorted({(int(m.group(1)), m.group(2)) for m in map(_MODULE_FILE.match, names) if m})
    named = [m for m in found if m[1] == module_name]
    # XLA may write a name differently in a file name; one module alone is the one compiled.
    modules = named or (found if len(found) == 1 else [])
    if not modules or (module_name is None and len(modules) > 1):
        listed = ", ".join(f"module_{i:04d}.{n}" for i, n in found) or "no module"
        wanted = "one module" if module_name is None else f"module {module_name!r}"
        raise JaxInspectError(
            f"XLA's dump folder {folder} holds {listed}, not {wanted}: the dump options did "
            "not reach the compilation",
            hint="This is a jaxinspect bug (jaxinspect/pipeline/dumps.py): please report it.",
        )
    return max(modules)


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def _missing_reason(field: str) -> str:
    what = {
        "passes": "pass-by-pass snapshots",
        "before_optimizations": "the module before optimizations",
        "after_optimizations": "an optimized module",
        "buffer_assignment": "a buffer assignment",
        "live_range": "a live-range dump",
        "memory_usage_report": "a memory-usage report",
    }[field]
    return f"XLA wrote no {what} for this compilation (this backend's compiler does not dump one)"
