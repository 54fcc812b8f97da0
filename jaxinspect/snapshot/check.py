"""``check``: compare every manifest target with its stored snapshot, or update them."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from jaxinspect.errors import StageError, UsageError
from jaxinspect.reports.snapshot_check import CheckReport, TargetResult
from jaxinspect.snapshot.compare import diff_snapshots
from jaxinspect.snapshot.manifest import Manifest, ManifestTarget
from jaxinspect.snapshot.model import Snapshot
from jaxinspect.snapshot.store import (
    STAGING_DIR,
    CorruptSnapshotError,
    has_leftovers,
    is_snapshot,
    locked,
    read_snapshot,
    recover,
    remove_snapshot,
    write_snapshot,
)
from jaxinspect.snapshot.thresholds import Rule, evaluate


def run_check(
    manifest: Manifest, rules: tuple[Rule, ...], *, update: bool, context: int = 3
) -> CheckReport:
    """Snapshot every target (one pipeline run each) and compare or update.

    With ``update``, every interrupted write in the snapshot folder is finished or discarded
    first, and the comparisons and writes run under the folder's lock, so that concurrent
    updates take turns.

    Raises:
        UsageError: A target, spec or stored snapshot is invalid, the disk refuses a write, or
            another update holds the snapshot folder too long.
    A target whose code fails (import, trace, lower, compile) is an ``error`` row.
    """
    root = manifest.snapshot_dir
    notes = _finish_interrupted(root) if update else _unfinished(root)
    taken = [(item, _capture_or_failure(item)) for item in manifest.targets]
    with locked(root, follow_symlink=True) if update else contextlib.nullcontext(0):
        results = [
            _compare_one(manifest, item, snapshot, rules, update, context, notes)
            if isinstance(snapshot, Snapshot)
            else TargetResult(item.name, item.target, "error", error=snapshot.message)
            for item, snapshot in taken
        ]
        results.extend(_stale(manifest, update))
    return CheckReport(str(manifest.source), str(root), update, tuple(results), tuple(notes))


def _capture_or_failure(item: ManifestTarget) -> Snapshot | StageError:
    """The target's snapshot, or how its code failed (a row of the report, not the end)."""
    try:
        return _capture(item)
    except StageError as exc:
        return exc


def _capture(item: ManifestTarget) -> Snapshot:
    from jaxinspect.inputs.spec import Spec, load_spec, parse_arg_options
    from jaxinspect.inputs.target import load_target
    from jaxinspect.snapshot.capture import capture_snapshot

    if item.shapes is not None:
        spec = load_spec(item.shapes)
    elif item.args:
        spec = parse_arg_options(list(item.args))
    else:
        spec = Spec(source="(no shapes)", args=())
    return capture_snapshot(load_target(item.target), spec, item.backend)


def _compare_one(
    manifest: Manifest,
    item: ManifestTarget,
    snapshot: Snapshot,
    rules: tuple[Rule, ...],
    update: bool,
    context: int,
    notes: list[str],
) -> TargetResult:
    folder = _target_folder(manifest.snapshot_dir, item.name)
    if not is_snapshot(folder):
        if update:
            write_snapshot(folder, snapshot, follow_symlink=False)
            return TargetResult(item.name, item.target, "new", written=True)
        return TargetResult(item.name, item.target, "missing")
    try:
        stored = read_snapshot(folder)
    except CorruptSnapshotError as exc:
        if not update:
            raise
        write_snapshot(folder, snapshot, follow_symlink=False)
        notes.append(f"{exc.path}: corrupt snapshot ({exc.problem}); rewrote it")
        return TargetResult(item.name, item.target, "new", written=True)
    diff = diff_snapshots(stored, snapshot, f"stored/{item.name}", f"new/{item.name}", context)
    status = "unchanged" if diff.identical else "changed"
    if update and (not diff.identical or diff.toolchain):
        write_snapshot(folder, snapshot, follow_symlink=False)
        return TargetResult(item.name, item.target, status, diff, written=True)
    verdict = None if diff.identical else evaluate(rules, diff)
    return TargetResult(item.name, item.target, status, diff, verdict)


def _target_folder(root: Path, name: str) -> Path:
    folder = root / name
    if folder.is_symlink():
        raise UsageError(
            f"{folder} is a symbolic link: jaxinspect follows no symlink inside snapshot_dir",
            hint="Make it a real folder, or point snapshot_dir itself at the linked location.",
        )
    return folder


def _snapshot_folders(root: Path) -> list[Path]:
    """Real (not symlinked), visible subfolders of ``root``, sorted."""
    if not root.is_dir():
        return []
    return sorted(
        p
        for p in root.iterdir()
        if not p.name.startswith(".") and p.is_dir() and not p.is_symlink()
    )


def _finish_interrupted(root: Path) -> list[str]:
    """Finish or discard every interrupted write under ``root``, changed target or not."""
    if not root.is_dir():
        return []
    notes = []
    with locked(root, follow_symlink=True):
        for folder in _snapshot_folders(root):
            if not has_leftovers(folder):
                continue  # a killed writer's lock file counts: taking the lock removes it
            outcome = recover(folder, follow_symlink=False)
            if outcome == "finished":
                notes.append(f"{folder}: finished an interrupted update")
            elif outcome == "discarded":
                notes.append(f"{folder}: discarded an interrupted, uncommitted update")
    return notes


def _unfinished(root: Path) -> list[str]:
    return [
        f"{folder}: an update was interrupted (it reads as the last committed snapshot); "
        "`jaxinspect check --update` finishes it"
        for folder in _snapshot_folders(root)
        if os.path.lexists(folder / STAGING_DIR)
    ]


def _stale(manifest: Manifest, update: bool) -> list[TargetResult]:
    names = {t.name for t in manifest.targets}
    out = []
    for folder in _snapshot_folders(manifest.snapshot_dir):
        if folder.name in names or not is_snapshot(folder):
            continue
        if update:
            remove_snapshot(folder)
        out.append(TargetResult(folder.name, "-", "stale", removed=update))
    return out
