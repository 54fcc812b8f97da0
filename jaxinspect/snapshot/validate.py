"""Check a stored ``summary.json`` against its schema before anything uses its values.

A damaged file is a ``CorruptSnapshotError`` naming the file and the key (``check --update``
rewrites such a snapshot); one written by a newer jaxinspect is a ``NewerSnapshotError``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from jaxinspect.errors import UsageError
from jaxinspect.snapshot.model import COST_KEYS, FORMAT_VERSION, MEMORY_KEYS, STAGE_FILES
from jaxinspect.usertext import safe_repr

_HEADER_TEXT = ("jax_version", "jaxlib_version", "backend", "device_kind")
_STAGES = tuple(stage for stage, _ in STAGE_FILES)
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


def parse_summary(raw: bytes, path: Path, written_by: str | None) -> dict[str, Any]:
    """The validated ``summary.json`` document read from ``path``.

    Args:
        raw: The file's bytes.
        path: Where it was read, for messages.
        written_by: The jaxinspect version recorded in the snapshot's provenance, if any.

    Raises:
        CorruptSnapshotError: It is not a valid summary.
        NewerSnapshotError: Its ``format_version`` is newer than this jaxinspect reads.
    """
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
    problem = _problem(data)
    if problem is not None:
        raise CorruptSnapshotError(path, problem)
    return data


def _problem(data: dict[str, Any]) -> str | None:
    header = data.get("header")
    if not isinstance(header, dict):
        return _wrong("header", "an object", header)
    for key in _HEADER_TEXT:
        if not isinstance(header.get(key), str):
            return _wrong(f"header.{key}", "a string", header.get(key))
    if not isinstance(header.get("x64"), bool):
        return _wrong("header.x64", "true or false", header.get("x64"))
    ops = data.get("ops")
    if not isinstance(ops, dict):
        return _wrong("ops", "an object", ops)
    for stage, counts in ops.items():
        if stage not in _STAGES:
            return f"ops: unknown stage {stage!r}"
        if (problem := _counts_problem(f"ops.{stage}", counts)) is not None:
            return problem
    fusions = data.get("fusion_count")
    if fusions is not None and not (_is_int(fusions) and fusions >= 0):
        return _wrong("fusion_count", "a count or null", fusions)
    if (problem := _counts_problem("collectives", data.get("collectives"))) is not None:
        return problem
    # collective_bytes is absent in snapshots written before it was recorded.
    recorded = data.get("collective_bytes", {})
    if (problem := _counts_problem("collective_bytes", recorded)) is not None:
        return problem
    for section, keys in (("cost", COST_KEYS), ("memory", MEMORY_KEYS)):
        if (problem := _numbers_problem(section, data.get(section), keys)) is not None:
            return problem
    unavailable = data.get("unavailable")
    if not isinstance(unavailable, dict) or not all(
        isinstance(v, str) for v in unavailable.values()
    ):
        return _wrong("unavailable", "an object of reasons (strings)", unavailable)
    return None


def _counts_problem(where: str, counts: Any) -> str | None:
    if not isinstance(counts, dict):
        return _wrong(where, "an object of op counts", counts)
    for op, n in counts.items():
        if not (_is_int(n) and n >= 0):
            return _wrong(f"{where}.{op}", "a count (an integer >= 0)", n)
    return None


def _numbers_problem(section: str, values: Any, keys: tuple[str, ...]) -> str | None:
    if not isinstance(values, dict):
        return _wrong(section, "an object", values)
    for key in keys:
        if key not in values:
            return f"{section}.{key} is missing"
        value = values[key]
        if value is None:
            continue
        if not isinstance(value, int | float) or isinstance(value, bool):
            return _wrong(f"{section}.{key}", "a number or null", value)
        if not math.isfinite(value) or value < 0:
            return _wrong(f"{section}.{key}", "a finite number >= 0 or null", value)
    return None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _wrong(where: str, expected: str, value: Any) -> str:
    shown = safe_repr(value)
    if len(shown) > 40:
        shown = shown[:37] + "..."
    return f"{where} must be {expected}, got {shown}"
