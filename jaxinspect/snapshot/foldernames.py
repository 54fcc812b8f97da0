"""The pytest fixture's snapshot folder names, and which test owns a folder, for any length.

A test's part of the name is its class path and name (``TestA.test_x[p]``), escaped so the
map is one-to-one: letters, digits and ``_.-[]`` are kept, any other character (and a leading
dot) becomes ``%XX`` of its UTF-8 bytes. A call's ``name`` follows after ``+``. A name over
200 characters is cut and ends with ``~``, a hash of the test's part and a hash of the whole id:
the cut text cannot be read back, so ownership is decided by recomputing the hash from the
test (``owns``), never by parsing the folder name.
"""

from __future__ import annotations

import hashlib

#: Characters a snapshot folder name keeps as they are; any other is escaped as %XX (UTF-8).
_KEPT = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-[]")
#: Joins a test's part and a call's ``name`` (never kept, so the split is unambiguous).
NAME_SEP = "+"
#: Starts the hashes of a cut name (never kept either, so only cut names contain it).
CUT_MARK = "~"
MAX_FOLDER_NAME = 200
_TEST_DIGEST = 8
_ID_DIGEST = 16


def snapshot_folder_name(test_part: str, name: str) -> str:
    """The folder name of a test's snapshot, one-to-one: distinct ids get distinct folders.

    Args:
        test_part: The test's class path and name, e.g. ``TestA.test_x[p]`` (or a module's
            file stem, for the module's folder).
        name: The call's ``name``, or ``""``.
    """
    folder = escape(test_part) + (f"{NAME_SEP}{escape(name)}" if name else "")
    if len(folder) <= MAX_FOLDER_NAME:
        return folder
    whole = hashlib.sha256(f"{test_part}\0{name}".encode("utf-8", "surrogatepass")).hexdigest()
    tail = f"{CUT_MARK}{_test_digest(test_part)}-{whole[:_ID_DIGEST]}"
    return folder[: MAX_FOLDER_NAME - len(tail)] + tail


def owns(test_part: str, folder_name: str) -> bool:
    """Whether ``folder_name`` is one of the folders of the test ``test_part`` (any ``name``)."""
    if CUT_MARK in folder_name:
        return folder_name.rsplit(CUT_MARK, 1)[1].startswith(_test_digest(test_part) + "-")
    escaped = escape(test_part)
    return folder_name == escaped or folder_name.startswith(escaped + NAME_SEP)


def escape(text: str) -> str:
    """``text`` with every character outside ``[A-Za-z0-9_.\\-\\[\\]]`` (and a leading dot)
    as ``%XX``."""
    out = "".join(
        c if c in _KEPT else "".join(f"%{b:02X}" for b in c.encode("utf-8", "surrogatepass"))
        for c in text
    )
    return "%2E" + out[1:] if out.startswith(".") else out


def _test_digest(test_part: str) -> str:
    digest = hashlib.sha256(test_part.encode("utf-8", "surrogatepass")).hexdigest()
    return digest[:_TEST_DIGEST]
