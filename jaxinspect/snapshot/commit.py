"""The staging-and-commit protocol that changes a snapshot folder's files all at once.

A write creates ``<folder>/.jaxinspect-staging/``, writes every new file there, then renames
``COMMIT.new`` (the list of the new snapshot's files) to ``COMMIT``: that rename is the commit
point. It then moves the files into place and removes the staging folder. Readers see the
committed files meanwhile (staged or already moved). A write killed before the commit point is
discarded by the next writer, one killed after it is finished by the next writer.

Callers hold the folder's lock (``lock.py``) around ``recover_folder``, ``commit_files`` and
``remove_files``. Only names this protocol writes are ever removed, always through the folder's
descriptor, never through a symlink.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from jaxinspect.errors import UsageError
from jaxinspect.snapshot.fsio import (
    describe,
    entry_names,
    fsync_folder,
    io_errors,
    open_subfolder,
    unlink_file,
    write_new_file,
)
from jaxinspect.snapshot.model import SNAPSHOT_FILES, SUMMARY_FILE

STAGING_DIR = ".jaxinspect-staging"
COMMIT = "COMMIT"
_COMMIT_TMP = "COMMIT.new"
#: Everything the protocol creates in the staging folder; a staging folder holding anything
#: else is not jaxinspect's, and is left alone.
_STAGED_NAMES = frozenset((*SNAPSHOT_FILES, COMMIT, _COMMIT_TMP))
#: Test-only: seconds to sleep before each step of a write (each staged file, the commit and
#: each move), so that a test can kill a writer between two renames. Never set it otherwise.
STEP_DELAY_ENV = "JAXINSPECT_TEST_STEP_DELAY"


def recover_folder(dir_fd: int, where: Path) -> str | None:
    """Finish a committed interrupted write, or discard an uncommitted one.

    Returns:
        ``"finished"``, ``"discarded"``, or ``None`` when no write was pending.

    Raises:
        UsageError: The staging folder is not jaxinspect's, or the disk refuses.
    """
    staging = open_subfolder(dir_fd, STAGING_DIR, where)
    if staging is None:
        return None
    try:
        names = entry_names(staging)
        foreign = sorted(set(names) - _STAGED_NAMES)
        if foreign:
            raise UsageError(
                f"{where / STAGING_DIR} holds {foreign[0]!r}, which jaxinspect did not write; "
                "it is left alone",
                hint="Move the folder away: jaxinspect uses this name for unfinished writes.",
            )
        committed = read_commit(staging, where)
        with io_errors(where, "finish an interrupted write in"):
            if committed is None:
                _discard(staging)
            else:
                _roll_forward(dir_fd, staging, committed)
            os.rmdir(STAGING_DIR, dir_fd=dir_fd)
    finally:
        os.close(staging)
    fsync_folder(dir_fd)
    return "discarded" if committed is None else "finished"


def commit_files(dir_fd: int, where: Path, contents: dict[str, bytes]) -> None:
    """Replace the snapshot files of a folder (with no pending write) by ``contents``.

    Raises:
        UsageError: The disk refused; nothing changed unless the message says the write is
            committed, in which case readers already see the new files and the next write to
            the folder finishes moving them.
    """
    staged_path = where / STAGING_DIR
    with io_errors(staged_path):
        os.mkdir(STAGING_DIR, 0o777, dir_fd=dir_fd)
    staging = open_subfolder(dir_fd, STAGING_DIR, where)
    assert staging is not None  # just created, under the lock
    try:
        try:
            _stage(staging, staged_path, contents)
        except BaseException:
            with contextlib.suppress(OSError):  # best effort: the next writer discards it too
                _discard(staging)
                os.rmdir(STAGING_DIR, dir_fd=dir_fd)
            raise
        try:
            _roll_forward(dir_fd, staging, frozenset(contents))
            os.rmdir(STAGING_DIR, dir_fd=dir_fd)
        except OSError as exc:
            raise UsageError(
                f"cannot write {where}: {describe(exc)}; the new snapshot is committed and the "
                "next write to this folder finishes moving it into place"
            ) from None
    finally:
        os.close(staging)
    fsync_folder(dir_fd)


def remove_files(dir_fd: int, where: Path) -> None:
    """Delete the snapshot files of a folder with no pending write, nothing else."""
    with io_errors(where, "remove the snapshot in"):
        for name in SNAPSHOT_FILES:
            unlink_file(dir_fd, name)
    fsync_folder(dir_fd)


def read_commit(staging: int, where: Path) -> frozenset[str] | None:
    """The files named by a staging folder's ``COMMIT``, or ``None`` if it has none.

    Raises:
        UsageError: ``COMMIT`` is not one jaxinspect wrote.
    """
    try:
        fd = os.open(COMMIT, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=staging)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UsageError(f"cannot read {where / STAGING_DIR / COMMIT}: {describe(exc)}") from None
    with os.fdopen(fd, "rb") as handle:
        names = frozenset(handle.read(4096).decode("utf-8", "replace").split())
    if SUMMARY_FILE not in names or not names <= set(SNAPSHOT_FILES):
        raise UsageError(
            f"{where / STAGING_DIR / COMMIT} was not written by jaxinspect; it is left alone",
            hint="Move the staging folder away: jaxinspect uses this name for unfinished writes.",
        )
    return names


def _stage(staging: int, staged_path: Path, contents: dict[str, bytes]) -> None:
    for name, data in contents.items():
        _step()
        with io_errors(staged_path / name):
            write_new_file(staging, name, data)
    record = "".join(f"{name}\n" for name in contents).encode()
    _step()
    with io_errors(staged_path / COMMIT):
        write_new_file(staging, _COMMIT_TMP, record)
        fsync_folder(staging)  # the staged files' names are durable before the commit
        os.replace(_COMMIT_TMP, COMMIT, src_dir_fd=staging, dst_dir_fd=staging)
        fsync_folder(staging)


def _roll_forward(dir_fd: int, staging: int, committed: frozenset[str]) -> None:
    # Idempotent, so that a writer killed here is finished by the next one: a committed name
    # missing from staging was moved already, and a name the new snapshot lacks is removed.
    for name in SNAPSHOT_FILES:
        if name not in committed:
            unlink_file(dir_fd, name)
            continue
        _step()
        with contextlib.suppress(FileNotFoundError):
            os.replace(name, name, src_dir_fd=staging, dst_dir_fd=dir_fd)
    fsync_folder(dir_fd)
    unlink_file(staging, _COMMIT_TMP)
    unlink_file(staging, COMMIT)


def _discard(staging: int) -> None:
    for name in entry_names(staging):
        if name in _STAGED_NAMES:
            unlink_file(staging, name)


def _step() -> None:
    delay = os.environ.get(STEP_DELAY_ENV)
    if delay:
        with contextlib.suppress(ValueError):
            time.sleep(float(delay))
