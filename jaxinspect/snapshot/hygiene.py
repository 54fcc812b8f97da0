"""Which stored fixture snapshots no test uses any more, judged only where that is certain.

The pytest fixture stores ``<test dir>/__jaxinspect__/<module>/<test>[+<name>]/``. A folder is
*unused* when its module ran completely in this session (no ``-k``, ``-m``, ``--lf`` or node-id
selection left any of its tests out), every test that could own it passed, and no call claimed
it; or when its whole module folder belongs to a test file that no longer exists. Anything
less certain is left alone, so a partial run never flags or deletes another test's snapshot.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

#: The fixture's folder next to each test file (syrupy owns ``__snapshots__``).
SNAPSHOT_ROOT = "__jaxinspect__"
#: Where versions before 0.2 stored them, shared with syrupy, which deletes what it doesn't know.
OLD_SNAPSHOT_ROOT = "__snapshots__"


@dataclass
class ModuleRun:
    """What one test module did in this session."""

    folder: Path  # <test dir>/__jaxinspect__/<module>
    complete: bool = True  # every test of the module was selected
    unsettled: set[str] = field(default_factory=set)  # escaped names of tests that did not pass


def unused_folders(
    modules: Iterable[ModuleRun], used: set[Path], test_dirs: Iterable[Path]
) -> list[Path]:
    """Snapshot folders no test claimed, in judged modules; plus orphaned module folders."""
    from jaxinspect.snapshot.store import is_snapshot

    found: list[Path] = []
    judged: set[Path] = set()
    for module in modules:
        judged.add(module.folder)
        if not module.complete or not module.folder.is_dir():
            continue
        for child in sorted(module.folder.iterdir()):
            if child in used or not is_snapshot(child):
                continue
            owner = child.name.split("+", 1)[0]
            if owner in module.unsettled:
                continue  # its test failed or was skipped before it could claim the folder
            found.append(child)
    for test_dir in set(test_dirs):
        root = test_dir / SNAPSHOT_ROOT
        if not root.is_dir():
            continue
        for module_folder in sorted(root.iterdir()):
            if module_folder in judged or not module_folder.is_dir():
                continue
            if _test_file(test_dir, module_folder.name).exists():
                continue  # a module this session did not run: not ours to judge
            found += [c for c in sorted(module_folder.iterdir()) if is_snapshot(c)]
    return found


def old_location_folders(test_dirs: Iterable[Path]) -> list[Path]:
    """Module folders under ``__snapshots__`` that hold jaxinspect snapshots (to be moved)."""
    from jaxinspect.snapshot.store import is_snapshot

    found = []
    for test_dir in sorted(set(test_dirs)):
        old = test_dir / OLD_SNAPSHOT_ROOT
        if not old.is_dir():
            continue
        for module_folder in sorted(old.iterdir()):
            if module_folder.is_dir() and any(is_snapshot(c) for c in module_folder.iterdir()):
                found.append(module_folder)
    return found


def move_command(folders: list[Path]) -> str:
    """A shell line moving each old module folder to the fixture's own folder."""
    import shlex

    steps = []
    for folder in folders:
        new_root = folder.parent.parent / SNAPSHOT_ROOT
        steps.append(f"mkdir -p {shlex.quote(str(new_root))}")
        steps.append(f"mv {shlex.quote(str(folder))} {shlex.quote(str(new_root))}/")
    return " && ".join(dict.fromkeys(steps))


def remove_folder(folder: Path, root: Path) -> None:
    """Delete one snapshot folder, refusing anything outside ``root`` or not a snapshot."""
    import shutil

    from jaxinspect.snapshot.store import is_snapshot

    resolved = folder.resolve()
    if root.resolve() not in resolved.parents or not is_snapshot(folder) or folder.is_symlink():
        raise ValueError(f"refusing to delete {folder}: not a snapshot inside {root}")
    shutil.rmtree(resolved)


def _test_file(test_dir: Path, escaped_module: str) -> Path:
    from urllib.parse import unquote

    return test_dir / f"{unquote(escaped_module)}.py"
