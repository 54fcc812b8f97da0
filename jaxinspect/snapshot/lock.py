"""An exclusive lock on one snapshot folder, so that concurrent writers take turns.

The lock is ``flock`` on ``<folder>/.jaxinspect-lock``: the kernel releases it when its holder
dies, even by SIGKILL, so a lock is never stale. The file is removed on release; a waiter that
locked a removed file notices (its inode is no longer the one at that name) and tries again.

Not ``filelock``: its Unix lock also uses ``flock``, but opens the path with ``O_TRUNC``
(emptying a file of the user's at that name, which this lock refuses to touch), follows a
symlink there, and leaves the lock file behind; keeping the folder clean needs the inode
check above in any case.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path

from jaxinspect.errors import UsageError
from jaxinspect.snapshot.fsio import io_errors

LOCK_FILE = ".jaxinspect-lock"
#: Seconds a writer waits for another one before giving up (exit 2); see docs/snapshots.md.
LOCK_TIMEOUT_ENV = "JAXINSPECT_LOCK_TIMEOUT"
DEFAULT_TIMEOUT = 60.0
_MARK = b"jaxinspect lock, pid "
_POLL = 0.02


@contextlib.contextmanager
def folder_lock(dir_fd: int, where: Path, timeout: float | None = None) -> Iterator[None]:
    """Hold the exclusive lock of the folder open as ``dir_fd`` (``where`` names it).

    Raises:
        UsageError: Another process held the lock for ``timeout`` seconds (default
            ``$JAXINSPECT_LOCK_TIMEOUT`` or 60), the lock file is not jaxinspect's, or the
            folder cannot be written.
    """
    path = where / LOCK_FILE
    wait = _timeout() if timeout is None else timeout
    fd = _acquire(dir_fd, path, time.monotonic() + wait)
    try:
        with contextlib.suppress(OSError):  # only informs the message a waiter prints
            os.ftruncate(fd, 0)
            os.write(fd, _MARK + str(os.getpid()).encode() + b"\n")
        yield
    finally:
        # Unlink before unlocking: a waiter then finds its inode gone and starts over.
        with contextlib.suppress(OSError):
            os.unlink(LOCK_FILE, dir_fd=dir_fd)
        os.close(fd)


def _acquire(dir_fd: int, path: Path, deadline: float) -> int:
    while True:
        with io_errors(path):
            fd = os.open(
                LOCK_FILE,
                os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o644,
                dir_fd=dir_fd,
            )
        try:
            _check_ours(fd, path)
            if _try_lock(fd) and _still_linked(dir_fd, fd):
                return fd
        except BaseException:
            os.close(fd)
            raise
        holder = _holder(fd)
        os.close(fd)
        if time.monotonic() >= deadline:
            raise UsageError(
                f"another jaxinspect update of {path.parent} is running{holder}; "
                "try again when it ends",
                hint=f"Set {LOCK_TIMEOUT_ENV}=SECONDS to wait longer.",
            )
        time.sleep(_POLL)


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _still_linked(dir_fd: int, fd: int) -> bool:
    try:
        named = os.stat(LOCK_FILE, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


def _check_ours(fd: int, path: Path) -> None:
    info = os.fstat(fd)
    head = os.pread(fd, len(_MARK), 0) if stat.S_ISREG(info.st_mode) else b"?"
    if head and not head.startswith(_MARK[: len(head)]):
        raise UsageError(
            f"{path} exists and was not written by jaxinspect; it is left alone",
            hint="Move it away: jaxinspect uses this name for its lock file.",
        )


def _holder(fd: int) -> str:
    try:
        text = os.pread(fd, 64, 0)
    except OSError:
        return ""
    pid = text.removeprefix(_MARK).strip()
    return f" (pid {pid.decode()})" if text.startswith(_MARK) and pid.isdigit() else ""


def _timeout() -> float:
    raw = os.environ.get(LOCK_TIMEOUT_ENV)
    if raw is None:
        return DEFAULT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        raise UsageError(f"{LOCK_TIMEOUT_ENV}={raw!r}: expected a number of seconds") from None
    if not value >= 0:  # also refuses nan
        raise UsageError(f"{LOCK_TIMEOUT_ENV}={raw!r}: expected a number of seconds >= 0")
    return value
