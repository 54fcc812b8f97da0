"""The plain statements a bench report makes about how it measured (no jax here)."""

from __future__ import annotations

from jaxinspect.bench.report import BenchResult, BenchSettings


def report_notes(result: BenchResult, settings: BenchSettings) -> tuple[str, ...]:
    """What a reader must know to interpret the numbers, one sentence each."""
    notes = [
        f"Cold phases: {settings.cold_runs} fresh Python process(es) per round, because "
        "in-process caches make a second 'first call' nearly free. Process start and "
        "`import jax` are shown as their own phases, not hidden in compile.",
        "first_call and second_call include the host-to-device transfer of the inputs and "
        "are waited on with block_until_ready.",
        f"Cached calls: {result.cached.warmup} untimed warm-up call(s), then "
        f"{result.cached.count} timed call(s) of the executable compiled once in this "
        "process, each waited on with block_until_ready; garbage collection paused while "
        "timing.",
        f"Pipelined: {result.pipelined.calls} calls dispatched back to back and waited on "
        f"once, {result.pipelined.rounds} rounds (median shown).",
    ]
    if settings.compilation_cache is None:
        notes.append("The persistent compilation cache was disabled in the cold processes.")
    else:
        notes.append(
            f"Persistent compilation cache in {settings.compilation_cache}, with "
            "jax_persistent_cache_min_compile_time_secs=0 and "
            "jax_persistent_cache_min_entry_size_bytes=0 so that small programs are cached "
            "too. The empty-cache round is `cold`; the cache skips compile only, trace and "
            "lower still run."
        )
    if result.inputs is not None:
        notes.append(_inputs_note(result))
    if result.caveat is not None:
        notes.append(f"Caution: {result.caveat}.")
    if result.donated:
        notes.append(
            f"Donated argument(s) {', '.join(result.donated)} are copied afresh on the device "
            "before every call, outside the timed region."
        )
    return tuple(notes)


def _inputs_note(result: BenchResult) -> str:
    """Which inputs were random and which the factories built (``--inputs``)."""
    assert result.inputs is not None
    origins = result.inputs
    parts = []
    if origins.random:
        parts.append(f"seeded random values for {', '.join(origins.random)}")
    if origins.factory:
        parts.append(f"the arrays the factories return for {', '.join(origins.factory)}")
    said = " and ".join(parts) or "no traced inputs"
    return f"Inputs (--inputs {origins.source}): {said}."
