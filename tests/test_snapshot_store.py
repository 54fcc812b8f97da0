"""Snapshot store safety: symlinks, foreign files, recovery, locking, corrupt files, I/O errors.

Each test reproduces a failure of issue #11 (the item is named in its docstring).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import CHECK_MANIFEST, CHECK_PROGRAM, edit_module
from jaxinspect.errors import UsageError
from jaxinspect.snapshot.model import SNAPSHOT_FILES
from jaxinspect.snapshot.store import (
    STAGING_DIR,
    read_snapshot,
    recover,
    write_snapshot,
)

NAMES = ("prog_double", "shift")


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two snapshot folders, ``double`` and ``shifted``, taken once for the module."""
    from jaxinspect.inputs.spec import parse_arg_options
    from jaxinspect.inputs.target import load_target
    from jaxinspect.snapshot.capture import capture_snapshot

    root = tmp_path_factory.mktemp("store")
    (root / "prog.py").write_text(textwrap.dedent(CHECK_PROGRAM))
    for name in ("double", "shifted"):
        spec = parse_arg_options(["x=f32[4]"])
        write_snapshot(root / name, capture_snapshot(load_target(f"{root}/prog.py:{name}"), spec))
    return root


@pytest.fixture
def project(stored: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A manifest project whose stored snapshots match its program (``check`` passes)."""
    (tmp_path / "prog.py").write_text(textwrap.dedent(CHECK_PROGRAM))
    (tmp_path / "jaxinspect.yaml").write_text(CHECK_MANIFEST)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "prog", raising=False)  # import this project's prog.py
    return tmp_path


def _update(run_cli: Callable[..., Any], project: Path) -> Any:
    result = run_cli("check", "--update", "--format", "json")
    assert result.exit_code == 0, result.stderr
    return result


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


def _snapshot_files(folder: Path) -> dict[str, bytes]:
    return {n: (folder / n).read_bytes() for n in SNAPSHOT_FILES if (folder / n).exists()}


# Item 1: writes never follow or delete through a symlink, nor delete a user's files.


@pytest.mark.parametrize("staging", [".staging", STAGING_DIR])
def test_a_symlinked_staging_folder_is_never_followed(
    stored: Path, tmp_path: Path, staging: str
) -> None:
    """Issue #11 item 1: a ``.staging`` symlink made ``check --update`` empty its target."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("keep")
    (outside / "COMMIT").write_text("summary.json\n")
    dest = tmp_path / "snap"
    shutil.copytree(stored / "double", dest)
    (dest / staging).symlink_to(outside)
    if staging == STAGING_DIR:
        with pytest.raises(UsageError, match="symbolic link.*left alone"):
            write_snapshot(dest, read_snapshot(stored / "shifted"))
    else:  # an unrelated name: not jaxinspect's, not touched
        write_snapshot(dest, read_snapshot(stored / "shifted"))
        assert _snapshot_files(dest) == _snapshot_files(stored / "shifted")
    assert sorted(p.name for p in outside.iterdir()) == ["COMMIT", "precious.txt"]
    assert (outside / "precious.txt").read_text() == "keep"
    assert (dest / staging).is_symlink()


@pytest.mark.parametrize("staging", [".staging", STAGING_DIR])
def test_a_staging_folder_holding_user_files_is_left_alone(
    stored: Path, tmp_path: Path, staging: str
) -> None:
    """Issue #11 item 1: a real ``.staging/`` holding the user's files was emptied silently."""
    dest = tmp_path / "snap"
    shutil.copytree(stored / "double", dest)
    (dest / staging).mkdir()
    (dest / staging / "notes.md").write_text("mine")
    (dest / staging / "hlo.txt").write_text("also mine")
    if staging == STAGING_DIR:
        with pytest.raises(UsageError, match="'notes.md', which jaxinspect did not write"):
            write_snapshot(dest, read_snapshot(stored / "shifted"))
        assert _snapshot_files(dest) == _snapshot_files(stored / "double")
    else:
        write_snapshot(dest, read_snapshot(stored / "shifted"))
        assert _snapshot_files(dest) == _snapshot_files(stored / "shifted")
    assert (dest / staging / "notes.md").read_text() == "mine"
    assert (dest / staging / "hlo.txt").read_text() == "also mine"


def test_symlinked_snapshot_files_and_lock_are_not_followed(stored: Path, tmp_path: Path) -> None:
    """A snapshot file that is a symlink is replaced, never written through; a lock too."""
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep")
    dest = tmp_path / "snap"
    shutil.copytree(stored / "double", dest)
    (dest / "hlo.txt").unlink()
    (dest / "hlo.txt").symlink_to(target)
    (dest / "provenance.json").unlink()
    (dest / "provenance.json").symlink_to(target)
    with pytest.raises(UsageError, match="hlo.txt: corrupt snapshot: it is a symbolic link"):
        read_snapshot(dest)
    write_snapshot(dest, read_snapshot(stored / "shifted"))
    assert not (dest / "hlo.txt").is_symlink()
    assert _snapshot_files(dest) == _snapshot_files(stored / "shifted")
    assert target.read_text() == "keep"

    (dest / ".jaxinspect-lock").symlink_to(target)
    with pytest.raises(UsageError, match="jaxinspect-lock: it is a symbolic link"):
        write_snapshot(dest, read_snapshot(stored / "double"))
    assert target.read_text() == "keep"
    (dest / ".jaxinspect-lock").unlink()
    (dest / ".jaxinspect-lock").write_text("a user's file")
    with pytest.raises(UsageError, match="not written by jaxinspect"):
        write_snapshot(dest, read_snapshot(stored / "double"))
    assert (dest / ".jaxinspect-lock").read_text() == "a user's file"


def test_symlink_policy_in_check(
    run_cli: Callable[..., Any], project: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """snapshot_dir may be a symlink (you named it); a target folder inside it may not."""
    real = tmp_path_factory.mktemp("real_snaps")
    (project / "snaps").symlink_to(real)
    _update(run_cli, project)
    assert sorted(p.name for p in real.iterdir()) == sorted(NAMES)
    linked = tmp_path_factory.mktemp("linked_target")
    shutil.rmtree(real / "shift")
    (real / "shift").symlink_to(linked)
    for args in (("check",), ("check", "--update")):
        result = run_cli(*args)
        assert result.exit_code == 2
        assert "shift is a symbolic link" in result.stderr and "Traceback" not in result.stderr
    assert list(linked.iterdir()) == []


# Item 3: any pending commit is finished (or rolled back) before anything else.


def _kill_after_commit(source: Path | dict[str, bytes], dest: Path, moved: int) -> None:
    """Leave ``dest`` as a writer of ``source``'s files killed after ``moved`` renames."""
    files = source if isinstance(source, dict) else _snapshot_files(source)
    staging = dest / STAGING_DIR
    staging.mkdir()
    for name, content in files.items():
        (staging / name).write_bytes(content)
    (staging / "COMMIT").write_text("".join(f"{n}\n" for n in files))
    for name in list(files)[:moved]:
        os.replace(staging / name, dest / name)


def test_check_update_finishes_interrupted_writes_of_unchanged_targets(
    run_cli: Callable[..., Any], project: Path, stored: Path
) -> None:
    """Issue #11 item 3: a pending commit was finished only when the target had changed."""
    _update(run_cli, project)
    snaps = project / "snaps"
    current = _snapshot_files(snaps / "prog_double")
    # prog_double: killed while writing its current snapshot over an older one.
    old = snaps / "prog_double"
    for name in SNAPSHOT_FILES:
        (old / name).write_bytes((stored / "shifted" / name).read_bytes())
    _kill_after_commit(current, old, moved=2)
    # shift: killed before its commit point; a stale folder: killed after it.
    (snaps / "shift" / STAGING_DIR).mkdir()
    (snaps / "shift" / STAGING_DIR / "hlo.txt").write_text("half-writ")
    shutil.copytree(stored / "double", snaps / "gone")
    _kill_after_commit(stored / "shifted", snaps / "gone", moved=1)

    result = run_cli("check", "--update", "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert _files(old) == current  # whole on disk: no staging folder, no old file left
    assert not (old / STAGING_DIR).exists() and not (snaps / "shift" / STAGING_DIR).exists()
    assert not (snaps / "gone").exists()
    statuses = {t["name"]: t["status"] for t in json.loads(result.stdout)["targets"]}
    assert statuses == {"prog_double": "unchanged", "shift": "unchanged", "gone": "stale"}
    assert f"{old}: finished an interrupted update" in result.stderr
    assert "discarded an interrupted, uncommitted update" in result.stderr


def test_check_update_removes_the_lock_file_of_a_killed_writer(
    run_cli: Callable[..., Any], project: Path
) -> None:
    """A writer killed after its last rename leaves its lock file in a whole folder."""
    _update(run_cli, project)
    folder = project / "snaps" / "shift"
    current = _files(folder)
    (folder / ".jaxinspect-lock").write_text("jaxinspect lock, pid 99999\n")
    _update(run_cli, project)
    assert _files(folder) == current


def test_plain_check_reads_an_interrupted_write_as_committed_and_says_so(
    run_cli: Callable[..., Any], project: Path, stored: Path
) -> None:
    _update(run_cli, project)
    folder = project / "snaps" / "prog_double"
    current = _snapshot_files(folder)
    _kill_after_commit(current, folder, moved=0)
    for name in SNAPSHOT_FILES:
        (folder / name).write_bytes((stored / "shifted" / name).read_bytes())
    result = run_cli("check")
    assert result.exit_code == 0, result.stdout
    assert "update was interrupted" in result.stderr and "check --update" in result.stderr
    assert (folder / STAGING_DIR).is_dir()  # a plain check writes nothing
    recover(folder)
    assert _files(folder) == current


# Item 4: concurrent writers take turns.


def test_concurrent_writers_take_turns(
    stored: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue #11 item 4: a second writer deleted the first one's staged files mid-write."""
    dest = tmp_path / "snap"
    shutil.copytree(stored / "double", dest)
    first, second = read_snapshot(stored / "shifted"), read_snapshot(stored / "double")
    paused, resume = threading.Event(), threading.Event()
    real_replace = os.replace
    errors: list[BaseException] = []

    def replace(*args: Any, **kwargs: Any) -> None:
        if threading.current_thread().name == "first" and not paused.is_set():
            paused.set()  # the first writer stops at its first rename, staging in place
            assert resume.wait(30)
        real_replace(*args, **kwargs)

    def write(snapshot: Any) -> None:
        try:
            write_snapshot(dest, snapshot)
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)

    monkeypatch.setattr(os, "replace", replace)
    writer_one = threading.Thread(target=write, args=(first,), name="first")
    writer_one.start()
    assert paused.wait(30)
    writer_two = threading.Thread(target=write, args=(second,), name="second")
    writer_two.start()
    writer_two.join(0.5)
    waited = writer_two.is_alive()
    resume.set()
    writer_one.join(30)
    writer_two.join(30)
    assert errors == []
    assert waited, "the second writer must wait for the first"
    assert _files(dest) == _snapshot_files(stored / "double")  # the later write, whole


def test_a_held_lock_is_a_clear_exit_2(
    run_cli: Callable[..., Any], project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jaxinspect.snapshot.lock import folder_lock

    _update(run_cli, project)
    edit_module(project / "prog.py", textwrap.dedent(CHECK_PROGRAM).replace("2.0", "3.0"))
    monkeypatch.delitem(sys.modules, "prog", raising=False)
    monkeypatch.setenv("JAXINSPECT_LOCK_TIMEOUT", "0.2")
    before = _files(project / "snaps" / "prog_double")
    fd = os.open(project / "snaps", os.O_RDONLY)
    try:
        with folder_lock(fd, project / "snaps"):
            result = run_cli("check", "--update")
    finally:
        os.close(fd)
    assert result.exit_code == 2
    assert f"another jaxinspect update of {project / 'snaps'} is running (pid {os.getpid()})" in (
        result.stderr
    )
    assert _files(project / "snaps" / "prog_double") == before
    assert not (project / "snaps" / ".jaxinspect-lock").exists()


def test_readers_see_whole_snapshots_while_a_writer_works(stored: Path, tmp_path: Path) -> None:
    dest = tmp_path / "snap"
    shutil.copytree(stored / "double", dest)
    versions = [read_snapshot(stored / n) for n in ("double", "shifted")]
    stop = threading.Event()

    def keep_writing() -> None:
        i = 0
        while not stop.is_set():
            write_snapshot(dest, versions[i % 2])
            i += 1

    writer = threading.Thread(target=keep_writing)
    writer.start()
    try:
        seen = {read_snapshot(dest).texts for _ in range(300)}
    finally:
        stop.set()
        writer.join(30)
    assert seen <= {v.texts for v in versions}


# Item 9: stored snapshots are validated on read; check --update repairs corrupt ones.


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda d: d["cost"].update(flops="x"), "cost.flops must be a number or null, got 'x'"),
        (lambda d: d["ops"]["hlo"].update(add=-1), "ops.hlo.add must be an integer >= 0, got -1"),
        (lambda d: d.pop("header"), "header must be an object"),
        (lambda d: d.update(format_version="1"), "format_version must be a positive integer"),
    ],
)
def test_corrupt_summaries_are_exit_2_naming_the_file_and_update_rewrites_them(
    run_cli: Callable[..., Any],
    project: Path,
    damage: Callable[[dict[str, Any]], Any],
    message: str,
) -> None:
    """Issue #11 items 6 and 9: ``"flops": "x"`` was exit 4, and no update repaired it."""
    _update(run_cli, project)
    summary = project / "snaps" / "shift" / "summary.json"
    good = summary.read_bytes()
    data = json.loads(good)
    damage(data)
    summary.write_text(json.dumps(data))
    for args in (("check",), ("diff", project / "snaps" / "shift", project / "snaps" / "shift")):
        result = run_cli(*args)
        assert result.exit_code == 2, result.stdout
        assert f"Error: {summary}: corrupt snapshot: {message}" in result.stderr
        assert "check --update" in result.stderr and "Traceback" not in result.stderr
    repaired = run_cli("check", "--update")
    assert repaired.exit_code == 0, repaired.stderr
    assert f"note: {summary}: corrupt snapshot" in repaired.stderr
    assert "rewrote it" in repaired.stderr
    assert summary.read_bytes() == good
    assert run_cli("check").exit_code == 0


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("summary.json", b"{not json", "not valid JSON"),
        ("hlo.txt", b"\xff\xfe", "not UTF-8 text"),
        ("hlo.txt", None, "the file is missing"),
    ],
)
def test_damaged_files_are_corrupt(
    stored: Path, tmp_path: Path, name: str, content: bytes | None, message: str
) -> None:
    dest = tmp_path / "snap"
    shutil.copytree(stored / "double", dest)
    if content is None:
        (dest / name).unlink()
    else:
        (dest / name).write_bytes(content)
    with pytest.raises(UsageError, match=message) as info:
        read_snapshot(dest)
    assert str(dest / name) in info.value.message


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda d: d["header"].update(x64="no"), "header.x64 must be true or false, got 'no'"),
        (lambda d: d["header"].pop("backend"), "header.backend must be a string (it is missing)"),
        (
            lambda d: d["cost"].update(flops=-1.5),
            "cost.flops must be a number >= 0 or null, got -1.5",
        ),
        (lambda d: d["memory"].pop("temp_bytes"), "memory.temp_bytes must be a number or null"),
        (lambda d: d["ops"].update(mlir={}), "ops.mlir must be absent (not a stage: jaxpr,"),
        (lambda d: d["collectives"].update(x=True), "collectives.x must be an integer, got True"),
        (lambda d: d.update(collective_bytes=[]), "collective_bytes must be an object, got []"),
        (lambda d: d.update(fusion_count=None), None),  # null: a text without fusions
        (lambda d: d.pop("collective_bytes"), None),  # written before it was recorded
        (lambda d: d["unavailable"].update(cost=3), "unavailable.cost must be a string, got 3"),
        (lambda d: d.update(extra=1), "extra must be absent (not one of its fields), got 1"),
        (lambda d: d["cost"].update(flops=float("nan")), "cost.flops must be a number or null"),
    ],
)
def test_a_summary_is_read_by_its_type_naming_the_file_and_the_first_wrong_key(
    stored: Path, tmp_path: Path, damage: Callable[[dict[str, Any]], Any], message: str | None
) -> None:
    # summary.json is read by the dataclass that writes it (SummaryFile): every key is checked
    # as it is read, nested ones included, and a wrong one is named by its JSON path.
    dest = tmp_path / "snap"
    shutil.copytree(stored / "double", dest)
    data = json.loads((dest / "summary.json").read_text())
    damage(data)
    (dest / "summary.json").write_text(json.dumps(data))
    if message is None:
        assert read_snapshot(dest).summary.cost == read_snapshot(stored / "double").summary.cost
        return
    with pytest.raises(UsageError) as info:
        read_snapshot(dest)
    assert info.value.message.startswith(f"{dest / 'summary.json'}: corrupt snapshot: {message}")


