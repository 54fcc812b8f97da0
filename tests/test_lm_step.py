"""docs/sharding.md's language-model step on a TPU v5e-16 slice (``--topology v5e:4x4``).

The program is compiled once (the report's compilation, with XLA's dump) and every view is
rendered from that one ``ReportData``: the ``cost`` tables at several widths, the cost JSON and
the report's op table. libtpu compiles the slice on this machine; without it the tests skip.
"""

from __future__ import annotations

import importlib.util
import io
import json
import re
from html import escape, unescape
from typing import Any

import jsonschema
import pytest
from narrow import assert_fits_json
from rich.console import Console

from conftest import ROOT, SAMPLES

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("libtpu") is None,
    reason="libtpu is not installed (pip install 'jaxinspect[tpu]'); CI installs it",
)

COST_SCHEMA = json.loads((ROOT / "jaxinspect/schemas/cost.schema.json").read_text())


@pytest.fixture(scope="module")
def lm_report() -> Any:
    """The report's data of ``lm_step`` on v5e:4x4, built as ``jaxinspect report`` does."""
    from jaxinspect.cli.options import PlacementOptions, load_cli_spec
    from jaxinspect.htmlreport.data import profiled_report
    from jaxinspect.inputs.target import load_target
    from jaxinspect.xla.ownership import frames_recorded, resolve_user_code

    spec = load_cli_spec(
        str(SAMPLES / "lm_v5e16.yaml"), None, None, PlacementOptions(topology="v5e:4x4")
    )
    loaded = load_target(f"{SAMPLES / 'sharded.py'}:lm_step")
    user = resolve_user_code([], loaded.source_file)
    with frames_recorded(user):
        return profiled_report(
            loaded, spec, backend=None, profile=None, user=user, measure_runs=None
        )[1]


def render(renderable: Any, width: int) -> str:
    console = Console(file=io.StringIO(), width=width, color_system=None, soft_wrap=False)
    console.print(renderable)
    out = console.file.getvalue()  # type: ignore[attr-defined]
    return str(out)


@pytest.mark.parametrize("width", [60, 80, 120, 250])
def test_the_cost_table_renders_at_every_width(lm_report: Any, width: int) -> None:
    # Regression: a "not counted" ConcatBitcast row beside ops with transcendentals got one
    # cell too many ("10 cells for 9 columns") at every width.
    from jaxinspect.cost.console import render_cost
    from jaxinspect.cost.jsondoc import cost_to_dict

    doc = cost_to_dict(lm_report.cost)
    jsonschema.validate(doc, COST_SCHEMA)
    for by in ("op", "line"):
        out = render(render_cost(lm_report.cost, by=by), width)
        assert_fits_json(out, width, doc)
    assert "ConcatBitcast" in render(render_cost(lm_report.cost, top=None), 250)


def test_ops_xla_does_not_count_come_last_with_a_reason(lm_report: Any) -> None:
    from jaxinspect.cost.jsondoc import cost_to_dict

    ops = cost_to_dict(lm_report.cost)["cost"]["ops"]
    counted = [op["counted"] for op in ops]
    assert counted == sorted(counted, reverse=True)  # every counted op before the others
    uncounted = [op for op in ops if not op["counted"]]
    assert any(op["custom_call_target"] == "ConcatBitcast" for op in uncounted)
    for op in uncounted:
        assert op["flops"] is None and op["bytes_accessed"] is None
        assert "no cost model" in op["not_counted_reason"]
    assert all(op["not_counted_reason"] is None for op in ops if op["counted"])
    first = ops[0]
    assert first["opcode"] == "fusion" and first["flops"] > 0


def test_the_report_op_table_starts_with_a_fusion_and_folds_tuple_shapes(
    lm_report: Any,
) -> None:
    from jaxinspect.htmlreport.render import render_html
    from jaxinspect.htmlreport.tables import FOLD_CHARS

    html = render_html(lm_report)
    table = html[html.index('<table class="sortable" id="t-ops">') :]
    table = table[: table.index("</table>")]
    rows = re.findall(r'<tr data-op="([^"]+)">(.*?)</tr>', table)
    ops = {op.name: op for op in lm_report.cost.program.ops}
    first = ops[rows[0][0]]
    assert first.fusion_kind is not None and first.total is not None and first.total.flops > 0
    counted = [ops[name].total is not None for name, _ in rows]
    assert counted == sorted(counted, reverse=True)
    # A tuple shape shows folded, whole on hover; every cell's text is short.
    tuples = [(name, cells) for name, cells in rows if ops[name].shape.startswith("(")]
    assert tuples  # the all-reduces of tuples that made the table 2,085 px wide
    for name, cells in tuples:
        shape_td = re.findall(r"<td[^>]*>", cells)[2]
        assert f'title="{escape(ops[name].shape)}"' in shape_td
    texts = [unescape(t) for _, cells in rows for t in re.findall(r"<td[^>]*>([^<]*)</td>", cells)]
    assert max(len(t) for t in texts) <= max(FOLD_CHARS, 40)


def test_per_op_totals_are_reconciled_with_the_tpu_s_cause_by_cause(lm_report: Any) -> None:
    # Issue #26, finding 12: the per-op totals differ from the TPU compiler's cost_analysis();
    # the report splits the difference into the TPU's own model and costing one by one.
    from jaxinspect.cost.console import render_cost
    from jaxinspect.cost.jsondoc import cost_to_dict

    doc = cost_to_dict(lm_report.cost)
    jsonschema.validate(doc, COST_SCHEMA)
    cost, found = doc["cost"], doc["cost"]["reconciliation"]
    assert found is not None
    for key in ("flops", "transcendentals", "bytes_accessed"):
        assert found["cost_analysis"][key] == cost[key]  # JAX's own figures
        assert found["counted_once"][key] == cost["counted_once"][key]
        parts = found["counted_once"][key] + found["backend_model"][key]
        assert parts + found["one_by_one"][key] == pytest.approx(found["cost_analysis"][key])
    # The FLOPs are the same model's: the TPU's differs from the generic one in bytes only.
    assert found["backend_model"]["flops"] == 0 and found["backend_model"]["bytes_accessed"] > 0
    assert abs(found["one_by_one"]["flops"]) < 100  # 8 in 7.8e10
    assert found["not_counted"] == 5  # the ConcatBitcast calls
    assert "per-op sum against XLA's cost_analysis()" in render(render_cost(lm_report.cost), 120)


def test_the_sum_of_per_op_bounds_is_never_below_the_program_s(lm_report: Any) -> None:
    cost = lm_report.cost
    assert cost.program_roofline is not None and cost.roofline_sum_s is not None
    assert cost.roofline_sum_s >= cost.program_roofline.time_s
