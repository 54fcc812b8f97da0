"""Issue #22, outputs and isolation: one regression test per defect number (d01, d08, ...).

Outputs replace only what they wrote (devices, FIFOs and ``/dev/stdout`` are written
through, ``-o -`` is stdout, read-only files and foreign folders are refused, write errors
are exit 2); each ``check`` target runs with JAX's configuration as the process started plus
its own module's changes, and the working folder and ``sys.path`` come back after user code.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import sample

sys.path.insert(0, str(Path(__file__).resolve().parent / "benchmarks"))

import bench_check_isolation as isolation  # noqa: E402

SIMPLE = (f"{sample('simple.py')}:sin_cos", "-s", sample("simple.yaml"))
ENV = dict(os.environ, JAX_PLATFORMS="cpu", COLUMNS="100", NO_COLOR="1")

#: A target that moves the working folder and puts its own folder first on sys.path at import,
#: as research scripts do.
MOVING_TARGET = """
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
os.makedirs(os.path.join(here, "elsewhere"), exist_ok=True)
os.chdir(os.path.join(here, "elsewhere"))

import jax.numpy as jnp


def f(x):
    return jnp.sin(x) * 2


def make():
    return {"x": jnp.ones(4)}
"""


def _jaxinspect(*args: Any, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "jaxinspect", *map(str, args)]
    return subprocess.run(command, cwd=cwd, env=ENV, capture_output=True, text=True, timeout=300)


# --- defect 1: outputs replace only regular files ------------------------------------------


def test_d01_devices_and_stdout_are_written_through_never_replaced() -> None:
    from jaxinspect.atomicfile import _file_to_replace

    # The decision alone first: nothing is written unless it is "write through".
    for device in ("/dev/null", "/dev/full", "/dev/stdout"):
        assert _file_to_replace(Path(device), "the report") is None, device


def test_d01_report_to_dev_null_leaves_the_device(run_cli: Callable[..., Any]) -> None:
    from jaxinspect.atomicfile import _file_to_replace

    assert _file_to_replace(Path("/dev/null"), "the report") is None  # never a rename
    before = os.stat("/dev/null")
    result = run_cli("report", *SIMPLE, "-o", "/dev/null")
    assert result.exit_code == 0, result.stderr
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev
    assert after.st_ino == before.st_ino


def test_d01_a_fifo_gets_the_report_and_stays_a_fifo(
    run_cli: Callable[..., Any], tmp_path: Path
) -> None:
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    result = run_cli("report", *SIMPLE, "-o", fifo)
    reader.join(timeout=60)
    assert result.exit_code == 0, result.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert received and received[0].startswith(b"<!DOCTYPE html>")


def test_d01_a_character_device_node_is_written_through(tmp_path: Path) -> None:
    from jaxinspect.atomicfile import write_atomically

    node = tmp_path / "null"
    try:  # a second node of /dev/null's device, in a folder of our own (needs root)
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("creating a device node needs root")
    write_atomically(node, "<html>", what="the report")
    assert stat.S_ISCHR(os.lstat(node).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null"]  # no staging file left


def test_d01_dev_full_is_exit_2_naming_the_path(run_cli: Callable[..., Any]) -> None:
    result = run_cli("report", *SIMPLE, "-o", "/dev/full")
    assert result.exit_code == 2
    assert "cannot write the report /dev/full: No space left on device" in result.stderr
    assert "wrote" not in result.stderr
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_d01_dev_stdout_writes_to_standard_output(tmp_path: Path) -> None:
    done = _jaxinspect("report", *SIMPLE, "-o", "/dev/stdout", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("<!DOCTYPE html>") and done.stdout.endswith("</html>\n")
    assert os.path.islink("/dev/stdout")


def test_d01_a_symlink_is_followed_keeping_the_link_and_the_permissions(
    run_cli: Callable[..., Any], tmp_path: Path
) -> None:
    target = tmp_path / "kept" / "report.html"
    target.parent.mkdir()
    target.write_text("old")
    target.chmod(0o640)
    link = tmp_path / "link.html"
    link.symlink_to(target)
    result = run_cli("report", *SIMPLE, "-o", link)
    assert result.exit_code == 0, result.stderr
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text().startswith("<!DOCTYPE html>")
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(p.name for p in target.parent.iterdir()) == ["report.html"]


def test_d01_a_read_only_file_or_a_folder_is_refused(
    run_cli: Callable[..., Any], tmp_path: Path
) -> None:
    read_only = tmp_path / "report.html"
    read_only.write_text("mine")
    read_only.chmod(0o444)
    result = run_cli("report", *SIMPLE, "-o", read_only)
    assert result.exit_code == 2
    assert f"cannot write the report {read_only}: the file is read-only" in result.stderr
    assert read_only.read_text() == "mine" and stat.S_IMODE(read_only.stat().st_mode) == 0o444
    folder = run_cli("report", *SIMPLE, "-o", tmp_path)
    assert folder.exit_code == 2 and "it is a folder" in folder.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]


def test_d01_bench_save_follows_the_same_policy(
    run_cli: Callable[..., Any], tmp_path: Path
) -> None:
    full = run_cli("bench", *SIMPLE, "--cold-runs", "1", "--runs", "2", "--save", "/dev/full")
    assert full.exit_code == 2, full.stderr
    assert "cannot write the baseline /dev/full: No space left on device" in full.stderr
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


# --- defect 8: outputs resolved before user code; the folder restored after it ---------------


def test_d08_a_target_that_chdirs_moves_no_output(
    run_cli: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "prog.py").write_text(MOVING_TARGET)
    (tmp_path / "s.yaml").write_text("args:\n  x: f32[4]\n")
    monkeypatch.chdir(tmp_path)
    target = ("prog.py:f", "-s", "s.yaml")
    assert run_cli("report", *target, "-o", "r.html").exit_code == 0
    assert run_cli("snapshot", *target, "--out", "snap").exit_code == 0
    spec = run_cli("spec", "prog.py:f", "--from", "prog.py:make", "-o", "spec.yaml")
    assert spec.exit_code == 0, spec.stderr
    bench = run_cli("bench", *target, "--cold-runs", "1", "--runs", "2", "--save", "b.json")
    assert bench.exit_code == 0, bench.stderr  # not "s.yaml: spec file not found"
    assert Path.cwd() == tmp_path
    assert (tmp_path / "r.html").is_file() and (tmp_path / "snap" / "hlo.txt").is_file()
    assert (tmp_path / "spec.yaml").is_file() and (tmp_path / "b.json").is_file()
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_d08_user_code_gets_the_folder_and_path_back() -> None:
    from jaxinspect.errors import StageError
    from jaxinspect.process.usercode import user_code

    folder, path = os.getcwd(), list(sys.path)
    with pytest.raises(StageError), user_code("import", "prog.py:f"):
        os.chdir("/")
        sys.path.insert(0, "/nonexistent")
        raise RuntimeError("the user's code failed after moving")
    assert os.getcwd() == folder and sys.path == path


# --- defect 9: snapshot --out refuses a folder of other files --------------------------------


def test_d09_snapshot_out_refuses_a_folder_that_holds_no_snapshot(
    run_cli: Callable[..., Any], tmp_path: Path
) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "summary.json").write_text('{"my": "results"}')
    (mine / "hlo.txt").write_text("my notes")
    result = run_cli("snapshot", *SIMPLE, "--out", mine)
    assert result.exit_code == 2
    assert f"{mine} is not empty and holds no jaxinspect snapshot" in result.stderr
    assert (mine / "summary.json").read_text() == '{"my": "results"}'
    assert sorted(p.name for p in mine.iterdir()) == ["hlo.txt", "summary.json"]


def test_d09_snapshot_out_writes_a_new_an_empty_or_a_snapshot_folder(
    run_cli: Callable[..., Any], tmp_path: Path
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    for folder in (tmp_path / "new", empty, tmp_path / "new"):  # the last: a snapshot already
        result = run_cli("snapshot", *SIMPLE, "--out", folder)
        assert result.exit_code == 0, result.stderr
        assert (folder / "summary.json").is_file()


# --- defect 10: targets isolated from each other (config-leak matrix, small) -----------------


def test_d10_check_verdicts_are_the_same_for_jobs_shards_and_order(tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    isolation.write_project(folder)
    isolation.update(folder)
    names = {name for _, name, _ in isolation.TARGETS}
    for label, codes, verdicts, _ in isolation.run_matrix(folder, isolation.SMALL_MATRIX):
        assert set(codes) == {0}, label
        assert verdicts == dict.fromkeys(names, "unchanged"), label


def test_d10_configured_sets_the_changes_and_puts_the_base_back() -> None:
    import jax

    from jaxinspect.pipeline.jaxconfig import changes_since, configured, read_config

    base = read_config()
    with configured(base, (("jax_enable_x64", True),)):
        assert jax.config.values["jax_enable_x64"] is True
        assert changes_since(base) == (("jax_enable_x64", True),)
    assert jax.config.values["jax_enable_x64"] is False and changes_since(base) == ()


# --- defect 13: diff counts the ops of one-line jaxprs ---------------------------------------


def test_d13_one_line_jaxprs_count_their_ops(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    from jaxinspect.snapshot.loose import text_op_counts

    old = tmp_path / "old.txt"
    new = tmp_path / "new.txt"
    old.write_text("{ lambda ; a:f32[]. let b:f32[] = cos a in (b,) }\n")
    new.write_text("{ lambda ; a:f32[]. let b:f32[] = cos a; c:f32[] = sin b in (c,) }\n")
    assert text_op_counts("jaxpr", new.read_text()) == (("cos", 1), ("sin", 1))
    assert run_cli("diff", old, new, "--fail-on", "new-op:sin").exit_code == 1
    assert run_cli("diff", new, old, "--fail-on", "new-op:sin").exit_code == 0


def test_d13_nested_one_line_jaxprs_count_like_the_snapshot() -> None:
    import jax
    import jax.numpy as jnp

    from jaxinspect.snapshot.loose import text_op_counts

    def branches(x: Any) -> Any:
        return jax.lax.cond(x > 0, jnp.sin, jnp.cos, x)

    text = str(jax.make_jaxpr(branches)(1.0))
    counts = dict(text_op_counts("jaxpr", text))
    assert counts["sin"] == counts["cos"] == counts["cond"] == 1


# --- defect 20: a neighbour cannot shadow jaxinspect's dependencies -------------------------


def test_d20_sys_path_insert_beside_a_rich_py_is_harmless(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "prog.py").write_text(MOVING_TARGET)
    (project / "rich.py").write_text('raise RuntimeError("the neighbour rich.py was imported")\n')
    done = _jaxinspect("stages", project / "prog.py:f", "--arg", "x=f32[4]", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "sin" in done.stdout


def test_d20_a_neighbour_the_target_imports_is_forgotten_after_it(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "rich.py").write_text("MINE = True\n")
    (project / "prog.py").write_text(
        "import os, sys\n"
        "sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))\n"
        "import rich\n"
        "assert rich.MINE  # the target gets its neighbour\n"
        "def f(x):\n    return x + 1\n"
    )
    done = _jaxinspect("stages", project / "prog.py:f", "--arg", "x=f32[4]", cwd=tmp_path)
    assert done.returncode == 0, done.stderr  # and jaxinspect the real rich for its tables
    assert "add" in done.stdout


# --- defect 27: the report's embedded JSON cannot swallow its script -------------------------

SCOPED_TARGET = """
import jax
import jax.numpy as jnp