def test_a_summary_reads_back_as_it_was_written(stored: Path) -> None:
    # One description both ways: the file read and written again has the same bytes.
    from jaxinspect.snapshot.model import dump_json, summary_to_dict

    snapshot = read_snapshot(stored / "double")
    assert snapshot.header is not None
    text = dump_json(summary_to_dict(snapshot.header, snapshot.summary))
    assert text == (stored / "double" / "summary.json").read_text()


def test_a_newer_format_is_refused_naming_the_version(
    run_cli: Callable[..., Any], project: Path
) -> None:
    """Issue #11 item 9: ``format_version: 99`` was accepted as identical."""
    _update(run_cli, project)
    folder = project / "snaps" / "shift"
    data = json.loads((folder / "summary.json").read_text())
    data["format_version"] = 99
    (folder / "summary.json").write_text(json.dumps(data))
    provenance = json.loads((folder / "provenance.json").read_text())
    provenance["jaxinspect_version"] = "9.1.0"
    (folder / "provenance.json").write_text(json.dumps(provenance))
    for args in (("check",), ("check", "--update"), ("diff", folder, folder)):
        result = run_cli(*args)
        assert result.exit_code == 2, result.stdout
        assert "snapshot format 99 was written by jaxinspect 9.1.0" in result.stderr
        assert "this jaxinspect reads format 1" in result.stderr
    assert json.loads((folder / "summary.json").read_text())["format_version"] == 99


