"""``check``: compare every manifest target with its stored snapshot, or update them."""

from __future__ import annotations

from dataclasses import dataclass

from jaxinspect.snapshot.compare import SnapshotDiff, diff_snapshots
from jaxinspect.snapshot.manifest import Manifest, ManifestTarget
from jaxinspect.snapshot.model import Snapshot
from jaxinspect.snapshot.store import (
    is_snapshot,
    read_snapshot,
    remove_snapshot,
    write_snapshot,
)
from jaxinspect.snapshot.thresholds import Rule, Verdict, evaluate

#: Every status a target can have, in the order reports list them.
STATUSES = ("changed", "missing", "stale", "new", "unchanged")


@dataclass(frozen=True, slots=True)
class TargetResult:
    """One target's outcome.

    ``status``: ``unchanged``, ``changed``, ``missing`` (no stored snapshot), ``new`` (none was
    stored and ``--update`` wrote it) or ``stale`` (stored, but no target produces it).
    """

    name: str
    target: str
    status: str
    diff: SnapshotDiff | None = None
    verdict: Verdict | None = None
    written: bool = False
    removed: bool = False

    @property
    def failed(self) -> bool:
        """Whether this result fails the check."""
        if self.written or self.removed:
            return False
        if self.status == "changed":
            return self.verdict is None or self.verdict.failed
        return self.status in ("missing", "stale")


@dataclass(frozen=True, slots=True)
class CheckReport:
    """All targets of one ``check`` run."""

    manifest: str
    snapshot_dir: str
    update: bool
    results: tuple[TargetResult, ...]

    @property
    def failed(self) -> bool:
        """Whether the check fails (exit code 1)."""
        return any(r.failed for r in self.results)

    def counts(self) -> dict[str, int]:
        """How many targets have each status."""
        return {s: sum(1 for r in self.results if r.status == s) for s in STATUSES}


def run_check(
    manifest: Manifest, rules: tuple[Rule, ...], *, update: bool, context: int = 3
) -> CheckReport:
    """Snapshot every target (one pipeline run each) and compare or update.

    Raises:
        UsageError: A target, spec or stored snapshot is invalid.
        StageError: A target failed to trace, lower or compile.
    """
    from jaxinspect.snapshot.capture import capture_snapshot
    from jaxinspect.spec import Spec, load_spec, parse_arg_options
    from jaxinspect.target import load_target

    results = []
    for item in manifest.targets:
        if item.shapes is not None:
            spec = load_spec(item.shapes)
        elif item.args:
            spec = parse_arg_options(list(item.args))
        else:
            spec = Spec(source="(no shapes)", args=())
        snapshot = capture_snapshot(load_target(item.target), spec, item.backend)
        results.append(_compare_one(manifest, item, snapshot, rules, update, context))
    results.extend(_stale(manifest, update))
    return CheckReport(str(manifest.source), str(manifest.snapshot_dir), update, tuple(results))


def _compare_one(
    manifest: Manifest,
    item: ManifestTarget,
    snapshot: Snapshot,
    rules: tuple[Rule, ...],
    update: bool,
    context: int,
) -> TargetResult:
    folder = manifest.snapshot_dir / item.name
    if not is_snapshot(folder):
        if update:
            write_snapshot(folder, snapshot)
            return TargetResult(item.name, item.target, "new", written=True)
        return TargetResult(item.name, item.target, "missing")
    stored = read_snapshot(folder)
    diff = diff_snapshots(stored, snapshot, f"stored/{item.name}", f"new/{item.name}", context)
    status = "unchanged" if diff.identical else "changed"
    if update and (not diff.identical or diff.toolchain):
        write_snapshot(folder, snapshot)
        return TargetResult(item.name, item.target, status, diff, written=True)
    verdict = None if diff.identical else evaluate(rules, diff)
    return TargetResult(item.name, item.target, status, diff, verdict)


def _stale(manifest: Manifest, update: bool) -> list[TargetResult]:
    root = manifest.snapshot_dir
    if not root.is_dir():
        return []
    names = {t.name for t in manifest.targets}
    out = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink()):
        if folder.name in names or not is_snapshot(folder):
            continue
        if update:
            remove_snapshot(folder)
        out.append(TargetResult(folder.name, "-", "stale", removed=update))
    return out
