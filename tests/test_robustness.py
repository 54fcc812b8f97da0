"""Hostile and careless input (issue #11): the user's code, closed pipes, full disks, odd targets.

Each test reproduces one numbered item of the issue. In-process runs go through
``jaxinspect.cli.entry.run`` (what the console script runs) under ``capfd``, so writes to file
descriptor 1 are seen as well as ``sys.stdout``; a few need a real process (signals, pipes).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import jsonschema
import pytest

from conftest import ROOT, sample

SCHEMAS = ROOT / "jaxinspect" / "schemas"
JAXINSPECT = str(Path(sys.executable).parent / "jaxinspect")
MLP = (sample("mlp.py") + ":predict", "--shapes", sample("mlp.yaml"))

TARGETS = """
import ctypes
import os
import sys

import jax


class Odd(BaseException):
    pass


def exits_0(x):
    sys.exit(0)


def exits_5(x):
    sys.exit(5)


def exits_text(x):
    sys.exit("bye")


def interrupts(x):
    raise KeyboardInterrupt


def odd(x):
    raise Odd("odd")


def noisy(x):
    print("python print")
    sys.stdout.flush()
    os.write(1, b"fd print\\n")
    ctypes.CDLL(None).printf(b"c print\\n")
    jax.debug.print("debug print {}", x.sum())
    return x * 2
"""
CASES = """
cases:
  small: {args: {x: "f32[3]"}}
  large: {args: {x: "f32[5]"}}
