"""The lines the pytest plugin prints at the end of a session (counts, unused, deleted, kept)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from jaxinspect.snapshot.pytest_snapshot import UPDATE_FLAG

if TYPE_CHECKING:
    from jaxinspect.snapshot.hygiene import Judgement, Removal
    from jaxinspect.snapshot.pytest_record import SessionRecord

_WARN_UNUSED_FLAG = "--jaxinspect-warn-unused"
Line = tuple[str, dict[str, Any]]


class _SnapshotSession(Protocol):
    """What the lines are made from: the plugin's session state (``pytest_plugin.py``), named
    here by its attributes so that this module does not import the plugin above it."""

    record: SessionRecord
    judgement: Judgement
    removals: list[Removal]
    not_judged: str | None


def summary_lines(state: _SnapshotSession, warn_only: bool) -> list[Line]:
    """What the session's end shows: old folders, counts, then each judged folder."""
    lines = _old_location(state)
    record, judgement = state.record, state.judgement
    deleted = [r for r in state.removals if r.error is None]
    if not (sum(record.counts.values()) or judgement.unused or state.removals):
        if state.not_judged and any(m.is_dir() for m in record.collected_modules()):
            lines.append((f"jaxinspect: unused snapshots not judged: {state.not_judged}", {}))
        return lines
    parts = [f"{record.counts['unchanged']} unchanged", f"{record.counts['written']} written"]
    parts += [f"{record.counts['failed']} failed", f"{len(judgement.unused)} unused"]
    parts += [f"{len(deleted)} deleted"] if deleted else []
    lines.append(("jaxinspect snapshots: " + ", ".join(parts), {}))
    lines += [(f"  unused: {folder}", {"red": True}) for folder in judgement.unused]
    for removal in state.removals:
        if removal.error is not None:
            lines.append((f"  not deleted: {removal.folder}: {removal.error}", {"red": True}))
        elif removal.kept:
            kept = ", ".join(removal.kept)
            lines.append((f"  deleted: {removal.folder} (kept {kept}: not jaxinspect's)", {}))
        else:
            lines.append((f"  deleted: {removal.folder}", {}))
    lines += [
        (f"  not judged: {link} (a symbolic link, which is never followed)", {"yellow": True})
        for link in judgement.links
    ]
    if state.not_judged is not None:
        lines.append((f"  unused snapshots not judged: {state.not_judged}", {}))
    if judgement.unused:
        action = "listed" if warn_only else "failing the session"
        lines.append(
            (
                f"  ({action}; delete them with pytest {UPDATE_FLAG}, or only warn with "
                f"{_WARN_UNUSED_FLAG})",
                {"red": not warn_only},
            )
        )
    return lines


def _old_location(state: _SnapshotSession) -> list[Line]:
    from jaxinspect.snapshot.hygiene import move_command, old_location_folders

    old = old_location_folders(state.record.test_dirs())
    if not old:
        return []
    return [
        (
            f"jaxinspect: {len(old)} snapshot folder(s) are in the old place, "
            f"{old[0].parent}, which syrupy also uses (its --snapshot-update deletes them). "
            f"Move them with:\n  {move_command(old)}",
            {"yellow": True},
        )
    ]
