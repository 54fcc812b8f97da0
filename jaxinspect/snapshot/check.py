"""``check``: compare every manifest target with its stored snapshot, or update them."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from jaxinspect.errors import StageError, UsageError
from jaxinspect.pipeline.jaxconfig import (
    ConfigChanges,
    changes_since,
    configured,
    forget_traces,
    same_changes,
)
from jaxinspect.snapshot.checkreport import CheckReport, TargetResult
from jaxinspect.snapshot.compare import diff_snapshots
from jaxinspect.snapshot.manifest import Manifest, ManifestTarget
from jaxinspect.snapshot.model import Snapshot
from jaxinspect.snapshot.shard import Shard
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
    manifest: Manifest,
    rules: tuple[Rule, ...],
    *,
    update: bool,
    context: int = 3,
    jobs: int = 1,
    shard: Shard | None = None,
    structural: bool = True,
) -> CheckReport:
    """Snapshot every target (one pipeline run each) and compare or update.

    With ``update``, every interrupted write in the snapshot folder is finished or discarded
    first, and the comparisons and writes run under the folder's lock, so that concurrent
    updates take turns.

    With ``jobs`` above 1, that many targets compile at once in threads (XLA releases the
    GIL while it compiles); targets are loaded first, one at a time, and results keep the
    manifest's order, so the report and the snapshots are the same as with one job. With
    ``shard``, only that shard's targets and stale folders are checked.

    Raises:
        UsageError: A target, spec or stored snapshot is invalid, the disk refuses a write, or
            another update holds the snapshot folder too long.
    A target whose code fails (import, trace, lower, compile) is an ``error`` row.
    """
    root = manifest.snapshot_dir
    notes = _finish_interrupted(root) if update else _unfinished(root)
    targets = manifest.targets
    if shard is not None:
        mine = shard.targets([t.name for t in targets])
        targets = tuple(t for t in targets if t.name in mine)
    taken = capture_all(targets, jobs)
    with locked(root, follow_symlink=True) if update else contextlib.nullcontext(0):
        results = [
            _compare_one(manifest, item, snapshot, rules, update, context, notes, structural)
            if isinstance(snapshot, Snapshot)
            else TargetResult(item.name, item.target, "error", error=snapshot.message)
            for item, snapshot in zip(targets, taken, strict=True)
        ]
        results.extend(_stale(manifest, update, shard))
    return CheckReport(str(manifest.source), str(root), update, tuple(results), tuple(notes))


def capture_all(targets: tuple[ManifestTarget, ...], jobs: int) -> list[Snapshot | StageError]:
    """Each target's snapshot, or how its code failed, in the order given.

    Loading (importing the user's file, reading the spec) runs one target at a time, since
    imports share ``sys.modules``; the pipeline runs in up to ``jobs`` threads. Each target
    compiles with JAX's configuration as the process started plus what its own module's
    import changed (``pipeline/jaxconfig.py``), so no target changes another's verdict.
    """
    from jaxinspect.pipeline.jaxconfig import read_config
    from jaxinspect.pipeline.placement import reserve_devices

    specs = [_spec(item) for item in targets]
    # Every target's CPU devices exist before the first import can start JAX.
    reserve_devices([s for s, item in zip(specs, targets, strict=True) if not item.backend], None)
    base = read_config()  # before any user code
    loaded = _load_all(targets, specs, base)
    if jobs <= 1 or len(targets) <= 1:
        return [_capture_configured(item, base, changes) for item, changes in loaded]
    out: list[Snapshot | StageError | None] = [None] * len(loaded)
    for changes, indexes in _groups(loaded):
        taken = _capture_group(loaded, indexes, base, changes, jobs)
        for index, one in zip(indexes, taken, strict=True):
            out[index] = one
    return [one for one in out if one is not None]


def _load_all(
    targets: tuple[ManifestTarget, ...], specs: list[Any], base: dict[str, Any]
) -> list[tuple[tuple[ManifestTarget, Any, Any] | StageError, ConfigChanges]]:
    """Each target loaded, with what its module's import changed in JAX's configuration.

    A module is imported once for all its targets: the changes of its first import hold for
    every target of the file, as they would in a process that ran any one of them alone.
    """
    by_file: dict[str, ConfigChanges] = {}
    out = []
    for item, spec in zip(targets, specs, strict=True):
        with configured(base, ()):
            loaded = _load_or_failure(item, spec)
            changes = changes_since(base)
        source = None if isinstance(loaded, StageError) else loaded[1].source_file
        if source is not None:
            changes = by_file.setdefault(source, changes)
        out.append((loaded, changes))
    return out


def _groups(
    loaded: list[tuple[Any, ConfigChanges]],
) -> list[tuple[ConfigChanges, list[int]]]:
    """Target indexes by the configuration they compile with, in order of first use."""
    groups: list[tuple[ConfigChanges, list[int]]] = []
    for index, (_, changes) in enumerate(loaded):
        for known, indexes in groups:
            if same_changes(known, changes):
                indexes.append(index)
                break
        else:
            groups.append((changes, [index]))
    return groups


def _capture_group(
    loaded: list[tuple[Any, ConfigChanges]],
    indexes: list[int],
    base: dict[str, Any],
    changes: ConfigChanges,
    jobs: int,
) -> list[Snapshot | StageError]:
    """Capture targets sharing one configuration in ``jobs`` threads.

    A target that changed the configuration while it compiled (not at import) may have
    changed its neighbours' compilations: the group is then captured again one target at a
    time from fresh caches, each with the configuration put back, as ``--jobs 1`` does.
    """
    from concurrent.futures import ThreadPoolExecutor

    items = [loaded[i][0] for i in indexes]
    with configured(base, changes):
        with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="jaxinspect-check") as pool:
            taken = list(pool.map(_capture_or_failure, items))
        unchanged = not changes_since({**base, **dict(changes)})
    if unchanged:
        return taken
    forget_traces()  # a trace made while the configuration changed under it is cached
    return [_capture_configured(item, base, changes) for item in items]


def _capture_configured(
    item: tuple[ManifestTarget, Any, Any] | StageError,
    base: dict[str, Any],
    changes: ConfigChanges,
) -> Snapshot | StageError:
    with configured(base, changes):
        return _capture_or_failure(item)


def _spec(item: ManifestTarget) -> Any:
    """The target's spec with the manifest's mesh, devices or topology over its own."""
    from jaxinspect.inputs.spec import (
        Spec,
        check_placement,
        load_spec,
        parse_arg_options,
        with_placement,
    )

    if item.shapes is not None:
        spec = load_spec(item.shapes)
    elif item.args:
        spec = parse_arg_options(list(item.args))
    else:
        spec = Spec(source="(no shapes)", args=())
    spec = with_placement(spec, mesh=item.mesh, devices=item.devices, topology=item.topology)
    check_placement(spec)
    return spec


def _load_or_failure(
    item: ManifestTarget, spec: Any
) -> tuple[ManifestTarget, Any, Any] | StageError:
    from jaxinspect.inputs.target import load_target

    try:
        return item, load_target(item.target), spec
    except StageError as exc:
        return exc


def _capture_or_failure(
    loaded: tuple[ManifestTarget, Any, Any] | StageError,
) -> Snapshot | StageError:
    """The target's snapshot, or how its code failed (a row of the report, not the end)."""
    from jaxinspect.snapshot.capture import capture_snapshot

    if isinstance(loaded, StageError):
        return loaded
    item, target, spec = loaded
    try:
        return capture_snapshot(target, spec, item.backend)
    except StageError as exc:
        return exc


def _compare_one(
    manifest: Manifest,
    item: ManifestTarget,
    snapshot: Snapshot,
    rules: tuple[Rule, ...],
    update: bool,
    context: int,
    notes: list[str],
    structural: bool = True,
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
    labels = f"stored/{item.name}", f"new/{item.name}"
    diff = diff_snapshots(stored, snapshot, *labels, context, structural=structural)
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


def _stale(manifest: Manifest, update: bool, shard: Shard | None) -> list[TargetResult]:
    names = {t.name for t in manifest.targets}
    out = []
    for folder in _snapshot_folders(manifest.snapshot_dir):
        if folder.name in names or not is_snapshot(folder):
            continue
        if shard is not None and not shard.owns_stale(folder.name):
            continue
        if update:
            remove_snapshot(folder)
        out.append(TargetResult(folder.name, "-", "stale", removed=update))
    return out