"""

Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def run_entry(capfd: pytest.CaptureFixture[str]) -> Run:
    """Run argv as the console script does, in this process: (exit code, stdout, stderr)."""
    from jaxinspect.cli.entry import run

    def invoke(*argv: object) -> tuple[int, str, str]:
        capfd.readouterr()
        code = run([str(a) for a in argv])
        out, err = capfd.readouterr()
        return int(code or 0), out, err  # type: ignore[call-overload]

    return invoke


@pytest.fixture
def targets(tmp_path: Path) -> Path:
    (tmp_path / "targets.py").write_text(TARGETS)
    (tmp_path / "cases.yaml").write_text(CASES)
    return tmp_path / "targets.py"


#: Prefix to run a command with SIGINT at its default disposition. A shell that starts a job in
#: the background (``make test &``, nohup, some CI runners) sets SIGINT to "ignore"; children
#: inherit that across exec, Python then installs no handler, and a SIGINT the test sends is
#: dropped. The disposition is reset in a wrapper that then execs the command (same process,
#: so the signal reaches it), not in ``preexec_fn``, which is unsafe with jax's threads running.
DEFAULT_SIGINT = (
    sys.executable,
    "-c",
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.argv[1], sys.argv[1:])",
)


def _process(*argv: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [JAXINSPECT, *argv], capture_output=True, text=True, check=False, **kwargs
    )


# -- item 2: the user's code cannot end the run ------------------------------------------


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("exits_0", "SystemExit: 0"),
        ("exits_5", "SystemExit: 5"),
        ("exits_text", "SystemExit: bye"),
        ("interrupts", "KeyboardInterrupt"),
        ("odd", "Odd: odd"),
    ],
)
def test_base_exceptions_from_the_function_are_exit_3_naming_the_target(
    run_entry: Run, targets: Path, name: str, shown: str
) -> None:
    code, out, err = run_entry("stages", f"{targets}:{name}", "--arg", "x=f32[3]", "-f", "json")
    assert code == 3, err
    assert f"{targets}:{name}: trace failed: {shown}" in err
    assert out == "" and "Traceback" not in err


@pytest.mark.parametrize("statement", ["sys.exit(0)", "sys.exit('bye')", "raise KeyboardInterrupt"])
def test_base_exceptions_at_import_are_exit_3(run_entry: Run, tmp_path: Path, statement: str):
    (tmp_path / "quits.py").write_text(f"import sys\n{statement}\n\ndef f(x):\n    return x\n")
    code, out, err = run_entry("jaxpr", f"{tmp_path / 'quits.py'}:f", "--arg", "x=f32[3]")
    assert code == 3
    assert f"{tmp_path / 'quits.py'}:f: import failed:" in err
    assert out == "" and "Traceback" not in err
    assert "quits" not in sys.modules  # a failed import leaves nothing behind


def test_check_reports_a_failing_target_as_an_error_row_and_exits_3(
    run_entry: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "prog.py").write_text(
        "import sys\n\ndef quits(x):\n    sys.exit(0)\n\ndef fine(x):\n    return x + 1\n"
    )
    (tmp_path / "jaxinspect.yaml").write_text(
        "targets:\n"
        "  - {target: prog.py:quits, args: ['x=f32[2]']}\n"
        "  - {target: prog.py:fine, args: ['x=f32[2]']}\n"
    )
    monkeypatch.chdir(tmp_path)
    code, out, err = run_entry("check", "--format", "json")
    assert code == 3, err  # never 0: sys.exit(0) in a target is not a pass
    doc = json.loads(out)
    jsonschema.validate(doc, json.loads((SCHEMAS / "snapshot-check.schema.json").read_text()))
    rows = {t["name"]: t for t in doc["targets"]}
    assert rows["prog_quits"]["status"] == "error" and rows["prog_quits"]["failed"]
    assert "trace failed: SystemExit: 0" in rows["prog_quits"]["error"]
    assert rows["prog_fine"]["status"] == "missing"  # the others are still checked
    assert doc["failed"] and doc["counts"]["error"] == 1
    assert "prog.py:quits: trace failed: SystemExit: 0" in err and "Traceback" not in err
    code, _, _ = run_entry("check", "--update")
    assert code == 3
    assert not (tmp_path / "snapshots" / "prog_quits").exists()
    assert (tmp_path / "snapshots" / "prog_fine" / "summary.json").is_file()


def test_a_real_ctrl_c_still_ends_the_run_with_130(tmp_path: Path, targets: Path) -> None:
    # The console script records real SIGINTs; a KeyboardInterrupt the code raises is not one.
    raised = _process("jaxpr", f"{targets}:interrupts", "--arg", "x=f32[3]")
    assert raised.returncode == 3 and "trace failed: KeyboardInterrupt" in raised.stderr
    marker = tmp_path / "tracing"
    (tmp_path / "slow.py").write_text(
        "import pathlib, time\n\ndef f(x):\n"
        f"    pathlib.Path({str(marker)!r}).write_text('in')\n    time.sleep(30)\n    return x\n"
    )
    proc = subprocess.Popen(
        [*DEFAULT_SIGINT, JAXINSPECT, "stages", f"{tmp_path / 'slow.py'}:f", "--arg", "x=f32[3]"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120  # jax's import on a loaded machine
    while not marker.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    if not marker.exists():  # sending SIGINT now would test Python's start-up, not jaxinspect
        proc.kill()
        pytest.fail(f"the target never started tracing: {proc.communicate()[1]}")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert out == "" and "Traceback" not in err


# -- item 5: the user's prints do not break --format json --------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ("stages", "{t}:noisy", "--arg", "x=f32[3]", "-f", "json", "--runs", "2"),
        ("stages", "{t}:noisy", "-s", "{d}/cases.yaml", "-f", "json", "--runs", "1"),
        ("cost", "{t}:noisy", "--arg", "x=f32[3]", "-f", "json"),
        ("recompile", "{t}:noisy", "-s", "{d}/cases.yaml", "-f", "json"),
        ("hlo", "{t}:noisy", "--arg", "x=f32[3]"),
    ],
    ids=["stages", "stages-cases", "cost", "recompile", "hlo"],
)
def test_prints_of_the_target_go_to_stderr(run_entry: Run, targets: Path, argv: tuple[str, ...]):
    code, out, err = run_entry(*(a.format(t=targets, d=targets.parent) for a in argv))
    assert code == 0, err
    if "json" in argv:
        json.loads(out)
    else:
        assert out.startswith("HloModule")
    for line in ("python print", "fd print", "c print"):
        assert line in err and line not in out
    if "--runs" in argv:  # executed: the debug callback ran
        assert "debug print 0." in err and "debug print 0." not in out


def test_bench_json_and_the_console_script_survive_a_printing_target(targets: Path) -> None:
    bench = _process(
        "bench", f"{targets}:noisy", "--arg", "x=f32[3]", "-f", "json", "--cold-runs", "1",
        "--runs", "2", "--warmup", "1",
    )  # fmt: skip
    assert bench.returncode == 0, bench.stderr
    assert json.loads(bench.stdout)["target"].endswith("noisy")
    stages = _process(
        "stages", f"{targets}:noisy", "--arg", "x=f32[3]", "-f", "json", "--runs", "1"
    )
    assert stages.returncode == 0, stages.stderr
    json.loads(stages.stdout)  # C's stdio buffer was flushed to stderr before os._exit
    assert "c print" in stages.stderr and "debug print" in stages.stderr


# -- items 6 and 7: closed pipes, full disks, odd environments ---------------------------


def _closed_pipe(*argv: str, command: tuple[str, ...] = (JAXINSPECT,)):
    """Run with stdout a pipe whose reader is already gone (``| true``).

    stdout block-buffered, as in a user's shell, whatever this process's environment says:
    with ``PYTHONUNBUFFERED`` every write would fail on the spot, and the buffered report's
    path at exit would go untested.
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(
            [*command, *argv], stdout=write, stderr=subprocess.PIPE, text=True, check=False, env=env
        )
    finally:
        os.close(write)


