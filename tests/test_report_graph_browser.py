"""The report's graph at a real model's size, in a real browser: transformer_stack.py with
96 unrolled blocks (~32,000 lines of optimized HLO), opened at 1440 x 900 in headless
Chromium (see browserpage.py). The report is built once for the module (it compiles the 96
blocks); each test opens it afresh.

The screenshots docs/report.md shows are kept in tests/artifacts/report-graph.png (the first
screen, folded) and report-graph-layer.png (a layer opened), copied to docs/ by hand when the
page changes.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browserpage import CHROMIUM, LOCAL, opened

from conftest import ROOT, SAMPLES

playwright = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (a dev extra; CI installs it)"
)
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium on PATH (CI installs Debian's chromium package)"
)
ARTIFACTS = ROOT / "tests" / "artifacts"
LAYERS = 96
TARGET = f"{os.path.relpath(SAMPLES / 'transformer_stack.py')}:stack"
#: A fusion of one of the 96 blocks, as `jaxinspect hlo` names it for this spec (XLA numbers
#: the blocks' fusions from the last block up: block #0's w1 matmul is ynn_fusion.1331).
FUSION = "ynn_fusion.155"
WIDTH, HEIGHT = 1440, 900


def _spec_with_layers(path: Path, layers: int) -> Path:
    """transformer_stack.yaml with its twelve ``*layer`` entries made ``layers``."""
    lines = (SAMPLES / "transformer_stack.yaml").read_text(encoding="utf-8").splitlines()
    kept = [line for line in lines if line.strip() != "- *layer"]
    at = next(i for i, line in enumerate(kept) if line.strip().startswith("- &layer"))
    kept[at + 1 : at + 1] = ["    - *layer"] * (layers - 1)
    path.write_text("\n".join(kept) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def report_96(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from typer.testing import CliRunner

    from jaxinspect.cli.app import app

    folder = tmp_path_factory.mktemp("report96")
    spec = _spec_with_layers(folder / "stack96.yaml", LAYERS)
    out = folder / "report.html"
    result = CliRunner().invoke(app, ["report", TARGET, "-s", str(spec), "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    return out


@pytest.fixture
def page(report_96: Path) -> Iterator[Any]:
    with opened(playwright, report_96, WIDTH, HEIGHT) as page:
        yield page
        assert page.problems == []  # no console errors, whatever the test did


def _graph(page: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(page.locator("#graph-data").text_content())
    return data


def _inside(box: dict[str, float], frame: dict[str, float]) -> bool:
    return (
        frame["x"] <= box["x"]
        and box["x"] + box["width"] <= frame["x"] + frame["width"] + 0.5
        and frame["y"] <= box["y"]
        and box["y"] + box["height"] <= frame["y"] + frame["height"] + 0.5
    )


def test_on_load_the_folded_graph_fits_the_first_screen_with_every_layer(page: Any) -> None:
    screen = {"x": 0, "y": 0, "width": WIDTH, "height": HEIGHT}
    view = page.locator("#graph-view").bounding_box()
    graph = page.locator("svg.graph").bounding_box()
    assert _inside(graph, view) and _inside(view, screen)  # no scrolling, page or graph
    repeat = page.locator("svg.graph g.group.repeat")
    assert repeat.count() == 1 and f"×{LAYERS}" in repeat.text_content()
    cells = page.locator("svg.graph g.group.repeat rect.cell")
    assert cells.count() == LAYERS  # one cell per layer, each visible on the first screen
    boxes = cells.evaluate_all("cs => cs.map(c => c.getBoundingClientRect().toJSON())")
    assert all(_inside(b, view) for b in boxes)
    # Everything else of the program is there too: the folded boxes hold every instruction.
    nodes = len(_graph(page)["nodes"])
    shown = page.locator("svg.graph g.node").count()
    held = page.evaluate(
        "() => [...document.querySelectorAll('svg.graph g.group > title')]"
        ".reduce((s, t) => s + +t.textContent.match(/\\((\\d+) instructions/)[1], 0)"
    )
    assert shown + held == nodes


def test_the_node_with_the_most_flops_has_the_most_intense_fill(page: Any) -> None:
    # Independently of the graph's data: the FLOPs column of the op table.
    rows = page.locator("#t-ops tbody tr").evaluate_all(
        "rs => rs.map(r => [r.getAttribute('data-op'), +r.cells[4].getAttribute('data-v')])"
    )
    hottest, flops = max(rows, key=lambda r: r[1])
    page.locator("#graph-search").fill(hottest)
    node = page.locator(f'svg.graph g.node[data-op="{hottest}"]')
    assert node.count() == 1
    heats = page.locator("svg.graph g.node > rect").evaluate_all(
        "rs => rs.map(r => +r.getAttribute('data-heat'))"
    )
    own = float(node.locator("rect").get_attribute("data-heat"))
    assert own == max(heats) == 1.0 and min(heats) < 0.5  # its block's other ops are paler
    fill = node.locator("rect").evaluate("r => getComputedStyle(r).fill")
    legend_end = page.evaluate(
        "() => getComputedStyle(document.querySelector('#graph-legend .lg-bar'))"
        ".backgroundImage.match(/rgb\\([^)]*\\)/g).pop()"
    )
    assert fill == legend_end  # the top of the legend's scale
    assert flops > 1e7


def test_searching_a_fusion_highlights_it_and_scrolls_it_into_view(page: Any) -> None:
    page.locator("#graph-search").fill(FUSION)
    node = page.locator(f'svg.graph g.node[data-op="{FUSION}"]')
    assert node.count() == 1 and "hit" in (node.get_attribute("class") or "")
    view = page.locator("#graph-view").bounding_box()
    assert _inside(node.bounding_box(), view)
    assert _inside(view, {"x": 0, "y": 0, "width": WIDTH, "height": HEIGHT})
    assert re.match(r"\d+ match", page.locator("#graph-hits").inner_text())
    # Enter on its node shows it: its block's source line in context.
    node.click()
    assert page.locator("#details dd").first.inner_text() == FUSION
    assert "transformer.py:" in page.locator("#details dd.f-source-line").inner_text()


def test_expanding_the_repeat_group_shows_its_layers(page: Any) -> None:
    page.locator("svg.graph g.group.repeat text.head").click()  # not a cell: those open a layer
    members = page.locator("svg.graph g.group.member")
    assert members.count() == LAYERS
    labels = members.evaluate_all("ms => ms.map(m => m.querySelector('text').textContent)")
    assert all(f"block #{k} " in label for k, label in enumerate(labels))
    page.locator("svg.graph g.group.member").nth(5).click()  # a layer opens onto its parts
    opened_ = page.locator("svg.graph g.group.open.member")
    assert opened_.count() == 1 and "block #5" in opened_.text_content()
    assert page.locator("svg.graph g.group.scope", has_text="attention").count() == 1
    # A fusion opens onto its fused computation.
    fusion = page.locator("svg.graph g.node.fusion text.tog").first
    fusion.click()
    assert page.locator("svg.graph g.node.open.fusion").count() == 1
    assert page.locator("svg.graph g.sub").count() >= 2


def test_the_colour_follows_the_chosen_figure(page: Any) -> None:
    page.locator("svg.graph g.group.repeat rect.cell").first.click()  # block #0, opened
    first = page.locator("svg.graph g.node > rect").evaluate_all(
        "rs => rs.map(r => r.getAttribute('data-heat'))"
    )
    ticks = page.locator("#graph-legend").inner_text()
    page.locator("#graph-metric").select_option(label="bytes accessed")
    assert page.locator("#graph-legend").inner_text() != ticks
    assert "B" in page.locator("#graph-legend").inner_text()  # bytes, KiB ...
    second = page.locator("svg.graph g.node > rect").evaluate_all(
        "rs => rs.map(r => r.getAttribute('data-heat'))"
    )
    assert len(first) == len(second) > 5 and first != second


def test_the_details_show_the_source_in_context(page: Any) -> None:
    page.locator("#graph-search").fill(FUSION)
    page.locator(f'svg.graph g.node[data-op="{FUSION}"]').click()
    source = page.locator("#details dd.f-source-line").inner_text()
    match = re.match(r"(\S+):(\d+) (\w+)$", source)
    assert match, source
    path, line = Path(match[1]), int(match[2])
    assert not path.is_absolute() and path.name == "transformer.py"  # relative to here
    lines = path.read_text(encoding="utf-8").splitlines()
    shown = page.locator("#details dd.f-context pre.code").first
    at = shown.locator(".ln.at").inner_text()
    assert at.split()[0] == str(line) and at.rstrip().endswith(lines[line - 1].strip())
    around = min(line + 2, len(lines)) - max(1, line - 2) + 1  # two lines either side
    assert shown.locator(".ln").count() == around
    frames = page.locator("#details dd.f-context .frame").all_inner_texts()
    assert any(re.match(r"called from \S*transformer_stack\.py:\d+ stack$", f) for f in frames)


def test_nothing_is_loaded_from_the_network_and_the_screenshot(page: Any) -> None:
    assert page.requests, "the route saw no request: it would not see a network request either"
    assert [u for u in page.requests if not u.startswith(LOCAL)] == []
    # docs/report-graph.png: the first screen as loaded (the whole program, folded);
    # docs/report-graph-layer.png: the graph with block #0 opened from its cell.
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report-graph.png"))
    page.locator("svg.graph g.group.repeat rect.cell").first.click()
    page.evaluate("document.querySelector('#graph-view').scrollTop = 0")
    page.locator("section#graph").scroll_into_view_if_needed()
    box = page.locator("section#graph").bounding_box()
    clip = {"x": 0, "y": box["y"], "width": WIDTH, "height": min(box["height"], HEIGHT)}
    page.screenshot(path=str(ARTIFACTS / "report-graph-layer.png"), clip=clip)
    print(f"screenshots: {ARTIFACTS / 'report-graph.png'}, {ARTIFACTS / 'report-graph-layer.png'}")
