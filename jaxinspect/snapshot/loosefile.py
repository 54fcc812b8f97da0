"""A loose stage text file for ``diff``: read it, guess its stage, start counting its ops.

The op count of a large old HLO file is most of ``diff``'s CPU time; it runs in a forked child
(``background``) that overlaps whatever this process does meanwhile, and reads the old text's
names next, for a structural diff that has renamings to undo. ``start_count`` lets the
CLI start it first, before it imports the modules that compare and render: those imports then
overlap the count too. This module imports only what the count needs (no jax, no snapshot
model).
"""

from __future__ import annotations

import mmap
import os
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from jaxinspect.errors import UsageError
from jaxinspect.snapshot.background import Pending, in_background_then, will_fork
from jaxinspect.textdiff.terminated import terminated

if TYPE_CHECKING:
    from jaxinspect.textdiff.hlonames import TextNames
    from jaxinspect.xla.hloscan import ModuleScan


class EarlyCount(NamedTuple):
    """An old file read, and the count of its ops started (see ``start_count``)."""

    path: Path
    new: Path
    text: str
    parts: Pending[ModuleScan]
    #: The old text's names, which a structural diff with renamings to undo in bulk needs:
    #: read by the same child once ``parts`` is sent (see ``names_of``).
    names: Pending[TextNames]


def count_parts(text: str) -> ModuleScan:
    """``hloscan.scan_module(text)``, imported here: the console script forks the count before
    it imports the diff, and the child imports no more than the scan needs."""
    from jaxinspect.xla.hloscan import scan_module

    return scan_module(text)


def names_of(text: str, parts: ModuleScan) -> TextNames:
    """``hlonames.text_names(text)``, imported here (see ``count_parts``), with the names of
    the computations that counting the text (``parts``) found: not searched for again."""
    from jaxinspect.textdiff.hlonames import text_names

    return text_names(text, parts[2])


def answer_names(text: str, values: list[object], question: object) -> object:
    """``hlonames.answer_about`` the names ``names_of`` read (the child's last value)."""
    from jaxinspect.textdiff.hlonames import TextNames, answer_about

    names = values[-1]
    assert isinstance(names, TextNames)
    return answer_about(names, question)


#: The count ``prestart_count`` started, until ``start_count`` takes it for the same paths.
_prestarted: EarlyCount | None = None


def prestart_count(old: str, new: str) -> None:
    """``start_count`` as the first thing the console script does for a ``diff`` of these paths
    (before it imports anything else); ``start_count`` hands it over, ``drop_prestarted``
    stops it where the command turns out to be no plain ``diff``."""
    global _prestarted
    _prestarted = start_count(Path(old), Path(new))


def drop_prestarted() -> None:
    """Stop a count ``prestart_count`` started, if any is left."""
    global _prestarted
    if _prestarted is not None:
        _prestarted.parts.close()
        _prestarted = None


def start_count(old: Path, new: Path) -> EarlyCount | None:
    """Read ``old`` and start counting its ops in a forked child, where ``diff`` will need it.

    Only for two regular files, ``old`` an HLO text large enough to fork for; ``None``
    otherwise, or on any error, which ``load_sides`` then meets again and reports in its own
    order. A file is read once: a pipe (``<(...)``) is left to ``load_sides``. A count
    ``prestart_count`` started for the same paths is handed over, not started again.
    """
    global _prestarted
    early, _prestarted = _prestarted, None
    if early is not None:
        if early.path == old and early.new == new:
            return early
        early.parts.close()
    try:
        if not (old.is_file() and new.is_file()):
            return None
        text = read_text(old)
    except (OSError, ValueError, UsageError):
        return None
    if guess_stage(text) != "hlo" or not will_fork(text):
        return None
    pending = in_background_then(count_parts, names_of, terminated(text), answer_names)
    return EarlyCount(old, new, text, *pending)


def guess_stage(text: str) -> str:
    """``hlo``, ``stablehlo`` or ``jaxpr``, from what the text starts with."""
    head = text.lstrip()[:200]
    if head.startswith("HloModule"):
        return "hlo"
    if head.startswith(("module", "#loc", "func.func")):
        return "stablehlo"
    return "jaxpr"


def read_text(path: Path) -> str:
    """The file's text with Unix newlines.

    Raises:
        UsageError: The file cannot be read or is not UTF-8.
    """
    try:
        text = _decoded(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read ({exc})") from None
    return unix_newlines(text)


def _decoded(path: Path) -> str:
    # Decoding straight from a memory map skips a copy: a fresh 14 MB buffer costs more than
    # reading it into that buffer.
    with path.open("rb") as file:
        if os.fstat(file.fileno()).st_size == 0:
            return ""
        with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            return str(mapped, "utf-8")


def unix_newlines(text: str) -> str:
    """``text`` as text mode's universal newlines read it, at a fraction of its cost on 14 MB
    (a checkout may have turned \\n into \\r\\n)."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text
