"""Garbage collection kept out of timed intervals: collected before each, paused during it.

Every timed interval of jaxinspect (trace, lower, compile, the first call, the cached calls,
the phases of a cold process) runs inside ``quiet_gc``; this module is the one place that
decides how. No jax import here.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def quiet_gc() -> Iterator[None]:
    """Collect garbage, then pause the collector for the timed interval inside.

    A collection that lands inside a timed step measures the size of the Python heap, not the
    step: jaxinspect's heap is larger than a plain script's, so a full collection inside
    ``lower`` made it read about 4x a plain script's figure. Collecting first also means the
    step does not inherit another step's garbage.
    """
    gc.collect()
    with paused_gc():
        yield


@contextmanager
def frozen_heap() -> Iterator[None]:
    """Make each ``quiet_gc`` inside walk only the objects created since entering.

    A full collection walks every tracked object, about 60 ms with jax loaded on a small
    machine, and would be paid before every timed step. ``gc.freeze`` sets the objects alive
    now aside until the end (``gc.unfreeze``), so each collection before a step takes a few
    milliseconds. Nested uses are no-ops; so is a use in a program that froze objects itself,
    whose arrangement is left alone (collections are then full ones).
    """
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@contextmanager
def paused_gc() -> Iterator[None]:
    """The collector paused inside, with no collection first: for a stretch of work that
    makes many objects and frees them by reference counting (the per-op analysis of a large
    module, the report built from it, its JSON text).

    Each object made counts toward the next collection, and a full one walks every object
    alive, the analysis' own included: at 96 transformer blocks the collections inside
    ``cost``'s analysis and report took 0.3-0.4 s, about a third of that work. What the
    analysis leaves in cycles waits for the first collection after the block.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
