"""The HTML report in a real browser: headless Chromium (Debian's `chromium`) driven by
playwright with the system browser. CI installs both; elsewhere the tests skip, saying why.

Every request other than the file itself (and blob:/data: URLs the page makes) is refused
and recorded; a screenshot is kept under tests/artifacts/ (ignored by git).
"""

from __future__ import annotations

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
# Relative to where pytest runs: the report's header reads as in docs/report.md's screenshot.
TARGET = f"{os.path.relpath(SAMPLES / 'transformer.py')}:block"
SPEC = Path(os.path.relpath(SAMPLES / "transformer.yaml"))


@pytest.fixture(scope="module")
def report_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from typer.testing import CliRunner

    from jaxinspect.cli.app import app

    out = tmp_path_factory.mktemp("report") / "report.html"
    args = [
        "report",
        TARGET,
        "-s",
        str(SPEC),
        "--device",
        "epyc-9654",
        "--measure",
        "--passes",
        "-o",
        str(out),
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.stderr
    return out


@pytest.fixture(scope="module")
def page(report_file: Path) -> Iterator[Any]:
    with opened(playwright, report_file, 1280, 900) as page:
        yield page


def test_every_section_renders(page: Any) -> None:
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
        assert page.locator(f"section#{section}").is_visible()
    assert page.locator("section#latency svg.chart rect.bar").count() > 3
    assert page.locator("section#memory svg.chart circle.dot.peak").count() == 1
    assert page.locator("section#roofline svg.chart circle.op").count() > 5
    assert page.locator("#t-passes tbody tr").count() > 3


def test_one_graph_node_per_entry_instruction(page: Any) -> None:
    # Counted independently: the ENTRY computation of `jaxinspect hlo`, as JAX prints it.
    from typer.testing import CliRunner

    from jaxinspect.cli.app import app

    hlo = CliRunner().invoke(app, ["hlo", TARGET, "-s", str(SPEC)])
    assert hlo.exit_code == 0, hlo.stderr
    entry = hlo.stdout[hlo.stdout.index("\nENTRY") :]
    entry = entry[: entry.index("\n}")]
    instructions = re.findall(r"^\s+(?:ROOT )?%?([\w.\-]+) = ", entry, re.MULTILINE)
    assert len(instructions) > 20
    shown = page.locator("svg.graph g.node").evaluate_all(
        "nodes => nodes.map(n => n.getAttribute('data-op'))"
    )
    assert sorted(shown) == sorted(instructions)


def test_clicking_an_op_shows_its_source_line(page: Any) -> None:
    node = page.locator("svg.graph g.node.fusion").first
    node.click()
    assert page.locator("#details").is_visible()
    assert "sel" in (node.get_attribute("class") or "")
    assert re.search(r"transformer\.py:\d+", page.locator("#details dd.f-source-line").inner_text())
    assert page.locator("#details dd.f-jaxpr-equation").inner_text().startswith("jit(block)")
    # The screenshot kept as an artifact (and, copied, docs/report.png): an op clicked.
    ARTIFACTS.mkdir(exist_ok=True)
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(ARTIFACTS / "report.png"))
    print(f"screenshot: {ARTIFACTS / 'report.png'}")
    page.locator("#close").click()
    assert page.locator("#details").is_hidden()
    page.locator("svg.graph g.node.parameter").first.focus()  # by keyboard: Tab, Enter
    page.keyboard.press("Enter")
    assert page.locator("#details dd.f-opcode").inner_text() == "parameter"
    page.locator("#close").click()


def test_a_table_row_brings_its_node_into_view_and_zoom_resizes(page: Any) -> None:
    view = page.locator("#graph-view")
    view.evaluate("v => { v.scrollTop = 0; }")
    last = page.locator("#t-ops tbody tr").last
    name = last.get_attribute("data-op")
    last.click()
    node = page.locator(f'svg.graph g.node[data-op="{name}"]')
    assert "sel" in (node.get_attribute("class") or "")
    assert page.locator("#details dt", has_text="instruction").count() == 1
    assert page.locator("#details dd").first.inner_text() == name
    box, frame = node.bounding_box(), view.bounding_box()
    assert frame["y"] <= box["y"] and box["y"] + box["height"] <= frame["y"] + frame["height"]
    page.locator("#close").click()
    width = float(page.locator("svg.graph").get_attribute("width"))
    page.locator('.zoom button[data-zoom="0.8"]').click()
    assert float(page.locator("svg.graph").get_attribute("width")) == pytest.approx(0.8 * width)
    page.locator('.zoom button[data-zoom="1"]').click()
    assert float(page.locator("svg.graph").get_attribute("width")) == pytest.approx(width)


def test_tables_sort_and_texts_search(page: Any) -> None:
    header = page.locator("#t-ops th", has_text="FLOPs")
    header.click()
    first = float(
        page.locator("#t-ops tbody tr").first.locator("td").nth(4).get_attribute("data-v")
    )
    values = [
        float(v)
        for v in page.locator("#t-ops tbody tr td:nth-child(5)").evaluate_all(
            "cells => cells.map(c => c.getAttribute('data-v'))"
        )
    ]
    assert first == max(values)
    page.locator('input.search[data-pre="pre-hlo"]').fill("fusion")
    assert page.locator("#pre-hlo .ln.hit").count() > 5


def test_the_stablehlo_downloads_as_stablehlo_debug_info_prints_it(page: Any) -> None:
    from typer.testing import CliRunner

    from jaxinspect.cli.app import app

    with page.expect_download() as download:
        page.locator("a.download").click()
    assert download.value.suggested_filename == "module.mlir"
    text = Path(download.value.path()).read_text(encoding="utf-8")
    printed = CliRunner().invoke(app, ["stablehlo", TARGET, "-s", str(SPEC), "--debug-info"])
    assert printed.exit_code == 0, printed.stderr
    assert text.strip() == printed.stdout.strip()
    assert 'transformer.py":' in text  # loc(...) with the source file: Model Explorer's layers


def test_no_console_errors_and_no_network(page: Any) -> None:
    assert page.problems == []
    assert page.requests, "the route saw no request: it would not see a network request either"
    assert [u for u in page.requests if not u.startswith(LOCAL)] == []


def test_charts_carry_tick_values_and_name_their_op_on_hover(page: Any) -> None:
    for section, at_least in (("latency", 4), ("memory", 4), ("roofline", 3)):
        values = page.locator(f"section#{section} svg.chart text.tv").all_text_contents()
        assert len(values) >= at_least and all(re.search(r"\d", v) for v in values), section
    ticks = page.locator("section#memory svg.chart text.tv").all_text_contents()
    assert any(v.endswith(("KiB", "MiB")) for v in ticks)  # bytes on the y axis
    roofline = page.locator("section#roofline svg.chart text.tv").all_text_contents()
    assert any(v.endswith("FLOP/s") for v in roofline) and "1" in roofline  # log decades
    dot = page.locator("section#roofline circle.op").last
    page.locator("section#roofline").scroll_into_view_if_needed()
    dot.hover()
    tip = page.locator("#tip")
    assert tip.is_visible() and tip.inner_text().startswith(dot.get_attribute("data-op") + ":")
    point = page.locator("section#memory circle.dot.peak")
    point.scroll_into_view_if_needed()
    point.hover()
    assert tip.inner_text().startswith(point.get_attribute("data-op") + ":")
    assert "live at step" in tip.inner_text()
    page.mouse.move(0, 0)
    assert tip.is_hidden()
