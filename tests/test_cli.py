"""The command line: exit codes, streams, JSON contract, single-stage commands, fast --help."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from conftest import ROOT, sample

SCHEMA = json.loads((ROOT / "jaxinspect" / "schemas" / "stages.schema.json").read_text())
MLP = (sample("mlp.py") + ":predict", "--shapes", sample("mlp.yaml"))


def test_json_report_validates_against_schema_and_has_contract_paths(run_cli):
    result = run_cli("stages", *MLP, "--format", "json", "--runs", "2")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)  # stdout holds the report alone
    jsonschema.validate(doc, SCHEMA)
    for path in [
        "schema_version",
        "target",
        "backend",
        "devices",
        "jax_version",
        "jaxlib_version",
        "x64",
        "stages.jaxpr.text",
        "stages.stablehlo.text",
        "stages.hlo.text",
        "cost.flops",
        "cost.transcendentals",
        "cost.bytes_accessed",
        "cost.arithmetic_intensity",
        "memory.argument_bytes",
        "memory.output_bytes",
        "memory.temp_bytes",
        "memory.alias_bytes",
        "memory.generated_code_bytes",
        "timings.trace_s",
        "timings.lower_s",
        "timings.compile_s",
        "timings.first_call_s",
        "timings.cached_call_s",
    ]:
        node = doc
        for key in path.split("."):
            assert key in node, path
            node = node[key]
        if node is None:  # every null carries its reason
            assert path in doc["unavailable"], path
    assert doc["backend"] == "cpu" and doc["x64"] is False
    assert doc["stages"]["hlo"]["op_counts"]["fusion"] >= 1
    assert doc["stages"]["jaxpr"]["op_counts"]["dot_general"] == 2


def test_json_with_no_execute_and_stage_subset_still_validates(run_cli):
    result = run_cli("stages", *MLP, "-f", "json", "--no-execute", "--stage", "jaxpr")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    jsonschema.validate(doc, SCHEMA)
    assert doc["stages"]["hlo"] is None and doc["unavailable"]["stages.hlo"]
    assert doc["timings"]["first_call_s"] is None


def test_table_output_has_every_section(run_cli):
    result = run_cli("stages", *MLP, "--runs", "2")
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    for title in [
        "jaxinspect stages",
        "jaxpr (",
        "StableHLO (",
        "optimized HLO (",
        "operations per stage",
        "cost (XLA",
        "memory (",
        "timings (",
    ]:
        assert title in out
    assert "showing 40 of" in out and "Pass --full" in out  # the HLO is shortened, and says so
    assert "n/a" in out and "not a size" in out  # CPU's generated-code size is not reported


def test_full_shows_whole_ir(run_cli):
    result = run_cli("stages", *MLP, "--full", "--stage", "hlo")
    assert result.exit_code == 0
    assert "showing" not in result.stdout
    assert "ENTRY" in result.stdout


@pytest.mark.parametrize("stage", ["jaxpr", "stablehlo", "hlo"])
def test_single_stage_commands_print_plain_text(run_cli, stage):
    result = run_cli(stage, *MLP)
    assert result.exit_code == 0, result.stderr
    first = {
        "jaxpr": "{ lambda",
        "stablehlo": "module @jit_predict",
        "hlo": "HloModule jit_predict",
    }
    assert result.stdout.startswith(first[stage])
    assert "╭" not in result.stdout  # no rich boxes: pipeable


def test_arg_option_instead_of_spec(run_cli):
    result = run_cli(
        "jaxpr", sample("simple.py") + ":axpy", "--arg", "x=f32[3]", "--arg", "y=f32[3]"
    )
    assert result.exit_code == 0, result.stderr
    assert "a:f32[3] b:f32[3]" in result.stdout


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (
            ("stages", sample("mlp.py") + ":predictt", "-s", sample("mlp.yaml")),
            2,
            "has no attribute 'predictt' (did you mean predict?)",
        ),
        (("stages", "nofile.py:f"), 2, "file 'nofile.py' not found"),
        (("stages", *MLP, "--arg", "x=f32[1]"), 2, "either --shapes SPEC or --arg"),
        (("stages", *MLP, "--stage", "costs"), 2, "unknown section 'costs' (did you mean cost"),
        (("stages", *MLP, "--backend", "tpu"), 2, "available: cpu"),
        (("stages", *MLP, "--max-input-bytes", "100"), 2, "over the limit of 100"),
        (
            ("stages", sample("mlp.py") + ":predict", "--arg", "x=f32[1]"),
            2,
            "missing parameter `params`",
        ),
        (
            ("stages", sample("mlp.py") + ":predict", "-s", sample("nope.yaml")),
            2,
            "nope.yaml: spec file not found",
        ),
        (("stages", *MLP, "--format", "xml"), 2, "xml"),
        (
            ("stages", sample("simple.py") + ":axpy", "--arg", "x=f32[3]", "--arg", "y=f32[4]"),
            3,
            "trace failed: TypeError: add got incompatible shapes for broadcasting: (3,), (4,)",
        ),
    ],
)
def test_errors_map_to_exit_codes_without_traceback(run_cli, args, code, message):
    result = run_cli(*args)
    assert result.exit_code == code
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_debug_adds_the_traceback_and_keeps_the_exit_code(run_cli):
    result = run_cli("stages", "nofile.py:f", "--debug")
    assert result.exit_code == 2  # as without --debug (#22)
    assert "Traceback" in result.stderr and "TargetError" in result.stderr


def test_internal_errors_exit_4_with_traceback(capsys):
    from jaxinspect.cli.exits import errors_to_exit_codes

    with pytest.raises(SystemExit) as info, errors_to_exit_codes(debug=False):
        raise RuntimeError("a bug")
    assert info.value.code == 4
    err = capsys.readouterr().err
    assert "Traceback" in err and "internal error in jaxinspect" in err


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False
    )


@pytest.mark.parametrize("argv", [["--help"], ["stages", "--help"], ["--version"]])
def test_help_and_version_do_not_import_jax(argv):
    code = (
        "import sys\nfrom jaxinspect.cli.app import app\n"
        f"try:\n    app({argv!r})\n"
        "except SystemExit as e:\n    assert e.code in (0, None), e.code\n"
        "print('JAX_IMPORTED', 'jax' in sys.modules, 'numpy' in sys.modules)"
    )
    proc = _run(code)
    assert proc.returncode == 0, proc.stderr
    assert "JAX_IMPORTED False False" in proc.stdout


def test_python_dash_m_and_version():
    proc = subprocess.run(
        [sys.executable, "-m", "jaxinspect", "--version"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0
    from jaxinspect import __version__

    assert proc.stdout.strip() == f"jaxinspect {__version__}"


def test_help_lists_every_registered_command_in_registry_order(run_cli):
    from jaxinspect.cli.app import COMMANDS

    result = run_cli("--help")
    assert result.exit_code == 0
    listed = result.stdout.split("Commands:\n", 1)[1].splitlines()
    assert [line.split()[0] for line in listed if line.strip()] == list(COMMANDS)


@pytest.mark.parametrize("name", ["stages", "hlo", "diff", "check", "recompile", "spec"])
def test_each_command_runs_with_its_own_module_alone(name):
    # Through the console script's path: the registry imports the one module the command names.
    code = (
        "import sys\nfrom jaxinspect.cli.entry import run\n"
        f"code = run([{name!r}, '--help'])\n"
        "loaded = sorted(m.rsplit('.', 1)[1] for m in sys.modules\n"
        "                if m.startswith('jaxinspect.cli.commands.'))\n"
        "print('EXIT', code, 'LOADED', ','.join(loaded))"
    )
    proc = _run(code)
    assert proc.returncode == 0, proc.stderr
    assert f"Usage: jaxinspect {name} " in proc.stdout
    from jaxinspect.cli.app import COMMANDS

    needs = {"ir": "ir,stages", "check": "check,diff"}  # modules built on another's helpers
    assert f"EXIT 0 LOADED {needs.get(COMMANDS[name], COMMANDS[name])}" in proc.stdout


@pytest.mark.parametrize(("typo", "meant"), [("stagse", "stages"), ("recompil", "recompile")])
def test_a_mistyped_command_is_a_usage_error_with_a_suggestion(capsys, typo, meant):
    from jaxinspect.cli.entry import run

    assert run([typo, "x"]) == 2
    err = capsys.readouterr().err
    assert f"No such command '{typo}'. Did you mean '{meant}'?" in err


def test_every_command_has_help(capsys):
    from jaxinspect.cli.app import COMMANDS
    from jaxinspect.cli.entry import run

    for name in COMMANDS:
        assert run([name, "--help"]) == 0, name
        assert f"Usage: jaxinspect {name} " in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "offered"),
    [
        (["stages", "x.py:f"], "'table', 'json'"),
        (["cost", "x.py:f"], "'table', 'json'"),
        (["check", "--manifest", "missing.yaml"], None),
    ],
)
def test_format_offers_only_what_the_command_prints(run_cli, argv, offered):
    result = run_cli(*argv, "-f", "markdown")
    assert result.exit_code == 2
    if offered is None:  # check prints markdown: it fails later, on the missing manifest
        assert "--format" not in result.stderr and "missing.yaml" in result.stderr
    else:
        message = f"Invalid value for '--format' / '-f': 'markdown' is not one of {offered}."
        assert message in result.stderr


def test_console_script_is_installed():
    script = Path(sys.executable).parent / "jaxinspect"
    proc = subprocess.run([str(script), "--version"], capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and proc.stdout.startswith("jaxinspect ")


_ATEXIT_TARGET = """
import atexit, os, pathlib

