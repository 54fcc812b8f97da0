"""`jaxinspect report`: one self-contained HTML file from one compilation (no browser here;
tests/test_report_browser.py opens it in Chromium)."""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from jax import monitoring

from conftest import SAMPLES
from jaxinspect.renderers.units import format_count

_compiles: list[str] = []


def _on_duration(name: str, _secs: float, **kwargs: object) -> None:
    if name == "/jax/core/compile/backend_compile_duration":
        _compiles.append(str(kwargs.get("fun_name")))


monitoring.register_event_duration_secs_listener(_on_duration)

TRANSFORMER = (f"{SAMPLES / 'transformer.py'}:block", "-s", SAMPLES / "transformer.yaml")


def _write(run_cli: Callable[..., Any], out: Path, *args: Any) -> str:
    result = run_cli("report", *args, "-o", out)
    assert result.exit_code == 0, result.stderr
    assert f"wrote {out}" in result.stderr and result.stdout == ""
    return out.read_text(encoding="utf-8")


def test_the_file_loads_nothing_from_anywhere(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    import jax

    jax.clear_caches()  # an earlier test may have compiled the same block in this process
    _compiles.clear()
    html = _write(run_cli, tmp_path / "r.html", *TRANSFORMER, "--device", "epyc-9654", "--measure")
    assert _compiles == ["jit(block)"]  # one compilation for every section, --measure's too
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "<link" not in html and "@import" not in html and "url(" not in html
    for section in (
        "summary",
        "graph",
        "cost",
        "roofline",
        "latency",
        "memory",
        "passes",
        "stages",
    ):
        assert f'<section id="{section}">' in html
    assert "loc(" in html  # the StableHLO keeps its source locations


def test_the_passes_section_needs_passes_and_the_same_one_compilation(
    run_cli: Callable[..., Any], tmp_path: Path
) -> None:
    import jax

    html = _write(run_cli, tmp_path / "plain.html", *TRANSFORMER)
    section = html[html.index('<section id="passes">') :]
    assert "jaxinspect report --passes" in section[: section.index("</section>")]
    jax.clear_caches()
    _compiles.clear()
    html = _write(run_cli, tmp_path / "passes.html", *TRANSFORMER, "--passes")
    assert _compiles == ["jit(block)"]  # the pass dump comes from the one compilation
    section = html[html.index('<section id="passes">') :]
    section = section[: section.index("</section>")]
    assert "steps changed the module (jit_block)" in section
    assert "report --passes" not in section


def test_the_graph_has_one_node_per_entry_instruction(
    run_cli: Callable[..., Any], tmp_path: Path
) -> None:
    html = _write(run_cli, tmp_path / "r.html", *TRANSFORMER)
    nodes = [n[0] for n in _graph(html)["nodes"]]
    # Independently: the ENTRY computation of the optimized HLO, as JAX prints it.
    from jaxinspect.inputs.spec import load_spec
    from jaxinspect.inputs.target import load_target
    from jaxinspect.stages.runner import InspectOptions, run_inspection

    options = InspectOptions(sections=("hlo",), execute=False)
    _, art = run_inspection(load_target(TRANSFORMER[0]), load_spec(TRANSFORMER[2]), options)
    text = art.compiled.as_text()
    body = text[text.index("ENTRY") :]
    body = body[: body.index("\n}")]
    expected = re.findall(r"^\s+(?:ROOT )?%?([\w.\-]+) = ", body, re.MULTILINE)
    assert sorted(nodes) == sorted(expected)
    details = _op_details(html)
    assert all(name in details for name in nodes)


def test_measured_twelve_layers_stays_under_5_mb(
    run_cli: Callable[..., Any], tmp_path: Path
) -> None:
    html = _write(
        run_cli,
        tmp_path / "r12.html",
        f"{SAMPLES / 'transformer_stack.py'}:stack",
        "-s",
        SAMPLES / "transformer_stack.yaml",
        "--measure",
    )
    assert len(html.encode()) < 5_000_000
    graph = _graph(html)
    assert graph["metrics"][graph["by"]]["label"] == "measured time"  # coloured by it first
    assert sum(n[2] == "fusion" for n in graph["nodes"]) > 100  # twelve blocks' fusions
    repeats = [g for g in graph["groups"] if g[1] == "repeat"]
    assert [(g[0], g[2]) for g in repeats] == [("block ×12", 12)]  # one group, twelve layers
    members = [g for g in graph["groups"] if g[1] == "member"]
    assert len(members) == 12 and len({g[4] for g in members[1:]}) == 1  # laid out once


def test_the_layout_puts_a_parameter_just_above_its_first_user() -> None:
    from jaxinspect.htmlreport.graph import entry_graph
    from jaxinspect.xla.hlotext import parse_module

    hlo = parse_module(
        "HloModule m, entry_computation_layout={(f32[4]{0}, f32[4]{0})->f32[4]{0}}\n\n"
        "ENTRY %main (p0: f32[4], p1: f32[4]) -> f32[4] {\n"
        '  %p0 = f32[4]{0} parameter(0), metadata={op_name="x"}\n'
        "  %p1 = f32[4]{0} parameter(1), metadata={op_name=\"params[\\'w\\']\"}\n"
        "  %a = f32[4]{0} sine(f32[4]{0} %p0)\n"
        "  %b = f32[4]{0} cosine(f32[4]{0} %a)\n"
        "  %c = f32[4]{0} add(f32[4]{0} %b, f32[4]{0} %p1)\n"
        "  ROOT %d = f32[4]{0} multiply(f32[4]{0} %c, f32[4]{0} %p0)\n"
        "}\n"
    )
    graph = entry_graph(hlo, {"c": (None, 2.0, 8.0)}, {"c": "f.py:3 f"}, "flops")
    nodes = {n.name: n for n in graph.nodes}
    assert {name: n.layer for name, n in nodes.items()} == {
        "p0": 0,  # used by a at layer 1 (and by d further down)
        "a": 1,
        "b": 2,
        "p1": 2,  # just above its only user, c
        "c": 3,
        "d": 4,
    }
    named = {(graph.nodes[a].name, graph.nodes[b].name) for a, b in graph.edges}
    assert named == {("p0", "a"), ("a", "b"), ("b", "c"), ("p1", "c"), ("c", "d"), ("p0", "d")}
    assert nodes["p1"].op_name == "params['w']"  # HLO's escaped quotes undone
    places = dict(zip([n.name for n in graph.nodes], graph.layouts[0], strict=True))
    assert places["p1"][1] != places["b"][1]  # two nodes of one layer never overlap
    assert (nodes["c"].values, nodes["c"].source) == ((None, 2.0, 8.0), "f.py:3 f")
    assert nodes["d"].values == (None, None, None)
    assert len(graph.groups) == 1 and graph.groups[0].values == (0.0, 2.0, 8.0)  # no scopes


def _graph(html: str) -> dict[str, Any]:
    embedded = re.search(r'<script type="application/json" id="graph-data">(.*?)</script>', html)
    assert embedded is not None
    graph: dict[str, Any] = json.loads(embedded.group(1))
    return graph


def _op_details(html: str) -> dict[str, dict[str, Any]]:
    embedded = re.search(r'<script type="application/json" id="ops">(.*?)</script>', html, re.S)
    assert embedded is not None
    details: dict[str, dict[str, Any]] = json.loads(embedded.group(1))
    return details


def test_a_loop_weighs_what_runs_inside_it(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    rnn = (f"{SAMPLES / 'rnn.py'}:run", "-s", SAMPLES / "rnn.yaml")
    html = _write(run_cli, tmp_path / "r.html", *rnn)
    loops = [(n, d) for n, d in _op_details(html).items() if d["opcode"] == "while"]
    assert len(loops) == 1
    name, loop = loops[0]
    # Independently: `cost`'s ops that run more than once are the loop's body and condition.
    ops = json.loads(run_cli("cost", *rnn, "--format", "json").stdout)["cost"]["ops"]
    inside = sum(op["flops"] for op in ops if op["runs"] > 1)
    assert inside > 1e6 and loop["inside"] == format_count(inside)
    assert re.search(r"rnn\.py:\d+ run", loop["source"])
    # ... and is the hottest node of the graph (its FLOPs, the colour's figure).
    nodes = _graph(html)["nodes"]
    assert max(nodes, key=lambda n: n[7][1] or 0)[0] == name


def test_a_sharded_program_shows_its_collectives(
    run_cli: Callable[..., Any], tmp_path: Path
) -> None:
    html = _write(
        run_cli,
        tmp_path / "r.html",
        f"{SAMPLES / 'sharded.py'}:matmul",
        "-s",
        SAMPLES / "sharded_matmul.yaml",
    )
    assert '<section id="collectives">' in html
    marked = [n[2] for n in _graph(html)["nodes"] if n[6]]
    assert marked and all(op.startswith(("all-", "reduce-scatter", "collective")) for op in marked)


@pytest.mark.skipif(
    importlib.util.find_spec("libtpu") is None,
    reason="libtpu is not installed (pip install 'jaxinspect[tpu]'); CI installs it",
)
def test_a_tpu_slice_gets_its_chips_roofline_and_says_nothing_ran(
    run_cli: Callable[..., Any], tmp_path: Path
) -> None:
    dp = (f"{SAMPLES / 'sharded.py'}:train_step", "-s", SAMPLES / "sharded_dp.yaml")
    html = _write(run_cli, tmp_path / "r.html", *dp, "--topology", "v5e:2x2", "--mesh", "data=4")
    roofline = html[html.index('<section id="roofline">') : html.index('<section id="latency">')]
    assert "Device profile tpu-v5e, from the compiled device (TPU v5 lite)." in roofline
    assert roofline.count('class="dot op"') > 3
    assert "nothing runs here" in html and 'class="bar"' not in html  # no latency histogram


def test_the_budget_of_stage_text_cuts_the_longest_first() -> None:
    from jaxinspect.htmlreport.data import share_budget

    assert share_budget([100, 200, 300], 1000) == [100, 200, 300]  # all fit: all whole
    assert share_budget([100, 900, 2000], 1000) == [100, 450, 450]
    assert share_budget([2000, 50], 1000) == [950, 50]
    assert share_budget([], 1000) == []


def test_cut_texts_say_so_and_offer_no_broken_download(
    run_cli: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jaxinspect.htmlreport import data

    monkeypatch.setattr(data, "STAGE_TEXT_BUDGET", 4_000)
    mlp = (f"{SAMPLES / 'mlp.py'}:predict", "-s", SAMPLES / "mlp.yaml")
    html = _write(run_cli, tmp_path / "r.html", *mlp)
    notes = re.findall(r"Cut at ([\d,]+) characters[^<]*<code>([^<]+)</code>", html)
    assert ("jaxinspect stablehlo --debug-info" in [c for _, c in notes]) and len(notes) >= 2
    assert sum(int(n.replace(",", "")) for n, _ in notes) <= 4_000
    assert 'class="download"' not in html  # a cut module would not parse in Model Explorer


def test_errors_exit_2_and_write_nothing(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    bad = run_cli("report", f"{SAMPLES / 'mlp.py'}:predict", "--arg", "x=f32[8", "-o", out)
    assert bad.exit_code == 2 and not out.exists()
    unknown = run_cli(
        "report",
        f"{SAMPLES / 'mlp.py'}:predict",
        "-s",
        SAMPLES / "mlp.yaml",
        "--device",
        "h1000",
        "-o",
        out,
    )
    assert unknown.exit_code == 2 and "did you mean" in unknown.stderr and not out.exists()
    missing = run_cli(
        "report",
        f"{SAMPLES / 'mlp.py'}:predict",
        "-s",
        SAMPLES / "mlp.yaml",
        "-o",
        tmp_path / "no" / "such" / "r.html",
    )
    assert missing.exit_code == 2 and "cannot write the report" in missing.stderr


def test_stablehlo_debug_info_prints_locations(run_cli: Callable[..., Any]) -> None:
    mlp = (f"{SAMPLES / 'mlp.py'}:predict", "-s", SAMPLES / "mlp.yaml")
    plain = run_cli("stablehlo", *mlp).stdout
    located = run_cli("stablehlo", *mlp, "--debug-info").stdout
    assert located.count("loc(") > plain.count("loc(")
    assert 'mlp.py":' in located  # the user's own file and line
    refused = run_cli("hlo", *mlp, "--debug-info")
    assert refused.exit_code == 2 and "--debug-info is for `jaxinspect stablehlo`" in refused.stderr


def test_help_lists_the_command(run_cli: Callable[..., Any]) -> None:
    assert "report" in run_cli("--help").stdout


def test_chart_ticks_are_round_values_within_the_axis() -> None:
    from jaxinspect.htmlreport.charts import byte_ticks, decade_ticks, nice_ticks

    assert nice_ticks(0, 37) == [0, 10, 20, 30]
    assert nice_ticks(0.0013, 0.0049) == [0.002, 0.003, 0.004]
    assert nice_ticks(5, 5) == [5]
    assert byte_ticks(3.2 * 2**20) == [0, 2**20, 2 * 2**20, 3 * 2**20]  # whole MiB
    assert decade_ticks(-1.3, 2.2) == [0.1, 1.0, 10.0, 100.0]
    assert len(decade_ticks(0, 20)) <= 8


def test_tables_name_arguments_and_lines_as_the_user_does(
    run_cli: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(SAMPLES.parent)
    html = _write(
        run_cli,
        tmp_path / "r.html",
        "sample_programs/mlp.py:predict",
        "-s",
        "sample_programs/mlp.yaml",
    )
    peak = html[html.index('id="t-peak"') :]
    peak = peak[: peak.index("</table>")]
    # A parameter by its argument, as the graph and `jaxinspect memory` name it.
    shown = re.findall(r"<td[^>]*>([^<]*)</td>", peak)
    assert "params[&#x27;w1&#x27;]" in shown and not any("params__" in c for c in shown)
    lines = html[html.index('id="t-lines"') :]
    lines = lines[: lines.index("</table>")]
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", lines)
    assert any(re.fullmatch(r"sample_programs/mlp\.py:\d+", c) for c in cells)
    assert "predict" in cells and str(SAMPLES) not in lines
