"""The report's tables in headless Chromium (as tests/test_report_browser.py sets it up): the
op table of docs/sharding.md's language-model step on a v5e-16 slice fits its box, and
sorting a column keeps the ops XLA does not count last."""

from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import SAMPLES

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
playwright = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (a dev extra; CI installs it)"
)
pytestmark = [
    pytest.mark.skipif(
        CHROMIUM is None, reason="no chromium on PATH (CI installs Debian's chromium package)"
    ),
    pytest.mark.skipif(
        importlib.util.find_spec("libtpu") is None,
        reason="libtpu is not installed (pip install 'jaxinspect[tpu]'); CI installs it",
    ),
]


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from typer.testing import CliRunner

    from jaxinspect.cli.app import app

    out = tmp_path_factory.mktemp("report") / "lm.html"
    target = f"{SAMPLES / 'sharded.py'}:lm_step"
    spec = str(SAMPLES / "lm_v5e16.yaml")
    result = CliRunner().invoke(
        app, ["report", target, "-s", spec, "--topology", "v5e:4x4", "-o", str(out)]
    )
    assert result.exit_code == 0, result.stderr
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.problems = []
        page.on("pageerror", lambda e: page.problems.append(str(e)))
        page.goto(Path(out).as_uri())
        yield page
        browser.close()


def test_the_op_table_is_no_wider_than_its_box(page: Any) -> None:
    widths = page.locator("#t-ops").evaluate(
        "t => [t.getBoundingClientRect().width, t.parentElement.clientWidth]"
    )
    table, box = widths
    assert 0 < table <= box, f"the op table is {table} px in a {box} px box"
    # The folded tuple shape is whole on hover.
    folded = page.locator("#t-ops td.fold[title^='(']").first
    assert len(folded.inner_text()) < len(folded.get_attribute("title"))
    assert not page.problems


def test_sorting_by_flops_keeps_uncounted_ops_last(page: Any) -> None:
    flops = page.locator("#t-ops th", has_text="FLOPs")
    for _ in range(2):  # descending, then ascending
        flops.click()
        last = page.locator("#t-ops tbody tr").last.locator("td").nth(4).inner_text()
        assert last == "not counted"
    first = page.locator("#t-ops tbody tr").first.locator("td").nth(4).inner_text()
    assert first != "not counted"
    assert not page.problems
