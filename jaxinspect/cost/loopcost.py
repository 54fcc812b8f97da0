"""Cost per trip of every while loop, and ``--assume-trips``: a trip count for a loop XLA
could not count, turning the lower bound into an estimate labelled as assumed."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace

from jaxinspect.errors import UsageError
from jaxinspect.jsonfields import Positive
from jaxinspect.xla.breakdown import UNKNOWN_TRIPS, CostFlag, LoopInfo, ProgramCost
from jaxinspect.xla.xlacost import XlaCost

#: Flag kind of a loop whose trip count the user assumed: flagged, no longer a lower bound.
ASSUMED_KIND = "assumed-trip-count"
_ASSUMPTION = re.compile(r"^(?P<loop>.+)=(?P<trips>\d+)$")
_LINE = re.compile(r"^(?P<file>.+):(?P<line>\d+)$")


@dataclass(frozen=True, slots=True)
class TripAssumption:
    """One ``--assume-trips LOOP=N``: a loop's name (``while.3``) or ``file.py:LINE``, and N."""

    loop: str
    trips: int

    @property
    def text(self) -> str:
        """As the user wrote it: ``while.3=40``."""
        return f"{self.loop}={self.trips}"


@dataclass(frozen=True, slots=True)
class AssumedTrips:
    """A loop counted with an assumed trip count, and the assumption that chose it."""

    loop: str  # The while instruction.
    trips: Positive
    assumption: str  # ``LOOP=N`` as given (a loop's name or ``file.py:LINE``).


def parse_assumption(text: str) -> TripAssumption:
    """``LOOP=N`` (N ≥ 1; LOOP a loop's name or ``file.py:LINE``).

    Raises:
        UsageError: Not of that form.
    """
    match = _ASSUMPTION.match(text.strip())
    if match is None or int(match.group("trips")) < 1:
        raise UsageError(
            f"--assume-trips {text!r}: expected LOOP=N, LOOP a loop's name as the while-loop "
            "table shows it (while.3) or its source line (file.py:LINE), N a positive integer"
        )
    return TripAssumption(match.group("loop").strip(), int(match.group("trips")))


def apply_assumptions(
    program: ProgramCost, assumptions: tuple[TripAssumption, ...]
) -> tuple[ProgramCost, tuple[AssumedTrips, ...]]:
    """``program`` with each assumed loop's body run N times and its condition N + 1.

    Ops inside an assumed loop (nested loops too) run N times as often; the loop's
    unknown-trip-count flag becomes an ``assumed-trip-count`` one, which leaves the totals an
    estimate, not a lower bound.

    Raises:
        UsageError: An assumption names no loop, or only loops with a proved trip count.
    """
    if not assumptions:
        return program, ()
    chosen: dict[str, AssumedTrips] = {}
    for assumption in assumptions:
        for loop in _matching(program.loops, assumption):
            chosen[loop.name] = AssumedTrips(loop.name, assumption.trips, assumption.text)
    trips = {name: a.trips for name, a in chosen.items()}
    ops = tuple(replace(op, runs=op.runs * _factor(op.loops, trips)) for op in program.ops)
    loops = tuple(
        replace(
            loop,
            runs=loop.runs * _factor(loop.enclosing, trips),
            assumed_trips=trips.get(loop.name),
        )
        for loop in program.loops
    )
    flags = tuple(_reflag(flag, chosen) for flag in program.flags)
    assumed = replace(program, ops=ops, loops=loops, flags=flags)
    return assumed, tuple(chosen.values())


def _matching(loops: tuple[LoopInfo, ...], assumption: TripAssumption) -> list[LoopInfo]:
    named = [loop for loop in loops if loop.name == assumption.loop]
    line = _LINE.match(assumption.loop)
    found = named or ([] if line is None else _at_line(loops, line["file"], int(line["line"])))
    if not found:
        known = ", ".join(_describe(loop) for loop in loops) or "the program has none"
        raise UsageError(
            f"--assume-trips {assumption.text}: no while loop is called {assumption.loop!r} "
            f"or is on that line (loops: {known})"
        )
    unknown = [loop for loop in found if loop.trip_count is None]
    if not unknown:
        counted = ", ".join(f"{loop.name}: {loop.trip_count}" for loop in found)
        raise UsageError(
            f"--assume-trips {assumption.text}: XLA proved the trip count ({counted}); "
            "assumptions are for loops it could not count"
        )
    return unknown


def _at_line(loops: tuple[LoopInfo, ...], file: str, line: int) -> list[LoopInfo]:
    """Loops whose source is ``file:line``: a bare name matches the file's base name, a path
    the file itself (relative to the current folder or absolute)."""
    wanted = os.path.realpath(file) if os.sep in file else None
    return [
        loop
        for loop in loops
        if loop.source is not None
        and loop.source.line == line
        and (
            os.path.basename(loop.source.file) == file
            if wanted is None
            else os.path.realpath(loop.source.file) == wanted
        )
    ]


def _describe(loop: LoopInfo) -> str:
    return loop.name if loop.source is None else f"{loop.name} at {loop.source.label}"


def _factor(path: tuple[tuple[str, str], ...], trips: dict[str, int]) -> int:
    """How much more often an op at ``path`` runs once the assumed loops run their trips
    (they were counted once per run: body and condition alike)."""
    factor = 1
    for loop, role in path:
        if loop in trips:
            factor *= trips[loop] if role == "body" else trips[loop] + 1
    return factor


def _reflag(flag: CostFlag, chosen: dict[str, AssumedTrips]) -> CostFlag:
    assumed = chosen.get(flag.instruction)
    if assumed is None or flag.kind != "unknown-trip-count":
        return flag
    why = "no proved trip count; assumed with --assume-trips: an estimate, not a lower bound"
    detail = f"{UNKNOWN_TRIPS}; --assume-trips {assumed.assumption} counts {assumed.trips} trips"
    return CostFlag(ASSUMED_KIND, flag.instruction, flag.computation, why, detail)


def with_per_trip(program: ProgramCost) -> ProgramCost:
    """``program`` with each loop's ``per_trip``: its body once and its condition once.

    Inner loops count at their trip counts (proved or assumed; once when unknown), so an
    outer loop's trip holds its inner loops' work. Linear in the ops times their nesting.
    """
    sums: dict[tuple[str, str], XlaCost] = {}
    incomplete: set[str] = set()
    for op in program.ops:
        for name, role in op.loops:
            if op.total is None:
                incomplete.add(name)
                continue
            sums[(name, role)] = sums.get((name, role), XlaCost()).plus(op.total)
    loops = []
    for loop in program.loops:
        trips = loop.trips
        body_runs = loop.runs * (1 if trips is None else trips)
        test_runs = loop.runs * (1 if trips is None else trips + 1)
        body = sums.get((loop.name, "body"), XlaCost()).scaled(1 / body_runs)
        test = sums.get((loop.name, "condition"), XlaCost()).scaled(1 / test_runs)
        loops.append(
            replace(loop, per_trip=body.plus(test), per_trip_lower_bound=loop.name in incomplete)
        )
    return replace(program, loops=tuple(loops))
