"""Read and write snapshot folders atomically, touching nothing outside the named folder.

A write stages every file in ``<folder>/.staging/``, then records ``COMMIT`` there, then moves
the files into place with ``os.replace``. An interrupted write is finished (after ``COMMIT``)
or discarded (before it) by the next writer, and readers see the committed files meanwhile,
so every snapshot reads as entirely old or entirely new.
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path

from jaxinspect.errors import UsageError
from jaxinspect.snapshot.loose import loose_pair
from jaxinspect.snapshot.model import (
    PROVENANCE_FILE,
    SNAPSHOT_FILES,
    STAGE_FILES,
    SUMMARY_FILE,
    Snapshot,
    dump_json,
    provenance_from_dict,
    provenance_to_dict,
    summary_from_dict,
    summary_to_dict,
)
from jaxinspect.snapshot.textdiff import LineDiff

STAGING_DIR = ".staging"
_COMMIT = "COMMIT"
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


def is_snapshot(folder: Path) -> bool:
    """Whether ``folder`` holds a snapshot (committed or being committed)."""
    return (folder / SUMMARY_FILE).is_file() or (folder / STAGING_DIR / _COMMIT).is_file()


def write_snapshot(folder: Path, snapshot: Snapshot) -> None:
    """Write ``snapshot`` into ``folder`` (created if needed) so readers never see a mix."""
    folder.mkdir(parents=True, exist_ok=True)
    recover(folder)
    staging = folder / STAGING_DIR
    staging.mkdir(exist_ok=True)
    contents = _file_contents(snapshot)
    for name, content in contents.items():
        _atomic_write(staging / name, content)
    # The commit record names the new snapshot's files, so a resumed roll-forward knows which
    # missing ones were already moved and which belong to the old snapshot only.
    _atomic_write(staging / _COMMIT, "".join(f"{name}\n" for name in contents))
    _fsync_dir(staging)
    _roll_forward(folder)


def recover(folder: Path) -> None:
    """Finish a committed interrupted write, or discard an uncommitted one."""
    staging = folder / STAGING_DIR
    if not staging.is_dir():
        return
    if (staging / _COMMIT).is_file():
        _roll_forward(folder)
    else:
        _remove_staging(staging)


def read_snapshot(folder: Path) -> Snapshot:
    """Load a snapshot folder, seeing a committed-but-unfinished write as finished.

    Raises:
        UsageError: The folder is not a snapshot or a file in it is unreadable.
    """
    if not folder.is_dir():
        raise UsageError(f"{folder}: no such snapshot folder")
    summary_text = _read_file(folder, SUMMARY_FILE)
    if summary_text is None:
        raise UsageError(f"{folder}: not a snapshot (no {SUMMARY_FILE})")
    try:
        header, summary = summary_from_dict(json.loads(summary_text))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UsageError(f"{folder / SUMMARY_FILE}: malformed snapshot summary ({exc})") from None
    texts = []
    for stage, filename in STAGE_FILES:
        text = _read_file(folder, filename)
        if text is not None:
            texts.append((stage, text))
    provenance = None
    raw = _read_file(folder, PROVENANCE_FILE)
    if raw is not None:
        try:
            provenance = provenance_from_dict(json.loads(raw))
        except (ValueError, KeyError, TypeError, AttributeError):
            provenance = None  # provenance is informative only
    return Snapshot(header, summary, tuple(texts), provenance)


def load_sides(
    old: Path, new: Path, meanwhile: Callable[[], object] | None = None
) -> tuple[Snapshot, Snapshot, dict[str, LineDiff]]:
    """The two sides of ``diff``: two snapshot folders, or two stage text files.

    Also the line diffs already computed while reading, by stage (for ``diff_snapshots``).
    ``meanwhile`` is passed on to ``loose_pair``.

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
    return loose_pair(_read_text(old), lambda: _read_text(new), meanwhile)


def _read_text(path: Path) -> str:
    try:
        text = _decoded(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read ({exc})") from None
    # What text mode's universal newlines would do, at a fraction of its cost on 14 MB.
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def _decoded(path: Path) -> str:
    # Decoding straight from a memory map skips a copy: a fresh 14 MB buffer costs more than
    # reading it into that buffer.
    with path.open("rb") as file:
        if os.fstat(file.fileno()).st_size == 0:
            return ""
        with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            return str(mapped, "utf-8")


def remove_snapshot(folder: Path) -> None:
    """Delete a snapshot's own files (and the folder if that leaves it empty), nothing else."""
    recover(folder)
    for name in SNAPSHOT_FILES:
        (folder / name).unlink(missing_ok=True)
    with contextlib.suppress(OSError):  # the folder holds files that are not ours: leave them
        folder.rmdir()


def _file_contents(snapshot: Snapshot) -> dict[str, str]:
    files = {f: snapshot.text(stage) for stage, f in STAGE_FILES}
    out = {name: text for name, text in files.items() if text is not None}
    if snapshot.header is None:
        raise UsageError("a snapshot without a toolchain header cannot be stored")
    out[SUMMARY_FILE] = dump_json(summary_to_dict(snapshot.header, snapshot.summary))
    if snapshot.provenance is not None:
        out[PROVENANCE_FILE] = dump_json(provenance_to_dict(snapshot.provenance))
    return out


def _read_file(folder: Path, name: str) -> str | None:
    committed = _committed_files(folder)
    path = folder / name
    if committed is not None:
        if name not in committed:
            return None  # the committed snapshot has no such file
        staged = folder / STAGING_DIR / name
        path = staged if staged.is_file() else path
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read ({exc})") from None


def _committed_files(folder: Path) -> frozenset[str] | None:
    """Files of a committed but unfinished write, or ``None`` when none is pending."""
    try:
        record = (folder / STAGING_DIR / _COMMIT).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    return frozenset(record.split())


def _roll_forward(folder: Path) -> None:
    staging = folder / STAGING_DIR
    committed = _committed_files(folder) or frozenset()
    for name in SNAPSHOT_FILES:
        if name not in committed:  # a file the new snapshot lacks must not survive
            (folder / name).unlink(missing_ok=True)
        elif (staging / name).is_file():
            os.replace(staging / name, folder / name)
    _fsync_dir(folder)
    _remove_staging(staging)


def _remove_staging(staging: Path) -> None:
    for path in staging.iterdir():
        if path.is_symlink() or path.is_file():
            path.unlink()
    staging.rmdir()


def _atomic_write(path: Path, content: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp's 0600 would hide snapshots from CI users
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return  # platforms without directory fds (Windows)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
