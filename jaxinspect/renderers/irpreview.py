"""What an IR panel shows first: the part of a stage's text a reader came for.

The texts themselves (in JSON, snapshots, ``jaxinspect hlo``) stay exactly as JAX gives them;
this module only orders and trims them for a terminal:

* optimized HLO starts at the ``ENTRY`` computation, then the computations it calls in call
  order (fusion bodies, loop bodies and conditions); the module's source-location tables
  (``FileNames``, ``FunctionNames``, ``FileLocations``, ``StackFrames``) and the per-instruction
  ``metadata={...}`` and ``frontend_attributes={...}`` are left out unless asked for;
* a jaxpr's parameter list, which for a model's state runs to dozens of binders, is folded to
  its first and last few so the equations come first; so are the parameter and result lists
  of StableHLO functions and HLO computations (a train step's 311 arguments would otherwise
  wrap into a thousand rows before the first operation).

Both parse the printed text, since that is what a report carries; the tests run them on real
compiler output.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from jaxinspect.xla.hlotext import CALLED, balanced_end

#: The module-level tables of source locations XLA prints between the header and the first
#: computation, each a title line and numbered rows.
METADATA_TABLES = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")

#: Instruction attributes that carry provenance, not semantics.
_HIDDEN_ATTRIBUTES = ("metadata", "frontend_attributes")

_COMPUTATION_NAME = re.compile(r"%([\w.\-]+)")
_NAME = re.compile(r"%?([\w.\-]+)")
_JAXPR_PARAMS_END = re.compile(r"\.\s+let\b")

#: Binders kept at each end of a folded jaxpr parameter list.
KEPT_PARAMS = 3


@dataclass(frozen=True)
class Preview:
    """The lines to show, and what was left out of them on purpose."""

    lines: tuple[str, ...]
    hidden: str | None = None  # e.g. "source-location tables and metadata= (--metadata)"


def preview(stage: str, text: str, *, metadata: bool = False, fold: bool = True) -> Preview:
    """The lines of ``stage``'s ``text`` in reading order (see the module docstring).

    ``fold``: long parameter lists are folded (``--full`` turns it off).
    """
    if stage == "hlo":
        found = hlo_reading_order(text, metadata=metadata)
        if not fold:
            return found
        return Preview(tuple(fold_signature(line) for line in found.lines), found.hidden)
    if stage == "jaxpr":
        return Preview(tuple((fold_jaxpr_params(text) if fold else text).splitlines()))
    lines = text.splitlines()
    return Preview(tuple(fold_signature(line) for line in lines) if fold else tuple(lines))


#: A StableHLO function or an HLO computation header: where its parameter list opens.
_SIGNATURE = re.compile(r"^\s*(?:func\.func\b[^(]*@[\w.$\-]+|ENTRY\s+%?[\w.\-]+\s*|%[\w.\-]+\s*)\(")
_OPENERS = {"(": ")", "<": ">", "{": "}", "[": "]"}
#: Parameters (or results) a signature shows whole; a longer list keeps ``KEPT_PARAMS`` a side.
SIGNATURE_ITEMS_SHOWN = 16


def fold_signature(line: str) -> str:
    """A function header whose parameter (or result) list is long, with its middle folded.

    ``func.func public @main(%arg0: …, %arg1: …, … 305 more …, %arg310: …) -> (…)``: a train
    step's 311 parameters otherwise wrap into a thousand terminal rows before the first op.
    Lists of at most ``SIGNATURE_ITEMS_SHOWN`` items are left as printed.
    """
    match = _SIGNATURE.match(line)
    if match is None:
        return line
    open_at = match.end() - 1
    folded, end = _fold_list(line, open_at, "parameters")
    arrow = folded.find("-> (", end)
    if arrow != -1 and folded[end:arrow].strip() == "":
        folded, _ = _fold_list(folded, arrow + 3, "results")
    return folded


def _fold_list(line: str, open_at: int, noun: str) -> tuple[str, int]:
    """``line`` with the comma list in the brackets opened at ``open_at`` folded; its end."""
    items, close = _top_level_items(line, open_at)
    if close == -1:
        return line, len(line)
    if len(items) <= SIGNATURE_ITEMS_SHOWN:
        return line, close + 1
    shown = [*items[:KEPT_PARAMS], f"… {len(items) - 2 * KEPT_PARAMS} more …"]
    shown += items[-KEPT_PARAMS:]
    inner = ", ".join(shown) + f" ({len(items)} {noun})"
    out = line[: open_at + 1] + inner + line[close:]
    return out, open_at + len(inner) + 2  # past the closing bracket


def _top_level_items(line: str, open_at: int) -> tuple[list[str], int]:
    """The comma-separated items inside the bracket at ``open_at``, and where it closes."""
    stack = [_OPENERS[line[open_at]]]
    items: list[str] = []
    start = open_at + 1
    quoted = False
    for i in range(open_at + 1, len(line)):
        char = line[i]
        if char == '"' and line[i - 1] != "\\":
            quoted = not quoted
        if quoted:
            continue
        if char in _OPENERS and not (char == "<" and line[i - 1] == "-"):
            stack.append(_OPENERS[char])
        elif stack and char == stack[-1]:
            stack.pop()
            if not stack:
                items.append(line[start:i].strip())
                return [item for item in items if item], i
        elif char == "," and len(stack) == 1:
            items.append(line[start:i].strip())
            start = i + 1
    return [], -1


def hlo_reading_order(text: str, *, metadata: bool = False) -> Preview:
    """ENTRY first, then its callees depth-first; the header and metadata tables trimmed."""
    header, tables, computations = _split_module(text)
    if not computations:  # not a printed module: nothing to reorder
        return Preview(tuple(text.splitlines()))
    order = _call_order(computations)
    lines: list[str] = []
    if metadata:
        lines += header
        lines += tables
    else:
        lines += [_module_name_only(line) for line in header[:1]]
    for name in order:
        if lines and lines[-1] != "":
            lines.append("")
        body = computations[name]
        lines += body if metadata else [strip_attributes(line) for line in body]
    hidden = None
    if not metadata and (tables or any("metadata={" in line for line in text.splitlines())):
        hidden = "the source-location tables and metadata= attributes"
    return Preview(tuple(lines), hidden)


def strip_attributes(line: str) -> str:
    """``line`` without its ``, metadata={...}`` and ``, frontend_attributes={...}``."""
    for name in _HIDDEN_ATTRIBUTES:
        marker = f", {name}={{"
        start = line.find(marker)
        while start != -1:
            try:
                end = balanced_end(line, start + len(marker) - 1)
            except ValueError:
                break  # unbalanced: leave the line as printed
            line = line[:start] + line[end:]
            start = line.find(marker, start)
    return line


def fold_jaxpr_params(text: str) -> str:
    """The outermost ``{ lambda ; a:f32[..] b:... . let`` with its middle binders folded."""
    match = _JAXPR_PARAMS_END.search(text)
    start = text.find("{ lambda")
    if match is None or start == -1 or start > match.start():
        return text
    head = text[start : match.start()]
    before_semicolon, _, params_text = head.partition(";")
    params = params_text.split()
    if len(params) <= 2 * KEPT_PARAMS + 1:
        return text
    shown = params[:KEPT_PARAMS] + [f"… {len(params) - 2 * KEPT_PARAMS} more …"]
    shown += params[-KEPT_PARAMS:]
    folded = f"{before_semicolon}; {' '.join(shown)} ({len(params)} parameters)"
    return text[:start] + folded + text[match.start() :]


def _split_module(text: str) -> tuple[list[str], list[str], dict[str, list[str]]]:
    """The header lines, the metadata table lines and each computation's lines by name."""
    header: list[str] = []
    tables: list[str] = []
    computations: dict[str, list[str]] = {}
    current: list[str] | None = None
    in_table = False
    for line in text.splitlines():
        if current is not None:
            current.append(line)
            if line == "}":
                current = None
            continue
        if line.startswith("%") or line.startswith("ENTRY "):
            name = _COMPUTATION_NAME.search(line)
            key = ("ENTRY " if line.startswith("ENTRY") else "") + (name.group(1) if name else line)
            current = computations.setdefault(key, [])
            current.append(line)
            in_table = False
        elif line.strip() in METADATA_TABLES:
            in_table = True
            tables.append(line)
        elif in_table and line.strip():
            tables.append(line)
        elif line.strip():
            header.append(line)
            in_table = False
        elif in_table:
            tables.append(line)
            in_table = False
    return header, tables, computations


def _call_order(computations: dict[str, list[str]]) -> list[str]:
    """ENTRY, then every computation reachable from it depth-first, then any others."""
    by_name = {key.removeprefix("ENTRY "): key for key in computations}
    entry = next((key for key in computations if key.startswith("ENTRY ")), None)
    order: list[str] = []
    seen: set[str] = set()

    def visit(key: str) -> None:
        if key in seen:
            return
        seen.add(key)
        order.append(key)
        for line in computations[key][1:]:
            for _, callee in CALLED.findall(line):
                for name in _NAME.findall(callee):
                    if name in by_name:
                        visit(by_name[name])

    if entry is not None:
        visit(entry)
    for key in computations:
        visit(key)
    return order


def _module_name_only(line: str) -> str:
    """``HloModule jit_f, is_scheduled=true, ...`` -> ``HloModule jit_f``."""
    return line.split(",", 1)[0] if line.startswith("HloModule") else line


#: Starts each continuation of a line too long for the panel.
CONTINUATION = "↪ "


def wrap_line(line: str, width: int) -> list[str]:
    """``line`` in pieces of at most ``width`` characters, each continuation marked.

    A piece ends at the last space, or comma outside a shape's brackets, that leaves it at least
    a third full, so names and shapes are rarely broken; a piece with neither is cut at the width.
    """
    if len(line) <= width or width < 8:
        return [line]
    indent = " " * min(len(line) - len(line.lstrip(" ")), width // 2)
    pieces: list[str] = []
    rest = line
    while True:
        lead = indent + CONTINUATION if pieces else ""
        room = width - len(lead)
        if len(rest) <= room:
            pieces.append(lead + rest)
            return pieces
        cut = _break_at(rest, room)
        pieces.append(lead + rest[:cut].rstrip())
        rest = rest[cut:].lstrip()


def _break_at(text: str, room: int) -> int:
    """Where to end a piece of at most ``room`` characters of ``text``."""
    depth = 0
    best = 0
    for i, char in enumerate(text[: room + 1]):
        if char == "[":
            depth += 1
        elif char == "]":
            depth = max(depth - 1, 0)
        elif char == " ":
            best = i
        elif char == "," and depth == 0 and i < room:
            best = i + 1
    return best if best >= room // 3 else room
