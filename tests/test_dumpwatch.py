"""The peak's dumps read while XLA still compiles (``pipeline/dumpwatch.py``)."""

from __future__ import annotations

import gc
import threading
import time
from pathlib import Path

import pytest

from conftest import sample
from jaxinspect.pipeline import dumpwatch
from jaxinspect.pipeline.dumps import written_peak_texts
from jaxinspect.pipeline.whilecompiling import spare_core

_STEM = "module_0004.jit_f.cpu_after_optimizations"


def _write(folder: Path, suffix: str, text: str) -> None:
    (folder / f"{_STEM}{suffix}.txt").write_text(text)


def _recorder() -> tuple[list[tuple[str, str, str]], object]:
    calls: list[tuple[str, str, str]] = []

    def warm(buffer_assignment: str, live_range: str) -> None:
        calls.append((threading.current_thread().name, buffer_assignment, live_range))

    return calls, warm


def test_no_texts_until_the_usage_report_is_written(tmp_path):
    _write(tmp_path, "-buffer-assignment", "allocation 0: ...")
    _write(tmp_path, "-live-range", "InstructionSequence: ...")
    assert written_peak_texts(tmp_path) is None  # XLA writes the report last
    _write(tmp_path, "-memory-usage-report", "Total bytes: 4")
    assert written_peak_texts(tmp_path) == ("allocation 0: ...", "InstructionSequence: ...")
    assert written_peak_texts(tmp_path / "gone") is None


def test_two_modules_reports_are_left_alone(tmp_path):
    for stem in (_STEM, "module_0005.jit_g.cpu_after_optimizations"):
        for suffix in ("-buffer-assignment", "-live-range", "-memory-usage-report"):
            (tmp_path / f"{stem}{suffix}.txt").write_text(stem)
    assert written_peak_texts(tmp_path) is None


@pytest.mark.skipif(not spare_core(), reason="one core: no thread is started")
def test_the_texts_are_warmed_in_a_thread_once_written(tmp_path):
    calls, warm = _recorder()
    with dumpwatch.PeakDumpWatch(tmp_path, warm):
        _write(tmp_path, "-buffer-assignment", "assignment")
        _write(tmp_path, "-live-range", "ranges")
        time.sleep(0.05)
        assert calls == []  # the report is not there yet: the two may still be written
        _write(tmp_path, "-memory-usage-report", "report")
        deadline = time.monotonic() + 5
        while not calls and time.monotonic() < deadline:
            time.sleep(0.01)
    assert calls == [("jaxinspect-peak-dumps", "assignment", "ranges")]


def test_leaving_stops_the_wait_and_a_failing_warm_is_silent(tmp_path):
    def fails(buffer_assignment: str, live_range: str) -> None:
        raise ValueError("not a buffer assignment")

    start = time.monotonic()
    with dumpwatch.PeakDumpWatch(tmp_path, fails):
        pass  # nothing written: the thread waits, then leaves with the block
    assert time.monotonic() - start < 1
    for suffix in ("-buffer-assignment", "-live-range", "-memory-usage-report"):
        _write(tmp_path, suffix, "x")
    with dumpwatch.PeakDumpWatch(tmp_path, fails):
        time.sleep(0.05)  # the warm fails in the thread; nothing is raised here
    assert not [t for t in threading.enumerate() if t.name == "jaxinspect-peak-dumps"]


def test_one_core_starts_no_thread(tmp_path, monkeypatch):
    monkeypatch.setattr(dumpwatch, "spare_core", lambda: False)
    calls, warm = _recorder()
    for suffix in ("-buffer-assignment", "-live-range", "-memory-usage-report"):
        _write(tmp_path, suffix, "x")
    with dumpwatch.PeakDumpWatch(tmp_path, warm):
        time.sleep(0.05)
    assert calls == []


@pytest.mark.skipif(not spare_core(), reason="one core: the peak is read after the compile")
def test_a_real_compile_has_its_peak_counted_before_the_compile_returns(monkeypatch):
    """A 12-block stack: XLA writes the dumps two fifths of the compile before its end. The
    count made then, in the thread, is the one the report's peak is read from."""
    from jaxinspect.inputs.spec import load_spec
    from jaxinspect.inputs.target import load_target
    from jaxinspect.stages import livepeak
    from jaxinspect.stages.runner import InspectOptions, run_inspection

    counted = livepeak.schedule_steps
    calls = []

    def recording(buffer_assignment: str, live_range: str) -> object:
        calls.append((threading.current_thread().name, buffer_assignment, live_range))
        collector.append((gc.isenabled(), gc.get_freeze_count() > 0))
        return counted(buffer_assignment, live_range)

    collector: list[tuple[bool, bool]] = []

    monkeypatch.setattr(livepeak, "schedule_steps", recording)
    counted.cache_clear()
    spec = load_spec(sample("transformer_stack.yaml"))
    loaded = load_target(f"{sample('transformer_stack.py')}:stack")
    options = InspectOptions(backend="cpu", execute=False, live_peak=True, stage_texts=False)
    report, _ = run_inspection(loaded, spec, options)
    assert [name for name, *_ in calls] == ["jaxinspect-peak-dumps", "MainThread"]
    assert calls[0][1:] == calls[1][1:]  # the same texts: the files were whole when read
    assert counted.cache_info().hits == 1  # counted once
    steps = counted(*calls[1][1:])
    assert report.memory.peak.bytes == steps.per_step[steps.peak_step] > 0
    # No collection walks jax's objects while the run reads the peak; after it, as before.
    assert collector[1] == (False, True)
    assert gc.isenabled() and gc.get_freeze_count() == 0
