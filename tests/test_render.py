"""Renderers on hand-built reports: fixed-width, colourless, no jax needed."""

from __future__ import annotations

import io
import json

import jsonschema
from rich.console import Console

from conftest import ROOT
from jaxinspect.base.inspection import (
    ArgInfo,
    CallTimings,
    CostSummary,
    InspectionReport,
    MemorySummary,
    StageText,
    Timings,
)
from jaxinspect.stages.console import render_console
from jaxinspect.stages.jsondoc import render_json

SCHEMA = json.loads((ROOT / "jaxinspect" / "schemas" / "stages.schema.json").read_text())


def make_report(**changes) -> InspectionReport:
    hlo = "\n".join(f"line {i}" for i in range(100))
    fields = {
        "target": "m.py:f",
        "function_name": "f",
        "backend": "cpu",
        "devices": ("cpu:0 (cpu)",),
        "jax_version": "0.10.2",
        "jaxlib_version": "0.10.2",
        "x64": False,
        "args": (ArgInfo("x", "array", "float32", (8, 4)), ArgInfo("mode", "static", value="'a'")),
        "stages": (
            StageText("jaxpr", "{ lambda ; a:f32[8,4]. let b = sin a in (b,) }", (("sin", 1),)),
            StageText("stablehlo", "module @jit_f {}", (("stablehlo.sine", 1),)),
            StageText("hlo", hlo, tuple((f"op{i}", 20 - i) for i in range(15))),
        ),
        "cost": CostSummary(1000.0, 32.0, 8000.0, 0.125, (("flops", 1000.0),)),
        "memory": MemorySummary(128, 128, 0, 0, None, None, 256),
        "timings": Timings(0.001, 0.002, 0.03, 0.0005, CallTimings(2e-5, 1e-5, 9e-5, 50)),
        "unavailable": (
            ("memory.generated_code_bytes", "the cpu backend reports 0, not a size"),
            ("memory.peak_bytes", "the cpu backend does not report a peak"),
        ),
    }
    fields.update(changes)
    return InspectionReport(**fields)


def render(report: InspectionReport, **kwargs) -> str:
    console = Console(width=100, file=io.StringIO(), color_system=None, force_terminal=False)
    console.print(render_console(report, **kwargs))
    return console.file.getvalue()


def test_long_ir_is_shortened_and_says_how_to_see_it_whole():
    out = render(make_report(), rerun="--shapes 'my spec.yaml'")
    assert "line 39" in out and "line 40" not in out
    assert (
        "… showing 40 of 100 lines. Pass --full, or run `jaxinspect hlo m.py:f --shapes 'my "
        "spec.yaml'`" in out
    )
    full = render(make_report(), max_lines=None)
    assert "line 99" in full and "showing" not in full


def test_op_histogram_never_truncates_silently():
    out = render(make_report(), sections=("ops",))
    assert "op11" in out and "op12 " not in out
    assert "… 3 more kinds" in out


def test_missing_values_show_their_reason():
    out = render(make_report(), sections=("memory",))
    assert "n/a" in out and "the cpu backend reports 0, not a size" in out
    assert "the cpu backend does not report a peak" in out


def test_sections_are_selectable_and_numbers_humanised():
    out = render(make_report(), sections=("cost", "timings"))
    assert "jaxpr (" not in out and "optimized HLO" not in out
    assert "1,000" in out and "7.81 KiB" in out and "0.125 flop/B" in out
    assert "20 µs" in out and "min 10 µs, max 90 µs, 50 runs" in out


def test_header_names_static_values_and_x64():
    out = render(make_report(x64=True), sections=())
    assert "mode" in out and "'a'" in out
    assert "on (the spec has a 64-bit leaf)" in out


def test_json_is_sorted_stable_and_valid():
    text = render_json(make_report())
    doc = json.loads(text)
    jsonschema.validate(doc, SCHEMA)
    assert text == json.dumps(doc, indent=2, sort_keys=True) + "\n"
    assert doc["timings"]["cached_call_s"] == 2e-5
    assert doc["args"][1] == {"path": "mode", "kind": "static", "value": "'a'"}


def test_schema_keeps_each_argument_kinds_keys_together():
    doc = json.loads(render_json(make_report()))
    array, static = doc["args"]
    assert set(array) == {"path", "kind", "dtype", "shape", "weak_type", "sharding", "shard_shape"}
    assert array["sharding"] is None and array["shape"] == [8, 4]
    # A static value with an array's keys, or an array without its placement, is not a
    # document the encoder writes: the generated schema rejects both.
    for args in (
        [array, {**static, "dtype": "float32"}],
        [{k: v for k, v in array.items() if k != "sharding"}, static],
        [{**array, "kind": "static"}, static],
    ):
        errors = list(jsonschema.Draft202012Validator(SCHEMA).iter_errors({**doc, "args": args}))
        assert errors and all(e.json_path.startswith("$.args[") for e in errors)


def test_reports_off_a_terminal_are_120_columns_unless_columns_says(monkeypatch):
    # pytest captures stdout, so it is not a terminal here.
    from jaxinspect.renderers.stdout import PIPED_WIDTH, stdout_console

    monkeypatch.delenv("COLUMNS", raising=False)
    assert stdout_console().width == PIPED_WIDTH == 120
    monkeypatch.setenv("COLUMNS", "90")
    assert stdout_console().width == 90