@pytest.mark.parametrize(
    "argv",
    [
        ("hlo", *MLP),
        ("stages", *MLP, "-f", "json", "--no-execute"),
        ("stages", *MLP, "--no-execute"),
        ("--version",),
        ("--help",),
    ],
    ids=["hlo", "json", "table", "version", "help"],
)
def test_a_closed_pipe_ends_quietly_with_141(argv: tuple[str, ...]) -> None:
    proc = _closed_pipe(*argv)
    assert proc.returncode == 141, proc.stderr
    assert proc.stderr == ""


@pytest.mark.parametrize("size", [100, 6000], ids=["in-the-buffer", "over-the-pipes-4k"])
def test_a_report_still_buffered_at_exit_meets_the_closed_pipe(size: int) -> None:
    # The whole report sits in sys.stdout when the command returns. Over the pipe's 4 KiB
    # st_blksize (and under the text layer's 8 KiB), a failed flush drops the text, so the
    # status must be taken from the first flush (it once ended with 0).
    script = (
        "import sys\nfrom jaxinspect.process.fastexit import exit_without_teardown\n"
        f"sys.stdout.write('x' * {size})\nexit_without_teardown(0)\n"
    )
    proc = _closed_pipe("-c", script, command=(sys.executable,))
    assert proc.returncode == 141, proc.stderr
    assert proc.stderr == ""


