"""``jaxinspect diff``: the fast unified diff, the semantic summary, --fail-on and exit codes."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxinspect.errors import UsageError
from jaxinspect.inputs.spec import parse_spec_text
from jaxinspect.inputs.target import load_target
from jaxinspect.snapshot.capture import capture_snapshot
from jaxinspect.snapshot.store import write_snapshot
from jaxinspect.snapshot.thresholds import parse_rules
from jaxinspect.textdiff.linediff import matching_blocks, unified_diff, unified_hunks

SCHEMAS = Path(__file__).resolve().parent.parent / "jaxinspect" / "schemas"
PROGRAM = """
import jax.numpy as jnp


def f(x):
    return (x * 2.0 + 1.0).sum()
"""
CHANGED = PROGRAM.replace("x * 2.0", "jnp.sin(x) * 2.0")


def _apply(a: list[str], b: list[str]) -> list[str]:
    """Rebuild b from a and the hunks of diff(a, b)."""
    out: list[str] = []
    i = 0
    for hunk in unified_hunks(a, b, context=2):
        start = hunk.a_start - 1 if hunk.a_len else hunk.a_start
        out.extend(a[i:start])
        i = start
        for mark, line in hunk.lines:
            if mark in " -":
                assert a[i] == line
                i += 1
            if mark in " +":
                out.append(line)
    return out + a[i:]


lines = st.lists(st.sampled_from(["a", "b", "c", "}", "", "x = 1", "%add.1"]), max_size=60)


@settings(max_examples=200, deadline=None)
@given(lines, lines)
def test_hunks_turn_a_into_b(a: list[str], b: list[str]) -> None:
    assert _apply(a, b) == b
    blocks = matching_blocks(a, b)
    assert blocks[-1] == (len(a), len(b), 0)
    for i, j, n in blocks:
        assert a[i : i + n] == b[j : j + n]


def test_equal_texts_give_no_diff() -> None:
    text = [f"line {i}" for i in range(1000)]
    assert list(unified_diff(text, list(text), "a", "b")) == []


@pytest.mark.skipif(shutil.which("diff") is None, reason="needs GNU diff")
def test_output_matches_gnu_diff_on_scattered_changes(tmp_path: Path) -> None:
    a = [f"  %fusion.{i} = f32[8]{{0}} fusion(%p.{i % 7}), calls=%c.{i}" for i in range(3000)]
    b = list(a)
    for k in range(5, 3000, 97):
        b[k] = b[k].replace("f32", "bf16")
    del b[1500:1503]
    b.insert(2000, "  %new = f32[] constant(0)")
    (tmp_path / "a").write_text("\n".join(a) + "\n")
    (tmp_path / "b").write_text("\n".join(b) + "\n")
    gnu = subprocess.run(
        ["diff", "-u", str(tmp_path / "a"), str(tmp_path / "b")], capture_output=True, text=True
    ).stdout
    ours = "".join(unified_diff(a, b, "a", "b"))
    assert ours.split("\n", 2)[2] == gnu.split("\n", 2)[2]  # bodies equal; headers differ


def _snap(folder: Path, source: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "prog.py").write_text(textwrap.dedent(source))
    spec = parse_spec_text("args:\n  - f32[8]\n", source="spec")
    write_snapshot(folder / "snap", capture_snapshot(load_target(f"{folder}/prog.py:f"), spec))
    return folder / "snap"


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("diff")
    return _snap(root / "old", PROGRAM), _snap(root / "same", PROGRAM), _snap(root / "new", CHANGED)


def test_identical_snapshots_exit_0(
    run_cli: Callable[..., object], pair: tuple[Path, Path, Path]
) -> None:
    result = run_cli("diff", pair[0], pair[1])
    assert result.exit_code == 0, result.stderr
    assert "identical" in result.stdout


def test_changed_snapshot_exits_1_with_summary_before_diff(
    run_cli: Callable[..., object], pair: tuple[Path, Path, Path]
) -> None:
    result = run_cli("diff", pair[0], pair[2])
    assert result.exit_code == 1
    out = result.stdout
    assert "fails any" in out
    assert out.index("sin") < out.index("--- ")  # the semantic summary comes first
    assert "transcendentals" in out and "(new)" in out
    assert "+  %sin" in out or "sine(" in out
    assert "\x1b[" not in out  # not a terminal: no colour


def test_thresholds_gate_the_exit_code(
    run_cli: Callable[..., object], pair: tuple[Path, Path, Path]
) -> None:
    assert run_cli("diff", pair[0], pair[2], "--fail-on", "flops>+500%").exit_code == 0
    tripped = run_cli("diff", pair[0], pair[2], "--fail-on", "transcendentals>+5%", "--no-text")
    assert tripped.exit_code == 1 and "transcendentals>+5%" in tripped.stdout
    assert run_cli("diff", pair[0], pair[2], "--fail-on", "new-op:sine").exit_code == 1
    assert run_cli("diff", pair[0], pair[2], "--fail-on", "new-op:all-gather").exit_code == 0
    assert run_cli("diff", pair[2], pair[0], "--fail-on", "new-op:*").exit_code == 0
    assert run_cli("diff", pair[0], pair[2], "--fail-on", "new-op:*").exit_code == 1
    assert run_cli("diff", pair[0], pair[2], "--fail-on", "text").exit_code == 1


def test_json_output_follows_the_schema(
    run_cli: Callable[..., object], pair: tuple[Path, Path, Path]
) -> None:
    result = run_cli("diff", pair[0], pair[2], "--format", "json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    jsonschema.validate(doc, json.loads((SCHEMAS / "snapshot-diff.schema.json").read_text()))
    assert doc["failed"] and not doc["identical"]
    assert {"stage": "jaxpr", "op": "sin", "before": 0, "after": 1} in doc["ops"]
    assert doc["metrics"]["transcendentals"]["percent"] is None  # from 0: no finite percent
    summary = json.loads((pair[0] / "summary.json").read_text())
    jsonschema.validate(summary, json.loads((SCHEMAS / "snapshot-summary.schema.json").read_text()))


def test_markdown_output(run_cli: Callable[..., object], pair: tuple[Path, Path, Path]) -> None:
    result = run_cli("diff", pair[0], pair[2], "--format", "markdown", "--fail-on", "flops>+500%")
    assert result.exit_code == 0
    assert "| jaxpr | `sin` | 0 | 1 | +1 |" in result.stdout
    assert "```diff" in result.stdout and "within the `--fail-on` thresholds" in result.stdout


def test_toolchain_change_is_stated_first(
    run_cli: Callable[..., object], pair: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    upgraded = tmp_path / "upgraded"
    shutil.copytree(pair[0], upgraded)
    summary = upgraded / "summary.json"
    summary.write_text(summary.read_text().replace('"jax_version": "', '"jax_version": "9.9.9+'))
    same = run_cli("diff", pair[0], upgraded)
    assert same.exit_code == 0  # a toolchain change alone is not a difference
    assert same.stdout.startswith("Toolchain changed: jax_version")
    changed = run_cli("diff", upgraded, pair[2], "--format", "markdown")
    assert changed.exit_code == 1
    assert changed.stdout.splitlines()[2].startswith("> **Toolchain changed: jax_version 9.9.9+")


def test_two_loose_files(run_cli: Callable[..., object], pair: tuple[Path, Path, Path]) -> None:
    same = run_cli("diff", pair[0] / "hlo.txt", pair[1] / "hlo.txt")
    assert same.exit_code == 0
    changed = run_cli("diff", pair[0] / "hlo.txt", pair[2] / "hlo.txt", "--color", "always")
    assert changed.exit_code == 1
    assert "\x1b[32m+" in changed.stdout  # additions in green


class _Writes:
    """A stdout that keeps each write (a system call each, where the report writes through)."""

    def __init__(self) -> None:
        self.writes: list[str] = []

    def write(self, text: str) -> int:
        self.writes.append(text)
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


def test_a_long_text_diff_goes_out_in_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jaxinspect.cli.entry import run

    old, new = tmp_path / "old.txt", tmp_path / "new.txt"
    old.write_text("".join(f"line {k} of the old text\n" for k in range(4000)))
    new.write_text("".join(f"line {k} of the new text\n" for k in range(4000)))
    stdout = _Writes()
    monkeypatch.setattr(sys, "stdout", stdout)
    assert run(["diff", "--color", "never", str(old), str(new)]) == 1
    text = "".join(stdout.writes)
    assert text.count("\n-line ") == text.count("\n+line ") == 4000
    # About 200,000 characters of diff in a few writes, not one a line.
    assert len(text) > 200_000 and len(stdout.writes) <= 10


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("nope", "nope2"), "no such snapshot folder or file"),
        (("FOLDER", "FILE"), "compare a folder with a folder"),
        (("FOLDER", "FOLDER", "--fail-on", "flopz>5%"), "did you mean flops?"),
        (("FOLDER", "FOLDER", "--fail-on", "flops>>5"), "expected METRIC>+N%"),
        (("FOLDER", "FOLDER", "--fail-on", "new-op:"), "name an op"),
    ],
)
def test_usage_errors_exit_2(
    run_cli: Callable[..., object],
    pair: tuple[Path, Path, Path],
    tmp_path: Path,
    args: tuple[str, ...],
    message: str,
) -> None:
    real = {"FOLDER": str(pair[0]), "FILE": str(pair[0] / "hlo.txt")}
    result = run_cli("diff", *(real.get(a, str(tmp_path / a) if "nope" in a else a) for a in args))
    assert result.exit_code == 2
    assert message in result.stderr


def test_not_a_snapshot_folder_exits_2(run_cli: Callable[..., object], tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    result = run_cli("diff", tmp_path / "x", tmp_path / "x")
    assert result.exit_code == 2 and "not a snapshot" in result.stderr


def test_rules_parse() -> None:
    rules = parse_rules("flops>+5%, temp_bytes>+10%,new-op:all-gather,fusions>=2")
    assert [(r.kind, r.name, r.value, r.relative) for r in rules] == [
        ("metric", "flops", 5.0, True),
        ("metric", "temp_bytes", 10.0, True),
        ("new-op", "all-gather", 0.0, False),
        ("metric", "fusions", 2.0, False),
    ]
    with pytest.raises(UsageError):
        parse_rules("peak>1")


def test_diff_of_stored_snapshots_never_imports_jax(pair: tuple[Path, Path, Path]) -> None:
    # Through the console-script entry point, as users run it: a plain diff imports neither
    # jax nor typer. The entry point ends the process itself, so an atexit handler reports
    # (on stderr: atexit handlers print there, after the report).
    code = (
        "import atexit, sys\n"
        "jax = lambda: any(m == 'jax' or m.startswith(('jax.', 'jaxlib')) for m in sys.modules)\n"
        "atexit.register(lambda: print('JAX', jax(), 'TYPER', 'typer' in sys.modules))\n"
        "from jaxinspect.cli.entry import main\n"
        f"sys.argv = ['jaxinspect', 'diff', {str(pair[0])!r}, {str(pair[2])!r}]\n"
        "main()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 1, out.stderr
    assert "JAX False TYPER False" in out.stderr, out.stderr


def test_plain_diff_options_are_the_typer_commands() -> None:
    import typer.main

    from jaxinspect.cli.app import app
    from jaxinspect.cli.commands.diff import DiffArgs
    from jaxinspect.cli.diffargv import FLAG_OPTIONS, VALUE_OPTIONS

    command = typer.main.get_command(app).commands["diff"]  # type: ignore[attr-defined]
    options = {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)}
    assert options - {"old", "new"} == {*VALUE_OPTIONS, *FLAG_OPTIONS}
    defaults = {field.name: field.default for field in dataclasses.fields(DiffArgs)}
    assert {param.name for param in command.params} == set(defaults)
    for param in command.params:  # the same defaults on both paths
        if param.name not in ("old", "new"):
            assert defaults[param.name] == param.default, param.name


@pytest.mark.parametrize(
    "options",
    [
        [],
        ["--format", "json"],
        ["-f", "markdown", "--fail-on", "flops>+50%"],
        ["--context=0", "--no-text"],
        ["--color", "always", "--text", "--fail-on=new-op:all-gather"],
        ["--format=json", "--color=never", "--context", "1", "--debug"],
    ],
)
def test_plain_diff_prints_what_the_typer_command_prints(
    run_cli: Callable[..., object],
    pair: tuple[Path, Path, Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    options: list[str],
) -> None:
    from jaxinspect.cli.commands.diff import parse_plain_diff, run_diff

    argv = ["diff", str(pair[0]), *options, str(pair[2])]  # options between the paths
    typed = run_cli(*argv)
    # The environment run_cli gives the typer command: lines that hold the (tmp) paths are
    # wider than 100 columns or not depending on where the test runs (pytest-xdist adds a
    # folder), and would wrap at 100 on one path and at 120 on the other.
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("NO_COLOR", "1")
    plain = parse_plain_diff(argv)
    assert plain is not None
    try:
        run_diff(plain)
        code = 0
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    captured = capsys.readouterr()
    assert code == typed.exit_code  # type: ignore[attr-defined]
    assert captured.out == typed.stdout  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "argv",
    [
        ["stages", "a", "b"],
        ["diff", "a"],
        ["diff", "a", "b", "c"],
        ["diff", "--help", "a", "b"],
        ["diff", "-h", "a", "b"],
        ["diff", "--bogus", "a", "b"],
        ["diff", "--context", "-1", "a", "b"],
        ["diff", "--context", "x", "a", "b"],
        ["diff", "--color", "ALWAYS", "a", "b"],
        ["diff", "--format", "yaml", "a", "b"],
        ["diff", "a", "b", "--fail-on"],
        ["diff", "-fjson", "a", "b"],
        ["diff", "--text=yes", "a", "b"],
    ],
)
def test_anything_but_a_plain_diff_goes_to_typer(argv: list[str]) -> None:
    from jaxinspect.cli.commands.diff import parse_plain_diff

    assert parse_plain_diff(argv) is None


def test_plain_diff_takes_paths_after_a_double_dash() -> None:
    from jaxinspect.cli.commands.diff import DiffArgs, parse_plain_diff

    parsed = parse_plain_diff(["diff", "--no-text", "--", "-old", "--new"])
    assert parsed == DiffArgs(Path("-old"), Path("--new"), text=False)


def test_paired_hlo_counting_equals_counting_each_side(pair: tuple[Path, Path, Path]) -> None:
    from jaxinspect.snapshot.loose import hlo_counts_pair, text_op_counts

    old = (pair[0] / "hlo.txt").read_text()
    for new in (
        (pair[2] / "hlo.txt").read_text(),  # fused computations differ
        old.replace("f32[8]{0}", "f32[8]{0} ", 1),  # same computations but one
        old,
    ):
        assert hlo_counts_pair(old, new) == (text_op_counts("hlo", old), text_op_counts("hlo", new))


def test_large_moves_and_insertions_stay_aligned() -> None:
    # A 500-line insertion needs the resync window to grow past its first size (64).
    a = [f"  %op.{i} = f32[4]{{0}} add(%x.{i}, %y.{i})" for i in range(2000)]
    b = a[:700] + [f"  %new.{i} = f32[] constant({i})" for i in range(500)] + a[700:1500] + a[1700:]
    assert _apply(a, b) == b
    assert sum(n for _, _, n in matching_blocks(a, b)) == len(a) - 200  # every kept line matched
    assert len(list(unified_hunks(a, b))) == 2


def test_plain_diff_exit_codes_as_typer_gives_them(capsys: pytest.CaptureFixture[str]) -> None:
    from jaxinspect.cli.entry import exit_code_of

    def interrupted(_: object) -> None:
        raise KeyboardInterrupt

    def differs(_: object) -> None:
        raise SystemExit(1)

    assert exit_code_of(interrupted, None) == 130  # typer: Exit(130), nothing printed
    assert capsys.readouterr().err == ""
    assert exit_code_of(differs, None) == 1
    assert exit_code_of(lambda _: None, None) == 0


def test_verdicts_print_numbers_as_the_reports_do() -> None:
    from jaxinspect.snapshot.diffreport import MetricChange, SnapshotDiff
    from jaxinspect.snapshot.thresholds import evaluate, parse_rules

    metrics = (
        MetricChange("flops", 1_607_140.0, 1_800_000.0),
        MetricChange("temp_bytes", 1_048_576.0, 3_145_728.0),
    )
    diff = SnapshotDiff("a", "b", (), (), metrics, ())
    verdict = evaluate(parse_rules("flops>+10%,temp_bytes>1000"), diff)
    assert verdict.tripped == (
        "flops>+10%: flops 1.61 M -> 1.8 M (+12.0%)",
        "temp_bytes>1000: temp_bytes 1 MiB -> 3 MiB (+2 MiB)",
    )
