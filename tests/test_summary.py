"""The notebook summary (``htmlreport/summary.py``) of the flax train step: self-contained,
scoped to its own id, and in headless Chromium two summaries on one page stay independent.

The browser tests drive Debian's `chromium` with playwright and skip where either is missing
(CI installs both); every request other than the page itself is refused and recorded.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from browserpage import CHROMIUM, opened
from notebookpage import check_summary, page_is_untouched, write_page

from conftest import SAMPLES


@pytest.fixture(scope="module")
def flax_data() -> Any:
    """The report's data of the flax sample's train step, built as ``jaxinspect report``."""
    from jaxinspect.cli.options import PlacementOptions, load_cli_spec
    from jaxinspect.htmlreport.data import profiled_report
    from jaxinspect.inputs.target import load_target
    from jaxinspect.xla.ownership import frames_recorded, resolve_user_code

    spec = load_cli_spec(str(SAMPLES / "train_flax.yaml"), None, None, PlacementOptions())
    loaded = load_target(f"{SAMPLES / 'train_flax.py'}:train_step")
    user = resolve_user_code([], loaded.source_file)
    with frames_recorded(user):
        return profiled_report(
            loaded, spec, backend=None, profile=None, user=user, measure_runs=None
        )[1]


def _summary(data: Any, uid: str | None = None) -> str:
    from jaxinspect.htmlreport.summary import render_summary

    return render_summary(data, uid)


def test_every_id_carries_the_summarys_own_prefix(flax_data: Any) -> None:
    html = _summary(flax_data, "jxs-one")
    ids = re.findall(r'\bid="([^"]*)"', html)
    assert ids[0] == "jxs-one"
    # The tables' ids are t-NAME, as in the report.
    assert all(i.removeprefix("t-").startswith("jxs-one-") for i in ids[1:]), ids
    assert len(ids) == len(set(ids))
    assert {"jxs-one-graph-view", "jxs-one-graph-data", "t-jxs-one-ops"} <= set(ids)
    # Unnamed, each rendering gets its own id: the same cell run twice keeps two graphs.
    first, second = (re.search(r'id="(jxs-[0-9a-f]+)"', _summary(flax_data)) for _ in "ab")
    assert first and second and first.group(1) != second.group(1)


def test_every_style_rule_stays_inside_the_summary(flax_data: Any) -> None:
    html = _summary(flax_data, "jxs-s")
    styles = re.findall(r"<style>(.*?)</style>", html, re.S)
    assert len(styles) == 1
    selectors = [
        s.strip() for rule in re.findall(r"([^{}]+)\{", styles[0]) for s in rule.split(",")
    ]
    assert len(selectors) > 30
    assert all(s.startswith("#jxs-s") for s in selectors), selectors
    # The report's id rules, renamed to the summary's ids; its page frame left out.
    assert "#jxs-s #jxs-s-graph-legend .lg-bar" in selectors
    assert not any(re.search(r"\b(body|header|aside)\b", s) for s in selectors)


def test_scoped_css_renames_ids_and_drops_the_pages_own_rules() -> None:
    from jaxinspect.htmlreport.summary import scoped_css

    css = "/* c */body{margin:0}#graph-view svg,.card .v{color:red}aside#details{top:0}"
    out = scoped_css(css, "u")
    assert out.startswith("#u #u-graph-view svg,#u .card .v{color:red}#u{")
    assert "margin:0" not in out and "top:0" not in out


def test_nothing_is_fetched_and_the_script_is_self_contained(flax_data: Any) -> None:
    html = _summary(flax_data, "jxs-n")
    assert not re.search(r"\b(src|href)\s*=|url\(|@import", html)
    # Its only URL is SVG's namespace name, which is never fetched.
    assert set(re.findall(r"https?://[^\s\"'<>]+", html)) == {"http://www.w3.org/2000/svg"}
    scripts = re.findall(r"<script>(.*?)</script>", html, re.S)
    assert len(scripts) == 1 and "JaxGraph" in scripts[0]
    assert scripts[0].count('"jxs-n"') == 1  # the id it looks its root up by


def test_the_hot_ops_are_the_largest_by_flops_uncounted_last(flax_data: Any) -> None:
    from jaxinspect.htmlreport.summary import TOP_OPS

    html = _summary(flax_data, "jxs-h")
    table = re.search(r'<table class="sortable" id="t-jxs-h-ops">(.*?)</table>', html, re.S)
    assert table is not None
    rows = re.findall(r'<tr data-op="([^"]+)">(.*?)</tr>', table.group(1), re.S)
    assert len(rows) == TOP_OPS
    flops = [re.findall(r'data-v="([^"]*)"', cells)[4] for _, cells in rows]
    counted = [float(v) for v in flops if v]
    assert counted == sorted(counted, reverse=True)
    assert flops == [v for v in flops if v] + [v for v in flops if not v]
    everything = [op.total.flops for op in flax_data.cost.program.ops if op.total is not None]
    assert counted[0] == max(everything)


def test_without_a_buffer_assignment_the_summary_says_so(flax_data: Any) -> None:
    html = _summary(replace(flax_data, memory=None), "jxs-m")
    assert "No buffer assignment" in html and "t-jxs-m-peak" not in html
    assert '<div class="card"><div class="v">—</div><div class="k">peak memory</div>' in html


browser = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium on PATH (CI installs Debian's chromium package)"
)


@browser
def test_two_summaries_on_one_page_render_and_stay_independent(
    flax_data: Any, tmp_path: Path
) -> None:
    playwright = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (a dev extra; CI installs it)"
    )
    outputs = [_summary(flax_data, "jxs-a"), _summary(flax_data, "jxs-b")]
    path = write_page(outputs, tmp_path / "page.html")
    with opened(playwright, path, 1000, 1400) as page:
        for uid in ("jxs-a", "jxs-b"):
            check_summary(page, uid)
        nodes_b = page.locator("#jxs-b-graph-view g.node").count()
        # Search in the first: its hits only.
        page.fill("#jxs-a-graph-search", "dot")
        assert "match" in page.inner_text("#jxs-a-graph-hits")
        assert page.locator("#jxs-a-graph-view .hit").count() >= 1
        assert page.inner_text("#jxs-b-graph-hits") == ""
        assert page.locator("#jxs-b-graph-view .hit").count() == 0
        # Fold the first: the second keeps its boxes.
        page.click("#jxs-a-graph-fold")
        assert page.locator("#jxs-a-graph-view g.node").count() < nodes_b
        assert page.locator("#jxs-b-graph-view g.node").count() == nodes_b
        # A click on a node of the second shows it under the second graph only.
        page.locator("#jxs-b-graph-view g.node.dot").first.click()
        assert page.inner_text("#jxs-b .jxs-clicked").startswith("dot")
        assert page.inner_text("#jxs-a .jxs-clicked") == ""
        page_is_untouched(page)
        assert page.problems == []
        assert page.requests == [path.as_uri()]


def test_an_inspection_shows_the_summary_and_a_diff_its_changes() -> None:
    import jax
    import jax.numpy as jnp

    import jaxinspect

    def layer(x: jax.Array, w: jax.Array) -> jax.Array:
        return jnp.tanh(x @ w)

    def relu_layer(x: jax.Array, w: jax.Array) -> jax.Array:
        return jax.nn.relu(x @ w)

    x, w = jnp.ones((4, 8)), jnp.ones((8, 8))
    a, b = (jaxinspect.inspect(f, x, w) for f in (layer, relu_layer))
    html = a._repr_html_()
    uid = re.match(r'<div class="jxs" id="(jxs-[0-9a-f]+)">', html)
    assert uid is not None and f'id="{uid.group(1)}-graph-view"' in html
    assert "FLOPs (loop-aware)" in html and "Hot ops" in html and "Memory at the peak" in html
    assert uid.group(1) not in b._repr_html_()
    changed = jaxinspect.diff(a, b, labels=("tanh", "relu"))._repr_html_()
    assert "tanh → relu" in changed and ">tanh</td>" in changed
    same = jaxinspect.diff(a, a)._repr_html_()
    assert "Identical." in same
