"""While loops whose trip count depends on the input values, read from the optimized HLO.

XLA writes ``known_trip_count`` into a while loop's backend config when it proves the count
(a ``fori_loop``/``scan`` over a fixed range); any other while loop runs as often as its
inputs' values say, so the program's run time holds for the inputs it ran on only.
"""

from __future__ import annotations

from typing import Any

from jaxinspect import jaxapi
from jaxinspect.xla.hlotext import unproved_while_loops


def data_dependent_loops(compiled: Any) -> int:
    """How many while loops of ``compiled`` have no trip count XLA proved (the module text
    the run's other analyses print, read with their trip-count pattern)."""
    return unproved_while_loops(jaxapi.compiled_module_text(compiled, "the loops' trip counts"))
