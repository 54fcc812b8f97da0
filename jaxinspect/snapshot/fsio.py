"""File-system primitives of the snapshot store: folder descriptors and readable I/O errors.

Every operation inside a snapshot folder goes through a descriptor of that folder and never
follows a symlink, so nothing outside it is read through, written or deleted.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from pathlib import Path

from jaxinspect.errors import UsageError

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_SYMLINK = "it is a symbolic link, which jaxinspect does not follow here"


@contextlib.contextmanager
def io_errors(path: Path, action: str = "write") -> Iterator[None]:
    """Turn an ``OSError`` (full or read-only disk, a file in the way) into a ``UsageError``."""
    try:
        yield
    except OSError as exc:
        raise UsageError(f"cannot {action} {path}: {describe(exc)}") from None


def describe(exc: OSError) -> str:
    """The reason of an ``OSError`` in words, with the symlink and not-a-folder cases named."""
    if exc.errno == errno.ELOOP:
        return _SYMLINK
    if exc.errno in (errno.ENOTDIR, errno.EEXIST):
        return "a file is in the way (expected a folder)"
    return exc.strerror or str(exc)


def make_folder(path: Path) -> None:
    """Create ``path`` and its parents (the path the user named: symlinks in it are followed).

    Raises:
        UsageError: A file is in the way, or the disk refuses.
    """
    with io_errors(path, "create"):
        path.mkdir(parents=True, exist_ok=True)


def open_folder(path: Path, *, follow: bool) -> int:
    """A descriptor of the folder ``path``; ``follow=False`` refuses a symlink as last part.

    Raises:
        UsageError: ``path`` is not a folder, is a refused symlink, or cannot be opened.
    """
    flags = _DIR_FLAGS | (0 if follow else os.O_NOFOLLOW)
    try:
        return os.open(path, flags)
    except OSError as exc:
        reason = _SYMLINK if not follow and path.is_symlink() else describe(exc)
        raise UsageError(f"cannot open {path}: {reason}") from None


def open_subfolder(dir_fd: int, name: str, where: Path) -> int | None:
    """A descriptor of the real folder ``name`` inside ``dir_fd``, or ``None`` if absent.

    Raises:
        UsageError: ``name`` is a symlink, a file, or cannot be opened.
    """
    try:
        return os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        # O_DIRECTORY reports a symlink as "not a directory": name what it is.
        reason = _SYMLINK if (where / name).is_symlink() else describe(exc)
        raise UsageError(
            f"{where / name}: {reason}; it is left alone",
            hint="Move it away: jaxinspect uses this name for its own files.",
        ) from None


def entry_names(dir_fd: int) -> list[str]:
    """Names in the folder open as ``dir_fd``."""
    # listdir(fd) consumes the descriptor's position; a duplicate keeps ``dir_fd`` reusable.
    dup = os.dup(dir_fd)
    try:
        return os.listdir(dup)
    finally:
        os.close(dup)


def write_new_file(dir_fd: int, name: str, data: bytes) -> None:
    """Create ``name`` (which must not exist) in ``dir_fd`` and make it durable."""
    # 0o666 less the umask, as for any file the user creates (mkstemp's 0o600 would hide
    # snapshots from other CI users).
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666, dir_fd=dir_fd)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def unlink_file(dir_fd: int, name: str) -> None:
    """Remove ``name`` (a file or a symlink, never what it points to) if present."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name, dir_fd=dir_fd)


def fsync_folder(dir_fd: int) -> None:
    """Make renames and removals in the folder durable."""
    with contextlib.suppress(OSError):  # some file systems refuse fsync on folders
        os.fsync(dir_fd)
