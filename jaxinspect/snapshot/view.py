"""Read a snapshot folder's committed files as one consistent set, even while a writer works.

Readers take no lock. They read the committed view (see ``commit.py``), then check that every
file they read is still the one that view names (same inode, size and modification time);
if a write committed in between, they read again.
"""

from __future__ import annotations

import contextlib
import errno
import os
import time
from collections.abc import Iterator
from pathlib import Path

from jaxinspect.errors import UsageError
from jaxinspect.snapshot.commit import COMMIT, STAGING_DIR, read_commit
from jaxinspect.snapshot.fsio import describe, open_folder, open_subfolder
from jaxinspect.snapshot.model import SNAPSHOT_FILES, SUMMARY_FILE
from jaxinspect.snapshot.validate import CorruptSnapshotError

_TRIES = 50
_Identity = tuple[str, int, int, int, int]


class _Moved(Exception):
    """A file moved or vanished while being read: read the view again."""


def has_snapshot(folder: Path) -> bool:
    """Whether ``folder`` holds a snapshot (committed, or committed and being moved in)."""
    if os.path.lexists(folder / SUMMARY_FILE):
        return True
    staging = folder / STAGING_DIR
    return staging.is_dir() and not staging.is_symlink() and (staging / COMMIT).is_file()


def read_committed(folder: Path) -> dict[str, bytes]:
    """The bytes of each file of the snapshot committed in ``folder``, by file name.

    Raises:
        UsageError: A file cannot be read, is a symlink, or the folder kept changing.
    """
    dir_fd = open_folder(folder, follow=True)
    try:
        for _ in range(_TRIES):
            with contextlib.suppress(_Moved):
                files, read = _read_once(dir_fd, folder)
                if _identities(dir_fd, folder) == read:
                    return files
            time.sleep(0.01)
    finally:
        os.close(dir_fd)
    raise UsageError(f"{folder}: the snapshot kept changing while being read; try again")


def _read_once(dir_fd: int, folder: Path) -> tuple[dict[str, bytes], list[_Identity]]:
    files: dict[str, bytes] = {}
    identities: list[_Identity] = []
    with _located(dir_fd, folder) as located:
        for name, holder, staged in located:
            try:
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=holder)
            except FileNotFoundError:
                raise _Moved from None
            except OSError as exc:
                path = folder / STAGING_DIR / name if staged else folder / name
                if exc.errno == errno.ELOOP:  # a damaged snapshot: --update replaces the link
                    raise CorruptSnapshotError(path, describe(exc)) from None
                raise UsageError(f"cannot read {path}: {describe(exc)}") from None
            with os.fdopen(fd, "rb") as handle:
                info = os.fstat(handle.fileno())
                files[name] = handle.read()
            identities.append((name, info.st_dev, info.st_ino, info.st_mtime_ns, info.st_size))
    return files, identities


def _identities(dir_fd: int, folder: Path) -> list[_Identity]:
    out = []
    with _located(dir_fd, folder) as located:
        for name, holder, _ in located:
            try:
                info = os.stat(name, dir_fd=holder, follow_symlinks=False)
            except FileNotFoundError:
                raise _Moved from None
            out.append((name, info.st_dev, info.st_ino, info.st_mtime_ns, info.st_size))
    return out


@contextlib.contextmanager
def _located(dir_fd: int, folder: Path) -> Iterator[list[tuple[str, int, bool]]]:
    """(name, descriptor of the folder holding it, whether that is the staging folder)."""
    staging = open_subfolder(dir_fd, STAGING_DIR, folder)
    try:
        committed = None if staging is None else read_commit(staging, folder)
        out = []
        for name in SNAPSHOT_FILES:
            if committed is not None and name not in committed:
                continue  # the committed snapshot has no such file
            if staging is not None and committed is not None and _exists(staging, name):
                out.append((name, staging, True))
            elif _exists(dir_fd, name):
                out.append((name, dir_fd, False))
        yield out
    finally:
        if staging is not None:
            os.close(staging)


def _exists(dir_fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    except OSError:
        return True  # reading it reports the error
    return True
