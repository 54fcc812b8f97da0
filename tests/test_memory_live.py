"""The memory timeline's live bytes, kept up to date per step, equal the union recomputed."""

from __future__ import annotations

import random

import pytest

from jaxinspect.stages.livepeak import live_bytes
from jaxinspect.xla.bufferassign import Allocation, AssignedValue, PlacedValue


def _placed(seed: int, steps: int) -> list[PlacedValue]:
    """Values in three allocations, overlapping, sharing bytes, some zero-sized or reversed."""
    rng = random.Random(seed)
    out = []
    for index in range(3):
        size = rng.choice([64, 256, 1024])
        values = []
        for vid in range(rng.randint(1, 25)):
            offset = rng.randrange(0, size)
            width = rng.choice([0, 4, 16, 64, size - offset])
            values.append(AssignedValue(vid, f"i{vid}", "{}", False, width, offset, "f32[]"))
        allocation = Allocation(index, size, "temp", None, None, False, 0, tuple(values))
        for value in values:
            first = rng.randrange(-2, steps + 2)
            last = first + rng.randrange(-3, steps)  # a last step before the first, at times
            out.append(PlacedValue(value, allocation, first, last))
    return out


def _recomputed(placed: list[PlacedValue], steps: int) -> list[int]:
    """The definition: at each step, the union of every live value's bytes per allocation."""
    out = []
    for step in range(steps):
        live = [p for p in placed if 0 <= p.first <= step <= max(p.first, p.last)]
        total = 0
        for index in {p.allocation.index for p in live}:
            covered: set[int] = set()
            for p in live:
                if p.allocation.index == index:
                    covered.update(range(p.value.offset, p.end))
            total += len(covered)
        out.append(total)
    return out


@pytest.mark.parametrize("seed", range(20))
def test_live_bytes_equal_the_union_of_live_values_at_every_step(seed):
    steps = 30
    placed = _placed(seed, steps)
    assert live_bytes(placed, steps) == _recomputed(placed, steps)