# Item 6: I/O errors are one-line exit-2 errors naming the path; nothing is half-written.


def test_snapshot_out_an_existing_file(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    """Issue #11 item 6: ``snapshot --out FILE`` was exit 4 with a traceback."""
    (tmp_path / "prog.py").write_text(textwrap.dedent(CHECK_PROGRAM))
    taken = tmp_path / "taken.txt"
    taken.write_text("mine")
    result = run_cli("snapshot", f"{tmp_path}/prog.py:double", "--arg", "x=f32[4]", "--out", taken)
    assert result.exit_code == 2
    assert (
        result.stderr == f"Error: cannot create {taken}: a file is in the way (expected a folder)\n"
    )
    assert taken.read_text() == "mine"


_FULL_DISK = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG instead
resource.setrlimit(resource.RLIMIT_FSIZE, (200, 200))
from jaxinspect.cli.entry import main
sys.argv = ["jaxinspect", *sys.argv[1:]]
main()
"""


def test_a_full_disk_is_exit_2_and_leaves_the_old_snapshot(stored: Path, tmp_path: Path) -> None:
    """Issue #11 item 6: a full disk was exit 4 with a traceback and left staging behind."""
    dest = tmp_path / "snap"
    shutil.copytree(stored / "shifted", dest)
    _kill_after_commit(stored / "double", dest, moved=1)  # an interrupted write, too
    (tmp_path / "prog.py").write_text(textwrap.dedent(CHECK_PROGRAM).replace("2.0", "5.0"))
    result = subprocess.run(
        # -B: under the 200-byte limit a bytecode write is cut short without an error (FileIO
        # writes once), and the truncated .pyc would break every later import of the package.
        [sys.executable, "-B", "-c", _FULL_DISK, "snapshot", f"{tmp_path}/prog.py:double"]
        + ["--arg", "x=f32[4]", "--out", str(dest)],
        capture_output=True,
        text=True,
        # No bytecode written under the 200-byte limit: a module whose .pyc is missing or
        # stale (after a merge or a move) would otherwise leave a truncated .pyc behind, and
        # every later import of it fails with "marshal data too short".
        env={**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONDONTWRITEBYTECODE": "1"},
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"Error: cannot write {dest}/{STAGING_DIR}/")
    assert result.stderr.strip().endswith(os.strerror(errno.EFBIG))
    assert "Traceback" not in result.stderr
    assert sorted(os.listdir(dest)) == sorted(SNAPSHOT_FILES)  # interrupted write finished
    assert _files(dest) == _snapshot_files(stored / "double")


@pytest.fixture
def read_only_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every creation of a file or folder under ``tmp_path`` fails as on a read-only mount."""
    real_open, real_mkdir = os.open, os.mkdir
    writes = os.O_WRONLY | os.O_RDWR | os.O_CREAT

    def refuse(path: Any, dir_fd: int | None) -> None:
        if dir_fd is not None or str(path).startswith(str(tmp_path)):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))

    def open_(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        if flags & writes:
            refuse(path, dir_fd)
        return real_open(path, flags, mode, dir_fd=dir_fd)

    def mkdir(path: Any, mode: int = 0o777, *, dir_fd: int | None = None) -> None:
        refuse(path, dir_fd)
        real_mkdir(path, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "open", open_)
    monkeypatch.setattr(os, "mkdir", mkdir)
    yield


def test_a_read_only_disk_is_exit_2(
    run_cli: Callable[..., Any], project: Path, stored: Path, request: pytest.FixtureRequest
) -> None:
    """Issue #11 item 6: a read-only disk, with an interrupted write left, was exit 4."""
    _update(run_cli, project)
    folder = project / "snaps" / "prog_double"
    _kill_after_commit(_snapshot_files(folder), folder, moved=0)
    edit_module(project / "prog.py", textwrap.dedent(CHECK_PROGRAM).replace("2.0", "3.0"))
    before = _files(folder)
    request.getfixturevalue("read_only_disk")
    result = run_cli("check", "--update")
    assert result.exit_code == 2
    assert result.stderr == (
        f"Error: cannot write {project / 'snaps' / '.jaxinspect-lock'}: Read-only file system\n"
    )
    result = run_cli("snapshot", "prog.py:double", "--arg", "x=f32[4]", "--out", project / "new")
    assert result.exit_code == 2
    assert result.stderr == f"Error: cannot create {project / 'new'}: Read-only file system\n"
    assert _files(folder) == before and (folder / STAGING_DIR).is_dir()
