"""The plain-text diff summary (``snapshot.plainsummary``) is rich's, character for character.

A piped ``jaxinspect diff`` prints its summary without importing rich; wherever the plain
layout answers, it must equal what ``render_diff_summary`` prints on a colourless console of
the same width, and where it cannot be sure it must leave the summary to rich.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from jaxinspect.snapshot.console import render_diff_summary
from jaxinspect.snapshot.diffreport import MetricChange, OpChange, SnapshotDiff, TextChange
from jaxinspect.snapshot.plainsummary import plain_diff_summary
from jaxinspect.snapshot.thresholds import Verdict
from jaxinspect.textdiff.linediff import Hunk

ROOT = Path(__file__).resolve().parents[1]


def _rich(diff: SnapshotDiff, verdict: Verdict | None, width: int) -> str:
    out = io.StringIO()  # no terminal: no escape codes, as on a pipe
    Console(file=out, width=width, soft_wrap=False).print(render_diff_summary(diff, verdict))
    return out.getvalue()


def _text(names: int, stem: str = "add.3_L") -> TextChange:
    hunk = Hunk(1, 2, 1, 2, (("-", "a"), ("-", "b"), ("+", "c"), ("+", "d"), (" ", "e")))
    return TextChange(
        "hlo",
        "old.txt",
        "new.txt",
        (hunk,),
        renamed=7867,
        added_names=tuple(f"{stem}{k}" for k in range(names)),
        removed_names=tuple(f"{stem}{k}.old" for k in range(names // 2)),
        changed_names=tuple(f"fusion.{k}" for k in range(3)),
    )


def _diff(
    *, op: str = "add", toolchain: bool = False, names: int = 40, stem: str = "add.3_L"
) -> SnapshotDiff:
    return SnapshotDiff(
        a_label="old.txt",
        b_label="new.txt",
        toolchain=(("jax_version", "0.10.1", "0.10.2"),) if toolchain else (),
        op_changes=(
            OpChange("hlo", op, 2973, 2972),
            OpChange("hlo", "fusion", 17790, 17785),
            OpChange("collectives", "all-reduce", 0, 12),
        ),
        metrics=(
            MetricChange("fusion_count", 17790, 17785),
            MetricChange("flops", None, 3.5e9),
            MetricChange("temp_bytes", 1024, 1 << 30),
            MetricChange("peak_bytes", 5, 5),
        ),
        texts=(_text(names, stem), _text(2)),
    )


VERDICTS = [
    None,
    Verdict(("any: the snapshots differ",)),
    Verdict((), ("flops: not reported by the backend on one side", "x " * 70)),
]


@pytest.fixture(autouse=True)
def _plain_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "COLUMNS", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("verdict", VERDICTS)
@pytest.mark.parametrize("toolchain", [False, True])
def test_the_plain_summary_is_richs_at_every_width_it_answers(
    verdict: Verdict | None, toolchain: bool
) -> None:
    diff = _diff(toolchain=toolchain)
    answered = []
    for width in range(30, 121):
        plain = plain_diff_summary(diff, verdict, width)
        if plain is not None:
            assert plain == _rich(diff, verdict, width), width
            answered.append(width)
    # From the widest table's natural width on (the metric deltas', 57 columns): below it
    # FitTable wraps or drops columns, which is left to rich.
    assert answered == list(range(57, 121))


@pytest.mark.parametrize("width", [120, 80, 60])
def test_an_identical_diff_and_a_wrapped_name_list_read_as_with_rich(width: int) -> None:
    same = SnapshotDiff("a", "b", (), (), (), ())
    assert plain_diff_summary(same, None, width) == _rich(same, None, width) == "identical\n"
    # Names whose list wraps at every width: the lines break between words as rich breaks them.
    long = _diff(names=300, stem="a_rather_long_instruction_name.")
    plain = plain_diff_summary(long, Verdict(("any",)), width)
    assert plain is not None
    assert plain == _rich(long, Verdict(("any",)), width)


@pytest.mark.parametrize(
    ("diff", "width"),
    [
        (_diff(op="custom-call-with-a-name-wider-than-the-console-allows"), 60),  # FitTable
        (_diff(op="add\twith a tab"), 120),  # not one cell per character
        (_diff(op="äöü"), 120),
        (_diff(names=3, stem="x" * 130), 120),  # a word rich folds across lines
        (_diff(op=" padded "), 120),  # rich justifies the cell's own spaces
    ],
)
def test_what_the_plain_layout_cannot_promise_is_left_to_rich(
    diff: SnapshotDiff, width: int
) -> None:
    assert plain_diff_summary(diff, None, width) is None


def _cli(old: Path, new: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR")}
    return subprocess.run(
        [sys.executable, "-m", "jaxinspect", "diff", str(old), str(new)],
        capture_output=True,
        text=True,
        env={**environ, "PYTHONPATH": str(ROOT), **env},
        check=False,
    )


def test_a_piped_diff_prints_without_rich_what_rich_prints(tmp_path: Path) -> None:
    """The CLI on a pipe: the plain path (no rich imported) and rich's (COLUMNS=120 sends the
    summary to rich at the same width) print the same bytes."""
    lines = ["HloModule m", ""]
    for k in range(30):
        lines += [
            f"%fused_computation.{k} (param_0: f32[8]) -> f32[8] {{",
            f"  %param_0.{k} = f32[8]{{0}} parameter(0)",
            f"  ROOT %add.{k} = f32[8]{{0}} add(%param_0.{k}, %param_0.{k})",
            "}",
            "",
        ]
    old = tmp_path / "old.txt"
    old.write_text("\n".join(lines) + "\n")
    renamed = [line.replace("add.", "multiply.").replace(" add(", " multiply(") for line in lines]
    new = tmp_path / "new.txt"
    new.write_text("\n".join(renamed) + "\n")
    plain = _cli(old, new)
    with_rich = _cli(old, new, COLUMNS="120")
    assert plain.returncode == with_rich.returncode == 1, plain.stderr + with_rich.stderr
    assert plain.stdout == with_rich.stdout
    assert "Ops" in plain.stdout and "hlo     multiply" in plain.stdout
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys\n"
            "from jaxinspect.cli.entry import run\n"
            f"code = run(['diff', {str(old)!r}, {str(new)!r}])\n"
            "sys.stderr.write(str('rich' in sys.modules))",
        ],
        capture_output=True,
        text=True,
        env={
            **{k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR")},
            "PYTHONPATH": str(ROOT),
        },
        check=False,
    )
    assert probe.stderr.endswith("False"), probe.stderr
