"""Python source locations of HLO instructions, from the module's stack-frame tables."""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from jaxinspect.jsonfields import Count

if TYPE_CHECKING:
    from jaxinspect.xla.ownership import UserCode

_SECTION = re.compile(
    r"^(FileNames|FunctionNames|FileLocations|StackFrames)\n((?:[^\n]+\n)*)", re.M
)
_NAMED = re.compile(r'^(\d+) "((?:[^"\\]|\\.)*)"$')
_RECORD = re.compile(r"^(\d+) \{(.*)\}$")
_FIELD = re.compile(r"(\w+)=(-?\d+)")


@dataclass(frozen=True, slots=True)
class SourceLocation:
    """One Python frame: file, line, column and function."""

    file: str
    line: Count
    column: Count
    function: str

    @property
    def label(self) -> str:
        """``file.py:12`` with the file's base name, for tables."""
        return f"{Path(self.file).name}:{self.line}"


def shown_path(file: str) -> str:
    """``file`` relative to the current folder when under it (as the user types it), else
    as recorded: ``/home/me/repo/model.py`` read from ``/home/me/repo`` is ``model.py``."""
    if not os.path.isabs(file):
        return file
    return _relative_to(file, os.getcwd())


@functools.lru_cache(maxsize=4096)
def _relative_to(file: str, folder: str) -> str:
    # Asked once per op and line (11,000 times for 48 transformer blocks, 2 s of relpath):
    # a model has a handful of files.
    relative = os.path.relpath(file, folder)
    return file if relative.startswith("..") else relative


@dataclass(frozen=True, slots=True)
class FrameTable:
    """The module's stack frames: id -> (location, parent id or 0)."""

    frames: tuple[tuple[int, SourceLocation, int], ...]
    # Built once: a chain is asked for each instruction, and rebuilding the index for each
    # made source lookups grow with the table times the instructions.
    _by_id: dict[int, tuple[SourceLocation, int]] = field(init=False, repr=False, compare=False)
    # Every layer of a model shares its frames: each is resolved once per ``UserCode``.
    _located: dict[tuple[int, UserCode], SourceLocation | None] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        by_id = {fid: (loc, parent) for fid, loc, parent in self.frames}
        object.__setattr__(self, "_by_id", by_id)
        object.__setattr__(self, "_located", {})

    def chain(self, frame_id: int) -> tuple[SourceLocation, ...]:
        """Locations from the innermost frame outwards."""
        by_id = self._by_id
        out: list[SourceLocation] = []
        seen: set[int] = set()
        while frame_id in by_id and frame_id not in seen:
            seen.add(frame_id)
            loc, frame_id = by_id[frame_id]
            out.append(loc)
        return tuple(out)

    def user_location(self, frame_id: int | None, user: UserCode) -> SourceLocation | None:
        """The innermost frame of the user's code; else the innermost one outside libraries.

        ``user`` says which files are the user's (``--user-code``, by default the target's
        folder) and which never are (JAX, jaxinspect...). Library code the user calls (flax's
        ``Dense``) is thereby put on the user's line that called it.
        """
        if frame_id is None:
            return None
        key = (frame_id, user)
        if key not in self._located:
            chain = self.chain(frame_id)
            owned = next((loc for loc in chain if user.owns(loc.file)), None)
            if owned is None:
                owned = next((loc for loc in chain if not user.is_library(loc.file)), None)
            self._located[key] = owned
        return self._located[key]


# The last module's table is kept, as ``hlotext.parse_module`` keeps its parse: the report
# reads the frames of one printed module for the per-op cost, the memory buffers and the
# graph. A ``FrameTable`` is immutable (its lookups are memoized).
@functools.lru_cache(maxsize=1)
def parse_frame_table(text: str) -> FrameTable:
    """Read the FileNames / FunctionNames / FileLocations / StackFrames tables of a module.

    XLA prints ``parent_frame_id`` as the parent's id + 1, so a root frame prints 1; only
    ``parent = printed - 1`` rebuilds known call chains, so that is what is applied here.
    """
    sections = {name: body.splitlines() for name, body in _SECTION.findall(text)}
    files = _named(sections.get("FileNames", []))
    functions = _named(sections.get("FunctionNames", []))
    locations: dict[int, SourceLocation] = {}
    for lid, fields in _records(sections.get("FileLocations", [])):
        locations[lid] = SourceLocation(
            file=files.get(fields.get("file_name_id", 0), "?"),
            line=fields.get("line", 0),
            column=fields.get("column", 0),
            function=functions.get(fields.get("function_name_id", 0), "?"),
        )
    frames = []
    for fid, fields in _records(sections.get("StackFrames", [])):
        location = locations.get(fields.get("file_location_id", 0))
        if location is not None:
            frames.append((fid, location, max(0, fields.get("parent_frame_id", 0) - 1)))
    return FrameTable(tuple(frames))


def _named(lines: list[str]) -> dict[int, str]:
    out = {}
    for line in lines:
        match = _NAMED.match(line.strip())
        if match:
            out[int(match.group(1))] = match.group(2).replace('\\"', '"')
    return out


def _records(lines: list[str]) -> list[tuple[int, dict[str, int]]]:
    out = []
    for line in lines:
        match = _RECORD.match(line.strip())
        if match:
            fields = {k: int(v) for k, v in _FIELD.findall(match.group(2))}
            out.append((int(match.group(1)), fields))
    return out
