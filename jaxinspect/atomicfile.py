"""Write an output file by the output policy: replace regular files atomically, write through
to devices and pipes, refuse what must not be replaced.

Shared by the files users keep: HTML reports, bench baselines, specs (snapshots have their
own commit protocol in ``snapshot/commit.py``). The policy, as docs/cli.md states it:

- a new path or a regular file is written to a temporary file beside it and renamed over it,
  so a reader (or a killed run) sees the old file or the new one; an existing file keeps its
  permissions (and, run as root, its owner);
- a character device (``/dev/null``, ``/dev/full``), a FIFO, a socket, and any path under
  ``/dev/`` or ``/proc/`` (``/dev/stdout``) is opened and written through, never replaced:
  a rename there would put a regular file in place of the machine's device node;
- a symlink is followed: the policy applies to the file it points to (which is replaced in its
  own folder, the link kept); a dangling one creates its target;
- a read-only file, a folder and a block device are refused (exit 2), as is any write the
  system refuses (a full disk, ``/dev/full``, a closed pipe), naming the path.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from jaxinspect.errors import UsageError

#: Paths under these folders are kernel objects or links to them: written through, always.
_SPECIAL_FOLDERS = ("/dev/", "/proc/")


def write_atomically(path: Path, text: str, *, what: str) -> None:
    """Write ``text`` to ``path`` by the output policy above.

    Raises:
        UsageError: The policy refuses ``path``, or the system refused the write (naming
            ``what``, the path and the reason).
    """
    try:
        replaced = _file_to_replace(path, what)
        if replaced is None:
            _write_through(path, text)
        else:
            target, kept = replaced
            _replace(target, text, kept)
    except OSError as exc:
        raise UsageError(f"cannot write {what} {path}: {exc.strerror or exc}") from exc


def _file_to_replace(path: Path, what: str) -> tuple[Path, os.stat_result | None] | None:
    """The file to replace atomically and the status to keep, or ``None`` to write through.

    Raises:
        UsageError: ``path`` is a folder, a block device or a read-only file.
    """
    absolute = os.path.abspath(path)
    real = os.path.realpath(path)
    if absolute.startswith(_SPECIAL_FOLDERS) or real.startswith(_SPECIAL_FOLDERS):
        if not os.path.exists(path):  # never create a file among the device nodes
            raise UsageError(f"cannot write {what} {path}: no such device or file")
        return None
    try:
        status = os.stat(path)  # follows a symlink: the policy is the pointed-to file's
    except FileNotFoundError:
        return Path(real), None  # a new file (or a dangling link's target)
    mode = status.st_mode
    if stat.S_ISDIR(mode):
        raise UsageError(f"cannot write {what} {path}: it is a folder")
    if stat.S_ISBLK(mode):
        raise UsageError(f"cannot write {what} {path}: it is a block device (refused)")
    if not stat.S_ISREG(mode):
        return None  # a character device, a FIFO, a socket: write through
    if not mode & 0o222 or not os.access(path, os.W_OK):
        raise UsageError(
            f"cannot write {what} {path}: the file is read-only (jaxinspect does not replace "
            "read-only files)",
            hint="Make it writable (chmod u+w) or write to another path.",
        )
    return Path(real), status


def _write_through(path: Path, text: str) -> None:
    with open(path, "w", encoding="utf-8") as out:
        out.write(text)
        out.flush()


def _replace(path: Path, text: str, kept: os.stat_result | None) -> None:
    """Write through a temporary file beside ``path`` and rename it over ``path``."""
    fd, staging = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            if kept is None:
                # mkstemp makes the file private (0600); a new report reads like any file.
                umask = os.umask(0)
                os.umask(umask)
                os.fchmod(out.fileno(), 0o666 & ~umask)
            else:
                os.fchmod(out.fileno(), stat.S_IMODE(kept.st_mode))
                if os.geteuid() == 0:  # root replacing a user's file leaves it theirs
                    os.fchown(out.fileno(), kept.st_uid, kept.st_gid)
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(staging, path)
    except BaseException:
        Path(staging).unlink(missing_ok=True)
        raise