def f(x):
    with jax.named_scope("<!--<script>"):
        return jnp.sin(x) + 1
"""


def test_d27_embedded_json_escapes_angle_brackets_and_ampersands() -> None:
    from jaxinspect.htmlreport.embed import embedded_json

    value = {"scope": "<!--<script></script>&"}
    text = embedded_json(value)
    assert not set("<>&") & set(text)
    assert json.loads(text) == value


def test_d27_a_script_like_name_scope_leaves_the_report_script_whole(
    run_cli: Callable[..., Any], tmp_path: Path
) -> None:
    (tmp_path / "prog.py").write_text(SCOPED_TARGET)
    out = tmp_path / "r.html"
    result = run_cli("report", f"{tmp_path / 'prog.py'}:f", "--arg", "x=f32[8]", "-o", out)
    assert result.exit_code == 0, result.stderr
    html = out.read_text()
    start = html.index('<script type="application/json" id="ops">') + len(
        '<script type="application/json" id="ops">'
    )
    data = html[start : html.index("</script>", start)]
    assert "<" not in data and "\\u003c!--\\u003cscript\\u003e" in data
    assert "<!--<script>" in json.dumps(json.loads(data), ensure_ascii=False)
    # The data ends where it should: every script element the page opens is closed.
    assert html[html.index("</script>", start) :].startswith("</script><script")
    assert html.count("<script") == html.count("</script>")
    _page_script_runs(out)


def _page_script_runs(report: Path) -> None:
    """In Chromium where available: clicking a node opens its details (the script ran)."""
    import shutil

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return
    if chromium is None:
        return
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(report.as_uri())
        shown = []
        for node in page.locator("svg.graph g.node").all():
            node.click()
            assert page.locator("#details").is_visible()
            shown.append(page.locator("#details").inner_text())
        assert any("<!--<script>" in text for text in shown), shown
        browser.close()
        assert errors == []


# --- defect 33: -o - is standard output ------------------------------------------------------


def test_d33_dash_is_stdout_where_a_command_prints_a_file(
    run_cli: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    report = run_cli("report", *SIMPLE, "-o", "-")
    assert report.exit_code == 0, report.stderr
    assert report.stdout.startswith("<!DOCTYPE html>")
    (tmp_path / "prog.py").write_text(MOVING_TARGET)
    spec = run_cli("spec", "prog.py:f", "--from", "prog.py:make", "-o", "-")
    assert spec.exit_code == 0, spec.stderr
    assert "args: {x: 'f32[4]'}" in spec.stdout
    assert not (tmp_path / "-").exists()


def test_d33_dash_is_refused_where_stdout_cannot_hold_the_output(
    run_cli: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    snap = run_cli("snapshot", *SIMPLE, "-o", "-")
    assert snap.exit_code == 2 and "--out -: a snapshot is a folder of files" in snap.stderr
    bench = run_cli("bench", *SIMPLE, "--save", "-")
    assert bench.exit_code == 2 and "--save -: stdout carries the report" in bench.stderr
    assert list(tmp_path.iterdir()) == []
