"""While loops whose trip count depends on the input values, read from the optimized HLO.

XLA writes ``known_trip_count`` into a while loop's backend config when it proves the count
(a ``fori_loop``/``scan`` over a fixed range); any other while loop runs as often as its
inputs' values say, so the program's run time holds for the inputs it ran on only.
"""

from __future__ import annotations

import re
from typing import Any

from jaxinspect import jaxapi

# An instruction line of the module text: `%name = shape while(...), ..., backend_config=...`.
_WHILE = re.compile(r"=\s*\S.*?\bwhile\(")
_KNOWN_TRIPS = re.compile(r'"known_trip_count":\{"n":"\d+"\}')


def data_dependent_loops(compiled: Any) -> int:
    """How many while loops of ``compiled`` have no trip count XLA proved."""
    text = jaxapi.optimized_hlo_text(compiled)
    return sum(
        1 for line in text.splitlines() if _WHILE.search(line) and not _KNOWN_TRIPS.search(line)
    )
