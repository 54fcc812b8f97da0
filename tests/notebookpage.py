"""Notebook outputs (``text/html``) on one page, as a notebook shows them, for the browser
tests of the summary: the page has its own styles and an element whose id a summary's
elements would have without their prefix, to catch a summary reaching outside itself.

``check_summary`` asserts what every summary must show once its script ran."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: The notebook page around the outputs: a rule and ids a leaky summary would hit.
PAGE_HEAD = (
    '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>notebook</title>'
    "<style>.nb-cell{margin:8px 0}</style></head><body>"
    '<div class="card" id="page-card">the notebook\'s own card</div>'
    '<div id="graph-view">the notebook\'s own graph-view</div>'
    '<input id="graph-search" value="">'
)


def write_page(outputs: Sequence[str], path: Path) -> Path:
    """``outputs`` one per cell on one page, written to ``path``."""
    cells = "".join(f'<div class="nb-cell">{html}</div>' for html in outputs)
    path.write_text(f"{PAGE_HEAD}{cells}</body></html>\n")
    return path


def check_summary(page: Any, uid: str) -> None:
    """The summary ``uid`` rendered: its cards, hot-op rows, the drawn graph, the buffers."""
    root = page.locator(f"#{uid}")
    assert root.is_visible()
    assert root.locator(".cards .card").count() >= 5
    assert root.locator(".card").first.is_visible()
    assert root.locator(f"#t-{uid}-ops tbody tr").count() >= 1
    graph = root.locator(f"#{uid}-graph-view svg.graph")
    assert graph.count() == 1 and graph.is_visible()
    assert root.locator(f"#{uid}-graph-view g.node").count() > 3
    assert root.locator(f"#{uid}-graph-legend .lg-bar").count() == 1
    assert root.locator(f"#t-{uid}-peak tbody tr").count() >= 1


def page_is_untouched(page: Any) -> None:
    """The notebook's own elements kept their content and style."""
    assert page.locator("#graph-view").first.inner_text() == "the notebook's own graph-view"
    border = page.eval_on_selector("#page-card", "e => getComputedStyle(e).borderTopStyle")
    assert border == "none"  # the report's .card rule stayed inside the summaries
    assert page.evaluate("typeof window.JaxGraph") == "undefined"
