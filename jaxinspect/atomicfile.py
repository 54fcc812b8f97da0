"""Write a file atomically: a reader (or a killed run) sees the old file or the new one.

Shared by the files users keep: bench baselines and HTML reports (snapshots have their own
commit protocol in ``snapshot/commit.py``).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from jaxinspect.errors import UsageError


def write_atomically(path: Path, text: str, *, what: str) -> None:
    """Write ``text`` to ``path`` through a temporary file beside it and a rename.

    Raises:
        UsageError: The file cannot be written (naming ``what`` and the reason).
    """
    folder = path.parent if str(path.parent) else Path(".")
    try:
        fd, staging = tempfile.mkstemp(prefix=f".{path.name}.", dir=folder)
        try:
            # mkstemp makes the file private (0600); a written report reads like any file.
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(staging, 0o666 & ~umask)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text)
                out.flush()
                os.fsync(out.fileno())
            os.replace(staging, path)
        except BaseException:
            Path(staging).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise UsageError(f"cannot write {what} {path}: {exc.strerror or exc}") from exc
