"""Which stored fixture snapshots no test uses any more, and deleting them without collateral.

The pytest fixture stores ``<test dir>/__jaxinspect__/<module>/<test>[+<name>]/``. Given the
modules a session ran completely (the plugin decides that, see ``pytest_record``), a
folder is *unused* when no call claimed it and no test that could own it failed or was
skipped; a module folder whose test file no longer exists holds only unused snapshots. A
symbolic link is never followed: it is not judged, and is named instead. Deleting removes the
snapshot's own files only (``store.remove_snapshot``), so a user's ``NOTES.md`` stays, named.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from jaxinspect.snapshot.foldernames import owns, snapshot_folder_name

#: The fixture's folder next to each test file (syrupy owns ``__snapshots__``).
SNAPSHOT_ROOT = "__jaxinspect__"
#: Where versions before 0.2 stored them, shared with syrupy, which deletes what it doesn't know.
OLD_SNAPSHOT_ROOT = "__snapshots__"


@dataclass(frozen=True, slots=True)
class Judgement:
    """Unused snapshot folders, and symbolic links met on the way (not followed)."""

    unused: tuple[Path, ...]
    links: tuple[Path, ...]


@dataclass(frozen=True, slots=True)
class Removal:
    """One deleted snapshot: what was left in its folder (not jaxinspect's), or the error."""

    folder: Path
    kept: tuple[str, ...] = ()
    error: str | None = None


def module_folder(test_file: Path) -> Path:
    """``<test dir>/__jaxinspect__/<module>`` of a test file."""
    return test_file.parent / SNAPSHOT_ROOT / snapshot_folder_name(test_file.stem, "")


def judge_unused(
    complete: Mapping[Path, Iterable[str]],
    collected: Iterable[Path],
    used: set[Path],
    test_dirs: Iterable[Path],
) -> Judgement:
    """Unused snapshot folders of the modules that ran completely, and of deleted test files.

    Args:
        complete: Module folders whose every test ran, each with the test parts
            (``TestA.test_x``) of its tests that did not pass (their folders are kept).
        collected: Every module folder the session collected (never orphaned).
        used: Snapshot folders a call claimed.
        test_dirs: Folders holding collected test files (searched for orphaned modules).
    """
    unused: list[Path] = []
    links: list[Path] = []
    for folder, unsettled in sorted(complete.items()):
        parts = tuple(unsettled)
        for child in _children(folder, links):
            if child in used or any(owns(part, child.name) for part in parts):
                continue
            unused.append(child)
    known = set(collected)
    for test_dir in sorted(set(test_dirs)):
        root = test_dir / SNAPSHOT_ROOT
        if not root.is_dir():
            continue
        modules = {snapshot_folder_name(p.stem, "") for p in test_dir.glob("*.py")}
        for entry in sorted(root.iterdir()):
            if entry in known or entry.name in modules:
                continue  # a module this session ran, or did not run but still exists
            unused += _children(entry, links)
    return Judgement(tuple(unused), tuple(dict.fromkeys(links)))


def delete_unused(folders: Iterable[Path]) -> list[Removal]:
    """Delete each snapshot's own files; a folder left empty goes, and so does its module's."""
    from jaxinspect.errors import JaxInspectError
    from jaxinspect.snapshot.store import remove_snapshot

    removals = []
    for folder in folders:
        try:
            remove_snapshot(folder)
        except JaxInspectError as exc:
            removals.append(Removal(folder, error=exc.message))
            continue
        kept = tuple(sorted(_names(folder)))
        removals.append(Removal(folder, kept))
        if not kept:
            _remove_if_empty(folder.parent)
    return removals


def old_location_folders(test_dirs: Iterable[Path]) -> list[Path]:
    """Module folders under ``__snapshots__`` that hold jaxinspect snapshots (to be moved)."""
    from jaxinspect.snapshot.store import is_snapshot

    found = []
    for test_dir in sorted(set(test_dirs)):
        old = test_dir / OLD_SNAPSHOT_ROOT
        if not old.is_dir():
            continue
        for module in sorted(old.iterdir()):
            if module.is_symlink() or not module.is_dir():
                continue
            if any(is_snapshot(c) for c in module.iterdir() if not c.is_symlink()):
                found.append(module)
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


def _children(module: Path, links: list[Path]) -> list[Path]:
    """The snapshot folders in ``module``; symbolic links (the module's too) go to ``links``."""
    from jaxinspect.snapshot.store import is_snapshot

    if module.is_symlink():
        links.append(module)
        return []
    if not module.is_dir():
        return []
    found = []
    for child in sorted(module.iterdir()):
        if child.is_symlink():
            links.append(child)
        elif child.is_dir() and is_snapshot(child):
            found.append(child)
    return found


def _names(folder: Path) -> list[str]:
    """What is left in ``folder`` (nothing if it is gone), sub-folders marked with ``/``."""
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return []
    return [e.name + ("/" if e.is_dir(follow_symlinks=False) else "") for e in entries]


def _remove_if_empty(folder: Path) -> None:
    with contextlib.suppress(OSError):  # not empty (another test's snapshots, a user's file)
        folder.rmdir()