atexit.register(lambda: pathlib.Path(os.environ["ATEXIT_MARKER"]).write_text("ran"))

def double(x):
    return x * 2

def broken(x):
    if x.sum() > 0:  # a traced value in Python control flow: the user's error, exit 3
        return x
    return -x
"""


@pytest.mark.parametrize(("name", "code"), [("double", 0), ("broken", 3)])
def test_console_entry_exits_fast_with_output_flushed_and_atexit_run(tmp_path, name, code):
    # main() ends with os._exit once jax is loaded: the report must still arrive whole, the
    # exit code must be the command's, and atexit handlers (jax's, the user's) must run.
    (tmp_path / "target.py").write_text(_ATEXIT_TARGET)
    marker = tmp_path / "atexit.txt"
    proc = subprocess.run(
        [sys.executable, "-m", "jaxinspect", "stages", f"{tmp_path / 'target.py'}:{name}"]
        + ["--arg", "x=f32[64,64]", "--format", "json", "--runs", "2"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "ATEXIT_MARKER": str(marker)},
        check=False,
    )
    assert proc.returncode == code, proc.stderr
    assert marker.read_text() == "ran"
    if code == 0:
        assert json.loads(proc.stdout)["cost"]["flops"] == 64 * 64
    else:
        assert proc.stdout == ""
        assert "x.sum() > 0" in proc.stderr
