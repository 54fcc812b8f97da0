"""One pass over an HLO module's text: its op counts, fusion callees and computation headers.

Builtins only (no dataclasses, nothing of the line diff): ``diff`` runs this in a child forked
before the rest of the diff is imported, and the child imports no more than it needs.
``hlocount`` puts the results together and derives the new side's counts from a line diff.
"""

from __future__ import annotations

import re
from array import array
from collections import Counter
from functools import cache

# The first " = " of an instruction line is its assignment (metadata and configs have none).
OPCODE = re.compile(r" = (?:\([^\n]*?\)|[^ \n]+) ([a-z][\w\-]*)\(")
HEADER = re.compile(r"\n(?:ENTRY )?%([\w.\-]+) [^\n]*\{(?=\n|\Z)")
FUSED_CALL = re.compile(r" fusion\([^\n]*?calls=%([\w.\-]+)")
# XLA prints a fusion's kind right before its callee; a literal start scans twice as fast.
KIND_CALL = re.compile(r" kind=k\w+, calls=%([\w.\-]+)")

#: A module's scan: ops outside fused computations, fusion callees, and its computations'
#: names (one per line), header starts and header ends (``hlocount.Bodies`` holds the last
#: three with the text's length).
ModuleScan = tuple[Counter[str], Counter[str], str, "array[int]", "array[int]"]


class _Scan:
    """The patterns of a whole-text count, compiled with the given flags.

    An ASCII text (as XLA prints it) is read with ``re.ASCII``: the same matches there
    (``\\w`` means the same on ASCII characters), and its character classes test faster
    (the count of a 200,000-line module about 15% faster). Splitting the text into strings
    instead of scanning it in place ran fewer instructions but took longer: fresh memory.
    """

    def __init__(self, flags: int) -> None:
        self.opcode = re.compile(OPCODE.pattern, flags)
        # HEADER as two patterns: a leading optional group leaves the regex engine nothing
        # but "\n" to search for, and it tries the rest at every line (a quarter of a count).
        self.header = re.compile(HEADER.pattern.replace("(?:ENTRY )?", ""), flags)
        self.entry = re.compile(HEADER.pattern.replace("(?:ENTRY )?", "ENTRY "), flags)
        self.calls = (re.compile(KIND_CALL.pattern, flags), re.compile(FUSED_CALL.pattern, flags))


@cache
def _scan_with(flags: int) -> _Scan:
    # Compiled on first use: in ``diff``'s forked child, not before the fork.
    return _Scan(flags)


def _scan(text: str) -> _Scan:
    return _scan_with(re.ASCII if text.isascii() else 0)


def scan_module(text: str) -> ModuleScan:
    """Opcode counts outside fused computations, fusion callees and where computations lie."""
    scan = _scan(text)
    calls = fusion_calls(text, scan)
    names, starts, ends = headers(text, scan)
    # findall on the text itself, body by body: slicing or splitting 14 MB into new strings
    # costs more than scanning it (fresh memory is slow to touch).
    ops = scan.opcode.findall(text, 0, starts[0] if starts else len(text))
    if starts:
        stops = [*starts[1:], len(text)]
        for name, start, stop in zip(names.split("\n"), ends, stops, strict=True):
            if name not in calls:
                ops += scan.opcode.findall(text, start, stop)
    return Counter(ops), calls, names, starts, ends


def headers(text: str, scan: _Scan | None = None) -> tuple[str, array[int], array[int]]:
    """The computations' names (one per line, ``""`` if none), where each header starts and
    where it ends (its body's start): the matches of ``HEADER``, in order."""
    scan = scan or _scan(text)
    found = [(m.start(), m.end(), m.group(1)) for m in scan.header.finditer(text)]
    # ENTRY heads one computation of a module: looked for with str.find, which skips ahead
    # (a regex search would walk the text once more); each match is on a line of its own.
    entry = text.find("\nENTRY %")
    if entry >= 0:
        while entry >= 0:
            match = scan.entry.match(text, entry)
            if match is not None:
                found.append((match.start(), match.end(), match.group(1)))
            entry = text.find("\nENTRY %", entry + 1)
        found.sort()
    return (
        "\n".join([name for _, _, name in found]),
        array("q", [start for start, _, _ in found]),
        array("q", [end for _, end, _ in found]),
    )


def fusion_calls(text: str, scan: _Scan | None = None) -> Counter[str]:
    """Computations that ``fusion(`` instructions call: the first ``calls=%name`` after each.

    ``scan``: the patterns to use (``KIND_CALL`` and ``FUSED_CALL`` if not given).
    """
    kind_call, fused_call = (KIND_CALL, FUSED_CALL) if scan is None else scan.calls
    callees = kind_call.findall(text)
    if len(callees) != text.count(" fusion("):  # not one per fusion as XLA prints them
        callees = fused_call.findall(text)
    return Counter(callees)
