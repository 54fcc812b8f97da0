"""Read a stored ``summary.json``, checking every value against its type as it is read.

The format is :class:`~jaxinspect.snapshot.model.SummaryFile` (its schema is generated from
it). A damaged file is a ``CorruptSnapshotError`` naming the file and the key (``check --update``
rewrites such a snapshot); one written by a newer jaxinspect is a ``NewerSnapshotError``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jaxinspect.errors import UsageError
from jaxinspect.jsonfields import MISSING, DecodeError
from jaxinspect.snapshot.model import (
    FORMAT_VERSION,
    SnapshotHeader,
    SnapshotSummary,
    summary_from_dict,
)
from jaxinspect.usertext import safe_repr

_REPAIR = (
    "Re-create it: `jaxinspect check --update` rewrites a manifest target's snapshot, "
    "`jaxinspect snapshot TARGET --out FOLDER` any other."
)


class CorruptSnapshotError(UsageError):
    """A stored snapshot file is damaged: unreadable, not JSON, or a value of the wrong type."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"{path}: corrupt snapshot: {problem}", hint=_REPAIR)
        self.path = path
        self.problem = problem


class NewerSnapshotError(UsageError):
    """A snapshot written by a newer jaxinspect, in a format this version cannot read."""


def parse_summary(
    raw: bytes, path: Path, written_by: str | None
) -> tuple[SnapshotHeader, SnapshotSummary]:
    """The header and summary that the ``summary.json`` read from ``path`` holds.

    Args:
        raw: The file's bytes.
        path: Where it was read, for messages.
        written_by: The jaxinspect version recorded in the snapshot's provenance, if any.

    Raises:
        CorruptSnapshotError: It is not a valid summary.
        NewerSnapshotError: Its ``format_version`` is newer than this jaxinspect reads.
    """
    import json  # here: a diff of two loose text files reads no JSON

    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise CorruptSnapshotError(path, f"not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise CorruptSnapshotError(path, "expected a JSON object")
    version: Any = data.get("format_version")
    if not _is_int(version) or version < 1:
        raise CorruptSnapshotError(
            path, f"format_version must be a positive integer, got {version!r}"
        )
    if version > FORMAT_VERSION:
        by = f"jaxinspect {written_by}" if written_by else "a newer jaxinspect"
        raise NewerSnapshotError(
            f"{path}: snapshot format {version} was written by {by}; this jaxinspect reads "
            f"format {FORMAT_VERSION}",
            hint="Upgrade jaxinspect, or delete the folder to re-create it with this version.",
        )
    try:
        return summary_from_dict(data)
    except DecodeError as exc:
        raise CorruptSnapshotError(path, _wrong(exc)) from None


def _wrong(exc: DecodeError) -> str:
    if exc.value is MISSING:
        return f"{exc.path} must be {exc.expected} (it is missing)"
    shown = safe_repr(exc.value)
    if len(shown) > 40:
        shown = shown[:37] + "..."
    return f"{exc.path} must be {exc.expected}, got {shown}"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