def test_no_stdout_at_all_is_a_closed_pipe_too() -> None:
    proc = subprocess.run(
        ["sh", "-c", 'exec "$0" --version >&-', JAXINSPECT],
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    assert proc.returncode == 141 and proc.stderr == ""


def test_a_full_stdout_is_one_line_and_exit_2() -> None:
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [JAXINSPECT, "stages", *MLP, "-f", "json", "--no-execute"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
    assert proc.returncode == 2
    assert proc.stderr.strip() == "Error: cannot write the output: No space left on device"


def test_a_spec_nested_500_levels_is_a_spec_error(run_cli, tmp_path: Path) -> None:
    spec = tmp_path / "deep.yaml"
    spec.write_text("args:\n  x: " + "[" * 500 + "'f32[1]'" + "]" * 500 + "\n")
    result = run_cli("jaxpr", sample("simple.py") + ":axpy", "-s", spec)
    assert result.exit_code == 2
    assert f"{spec}:2:" in result.stderr and "nested deeper than 100 levels" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("command", ["stages", "bench"])
def test_a_negative_seed_is_refused_by_the_option(run_cli, command: str) -> None:
    result = run_cli(command, *MLP, "--seed", "-1")
    assert result.exit_code == 2
    assert "--seed" in result.stderr and "x>=0" in result.stderr


def test_a_target_file_named_like_a_dependency_does_not_shadow_it(run_cli, tmp_path: Path):
    import rich

    (tmp_path / "rich.py").write_text("def f(x):\n    return x * 2\n")
    result = run_cli("stages", f"{tmp_path / 'rich.py'}:f", "--arg", "x=f32[3]", "--runs", "1")
    assert result.exit_code == 0, result.stderr
    assert "jaxinspect stages" in result.stdout  # the table rendered with the real rich
    assert sys.modules["rich"] is rich
    assert sys.path.index(str(tmp_path)) > sys.path.index(str(Path(rich.__file__).parents[1]))


# -- item 8: --fail-on with no rule ------------------------------------------------------


def test_fail_on_with_no_rule_is_a_usage_error(run_entry: Run, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    (tmp_path / "b.txt").write_text("b\n")
    for rules in (",,,", "", " , "):
        code, _, err = run_entry("diff", tmp_path / "a.txt", tmp_path / "b.txt", "--fail-on", rules)
        assert code == 2, rules
        assert "names no rule" in err


# -- item 13: smaller ones ---------------------------------------------------------------


def test_a_relative_module_target_is_a_usage_error(run_entry: Run) -> None:
    code, _, err = run_entry("jaxpr", ".models:f", "--arg", "x=f32[3]")
    assert code == 2
    assert "'.models' is a relative module name" in err


def test_a_folder_or_a_dangling_link_is_not_called_missing(run_entry: Run, tmp_path: Path) -> None:
    (tmp_path / "pkg.py").mkdir()
    (tmp_path / "link.py").symlink_to(tmp_path / "gone.py")
    code, _, err = run_entry("jaxpr", f"{tmp_path / 'pkg.py'}:f")
    assert code == 2 and f"'{tmp_path / 'pkg.py'}' is a folder, not a Python file" in err
    code, _, err = run_entry("jaxpr", f"{tmp_path / 'link.py'}:f")
    assert code == 2 and "is a symbolic link to" in err and "which does not exist" in err
    assert "did you mean" not in err


def test_tag_errors_do_not_get_the_quoting_hint(run_entry: Run, tmp_path: Path) -> None:
    (tmp_path / "tag.yaml").write_text("args: !!python/object/apply:os.system ['true']\n")
    code, _, err = run_entry("jaxpr", sample("simple.py") + ":axpy", "-s", tmp_path / "tag.yaml")
    assert code == 2 and "YAML tag !!python/object/apply:os.system is not allowed" in err
    assert "quote leaves" not in err
    (tmp_path / "flow.yaml").write_text("args: [f32[2], f32[3]]\n")
    code, _, err = run_entry("jaxpr", sample("simple.py") + ":axpy", "-s", tmp_path / "flow.yaml")
    assert code == 2 and "YAML syntax error" in err and "quote leaves" in err


def test_a_manifest_target_file_with_a_space_gets_a_safe_derived_name(
    run_entry: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my model.py").write_text("def f(x):\n    return x + 1\n")
    (tmp_path / "jaxinspect.yaml").write_text(
        "targets:\n  - {target: 'my model.py:f', args: ['x=f32[2]']}\n"
    )
    monkeypatch.chdir(tmp_path)
    code, _, err = run_entry("check", "--update")
    assert code == 0, err
    assert (tmp_path / "snapshots" / "my_model_f" / "summary.json").is_file()


def test_a_duplicate_manifest_key_is_named(run_entry: Run, tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "jaxinspect.yaml").write_text(
        "snapshot_dir: a\nsnapshot_dir: b\ntargets: [x.py:f]\n"
    )
    monkeypatch.chdir(tmp_path)
    code, _, err = run_entry("check")
    assert code == 2
    assert "jaxinspect.yaml:2:1: duplicate key 'snapshot_dir' (first at line 1)" in err


def test_the_exit_codes_are_documented() -> None:
    from jaxinspect.errors import ExitCode

    doc = (ROOT / "docs" / "exit-codes.md").read_text()
    for code in ExitCode:
        assert f"| {int(code)} | {code.name} |" in doc, code


def test_failures_with_a_deep_recursion_show_a_bounded_list_of_frames(run_entry, tmp_path):
    (tmp_path / "deep.py").write_text("def f(x):\n    return f(x)\n")
    code, _, err = run_entry("jaxpr", f"{tmp_path / 'deep.py'}:f", "--arg", "x=f32[1]")
    assert code == 3 and "RecursionError" in err
    assert err.count(" in f\n") == 20 and "more frames ..." in err


def test_prints_at_import_and_in_atexit_handlers_stay_off_stdout(tmp_path: Path) -> None:
    (tmp_path / "loud.py").write_text(
        textwrap.dedent(
            """
            import atexit
            print("import print")
            atexit.register(lambda: print("atexit print"))

            def f(x):
                return x + 1
            """
        )
    )
    proc = _process("stages", f"{tmp_path / 'loud.py'}:f", "--arg", "x=f32[2]", "-f", "json")
    assert proc.returncode == 0, proc.stderr
    json.loads(proc.stdout)
    assert "import print" in proc.stderr and "atexit print" in proc.stderr
