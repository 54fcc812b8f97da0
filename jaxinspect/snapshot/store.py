"""Read and write snapshot folders atomically, touching nothing outside the named folder.

Writes follow ``commit.py`` (stage, commit, move into place) under the folder's lock
(``lock.py``); reads see the committed files only (``view.py``) and validate them
(``validate.py``). A symlink is followed only in the path the caller names, never inside it.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path

from jaxinspect.errors import UsageError
from jaxinspect.snapshot.commit import (
    STAGING_DIR,
    commit_files,
    recover_folder,
    remove_files,
)
from jaxinspect.snapshot.fsio import make_folder, open_folder
from jaxinspect.snapshot.lock import LOCK_FILE, folder_lock
from jaxinspect.snapshot.loose import loose_pair
from jaxinspect.snapshot.loosefile import EarlyCount, read_text, unix_newlines
from jaxinspect.snapshot.model import (
    PROVENANCE_FILE,
    STAGE_FILES,
    SUMMARY_FILE,
    Snapshot,
    dump_json,
    provenance_from_dict,
    provenance_to_dict,
    summary_to_dict,
)
from jaxinspect.snapshot.validate import CorruptSnapshotError, NewerSnapshotError, parse_summary
from jaxinspect.snapshot.view import has_snapshot, read_committed
from jaxinspect.textdiff.linediff import LineDiff
from jaxinspect.xla.hlocount import RenamedBasis

__all__ = ["STAGING_DIR", "CorruptSnapshotError"]

_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]+")
_MAX_NAME = 120


def safe_name(name: str) -> str:
    """A file-system-safe snapshot name: ``[A-Za-z0-9_.-]``, no leading dot, no separators.

    ``mlp.py:predict`` -> ``mlp.py_predict``; ``../../etc`` -> ``etc``.

    Raises:
        UsageError: Nothing usable is left of ``name``.
    """
    cleaned = _UNSAFE.sub("_", name).strip("._-")[:_MAX_NAME].rstrip("._-")
    if not cleaned:
        raise UsageError(f"snapshot name {name!r} has no characters usable in a file name")
    return cleaned


def has_leftovers(folder: Path) -> bool:
    """Whether ``folder`` holds an interrupted write or the lock file of a killed writer."""
    return any(os.path.lexists(folder / name) for name in (STAGING_DIR, LOCK_FILE))


def is_snapshot(folder: Path) -> bool:
    """Whether ``folder`` holds a snapshot (committed or being committed)."""
    return has_snapshot(folder)


@contextlib.contextmanager
def locked(folder: Path, *, follow_symlink: bool = True) -> Iterator[int]:
    """Create ``folder`` if needed and hold its lock; yields its descriptor.

    ``follow_symlink=False`` refuses a ``folder`` that is itself a symlink (its parents may
    be symlinks).

    Raises:
        UsageError: The folder cannot be created or opened, or another writer holds the lock
            for too long.
    """
    make_folder(folder)
    dir_fd = open_folder(folder, follow=follow_symlink)
    try:
        with folder_lock(dir_fd, folder):
            yield dir_fd
    finally:
        os.close(dir_fd)


def check_destination(folder: Path) -> None:
    """Refuse a non-empty folder that holds no snapshot as the place to write one.

    ``snapshot --out`` replaces a snapshot's own files; in a folder of the user's own files
    it would replace their ``summary.json`` or ``hlo.txt`` without a word.

    Raises:
        UsageError: ``folder`` holds files and no readable snapshot.
    """
    try:
        names = sorted(set(os.listdir(folder)) - {LOCK_FILE, STAGING_DIR})
    except FileNotFoundError:
        return
    except OSError:
        return  # not a folder, unreadable: the write names the problem
    if not names or _holds_snapshot(folder):
        return
    shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
    raise UsageError(
        f"{folder} is not empty and holds no jaxinspect snapshot ({shown}): "
        "refusing to write a snapshot into it",
        hint="Name a new or empty folder, or a snapshot folder to replace.",
    )


def _holds_snapshot(folder: Path) -> bool:
    if not is_snapshot(folder):
        return False
    try:
        read_snapshot(folder)
    except NewerSnapshotError:
        return True  # ours, from a newer jaxinspect
    except UsageError:
        return False  # someone else's summary.json, or a damaged snapshot: the user decides
    return True


def write_snapshot(folder: Path, snapshot: Snapshot, *, follow_symlink: bool = True) -> None:
    """Write ``snapshot`` into ``folder`` (created if needed) so readers never see a mix.

    A pending interrupted write is finished or discarded first.

    Raises:
        UsageError: The disk refused (full, read-only, a file in the way), the folder is a
            refused symlink, or another writer held the folder for too long.
    """
    contents = _file_contents(snapshot)
    existed = os.path.lexists(folder)
    try:
        with locked(folder, follow_symlink=follow_symlink) as dir_fd:
            recover_folder(dir_fd, folder)
            commit_files(dir_fd, folder, contents)
    except BaseException:
        if not existed:  # leave no empty folder behind a failed first write
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise


def recover(folder: Path, *, follow_symlink: bool = True) -> str | None:
    """Finish a committed interrupted write, or discard an uncommitted one.

    Returns:
        ``"finished"``, ``"discarded"`` or ``None`` (nothing was pending).
    """
    with locked(folder, follow_symlink=follow_symlink) as dir_fd:
        return recover_folder(dir_fd, folder)


def remove_snapshot(folder: Path) -> None:
    """Delete a snapshot's own files (and the folder if that leaves it empty), nothing else.

    Raises:
        UsageError: ``folder`` is a symlink, or the disk refused.
    """
    with locked(folder, follow_symlink=False) as dir_fd:
        recover_folder(dir_fd, folder)
        remove_files(dir_fd, folder)
    with contextlib.suppress(OSError):  # the folder holds files that are not ours: leave them
        folder.rmdir()


def read_snapshot(folder: Path) -> Snapshot:
    """Load and validate a snapshot folder, seeing a committed-but-unfinished write as done.

    Raises:
        CorruptSnapshotError: A file is damaged or missing.
        NewerSnapshotError: A newer jaxinspect wrote it.
        UsageError: The folder is not a snapshot or cannot be read.
    """
    if not folder.is_dir():
        raise UsageError(f"{folder}: no such snapshot folder")
    files = read_committed(folder)
    if SUMMARY_FILE not in files:
        raise UsageError(f"{folder}: not a snapshot (no {SUMMARY_FILE})")
    provenance = None
    if PROVENANCE_FILE in files:
        import json  # here: a diff of two loose text files reads no JSON

        try:
            provenance = provenance_from_dict(json.loads(files[PROVENANCE_FILE]))
        except (ValueError, KeyError, TypeError, AttributeError):
            provenance = None  # provenance is informative only
    written_by = None if provenance is None else provenance.jaxinspect_version
    header, summary = parse_summary(files[SUMMARY_FILE], folder / SUMMARY_FILE, written_by)
    texts = []
    for stage, filename in STAGE_FILES:
        if filename not in files:
            raise CorruptSnapshotError(folder / filename, "the file is missing")
        try:
            text = files[filename].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CorruptSnapshotError(folder / filename, f"not UTF-8 text ({exc})") from None
        texts.append((stage, unix_newlines(text)))
    return Snapshot(header, summary, tuple(texts), provenance)


def load_sides(
    old: Path,
    new: Path,
    meanwhile: Callable[[], object] | None = None,
    early: EarlyCount | None = None,
    diffed: Callable[[LineDiff], RenamedBasis | None] | None = None,
) -> tuple[Snapshot, Snapshot, dict[str, LineDiff]]:
    """The two sides of ``diff``: two snapshot folders, or two stage text files.

    Also the line diffs already computed while reading, by stage (for ``diff_snapshots``).
    ``meanwhile`` is passed on to ``loose_pair``; ``early``, if given, is
    ``loosefile.start_count(old, new)``: the old file already read and being counted.
    ``diffed`` is passed on to ``loose_pair``.

    Raises:
        UsageError: A path does not exist or cannot be read, or a folder meets a file.
    """
    for path in (old, new):
        if not path.exists():
            raise UsageError(f"{path}: no such snapshot folder or file")
    if old.is_dir() != new.is_dir():
        raise UsageError(f"compare a folder with a folder or a file with a file: {old}, {new}")
    if old.is_dir():
        return read_snapshot(old), read_snapshot(new), {}
    if early is not None and early.path == old:
        return loose_pair(early.text, lambda: read_text(new), meanwhile, early.parts, diffed)
    return loose_pair(read_text(old), lambda: read_text(new), meanwhile, diffed=diffed)


def _file_contents(snapshot: Snapshot) -> dict[str, bytes]:
    if snapshot.header is None:
        raise UsageError("a snapshot without a toolchain header cannot be stored")
    files = {f: snapshot.text(stage) for stage, f in STAGE_FILES}
    out = {name: text.encode() for name, text in files.items() if text is not None}
    out[SUMMARY_FILE] = dump_json(summary_to_dict(snapshot.header, snapshot.summary)).encode()
    if snapshot.provenance is not None:
        out[PROVENANCE_FILE] = dump_json(provenance_to_dict(snapshot.provenance)).encode()
    return out
