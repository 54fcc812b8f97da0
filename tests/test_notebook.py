"""docs/notebook.ipynb, executed as a user runs it, and its HTML outputs in a browser.

The notebook runs with nbclient on a kernel that is this test's own python (a kernel spec
written to a temporary folder: a fresh venv has none installed, and the user's home is left
alone). Its ``text/html`` outputs (two summaries, the diff, the compile log) are then put on
one page, as a notebook shows them, and opened in headless Chromium (Debian's `chromium`,
driven by playwright; the browser part skips where either is missing): they render, nothing
is requested from the network, nothing is logged as an error, and the two summaries work
independently.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from browserpage import CHROMIUM, opened
from notebookpage import check_summary, page_is_untouched, write_page

from conftest import ROOT

NOTEBOOK = ROOT / "docs" / "notebook.ipynb"
ARTIFACTS = ROOT / "tests" / "artifacts"
KERNEL = "jaxinspect-test"


def test_the_notebook_is_committed_without_outputs() -> None:
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    code = [c for c in cells if c["cell_type"] == "code"]
    assert len(code) >= 5
    assert all(c["outputs"] == [] and c["execution_count"] is None for c in code)


@pytest.fixture(scope="module")
def executed(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The notebook after a run on this python, from docs/ (where a user opens it)."""
    nbformat = pytest.importorskip("nbformat", reason="nbformat is a dev extra")
    nbclient = pytest.importorskip("nbclient", reason="nbclient is a dev extra")
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    home = tmp_path_factory.mktemp("jupyter")
    spec = home / "kernels" / KERNEL
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    # IPython's profile and history, and the connection file, under the temporary folder.
    env = {"IPYTHONDIR": str(home / "ipython"), "JUPYTER_RUNTIME_DIR": str(home / "runtime")}
    kernel = {"argv": argv, "display_name": "jaxinspect test", "language": "python", "env": env}
    (spec / "kernel.json").write_text(json.dumps(kernel))
    specs = KernelSpecManager(kernel_dirs=[str(home / "kernels")])
    manager = KernelManager(kernel_name=KERNEL, kernel_spec_manager=specs)
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        notebook,
        km=manager,
        timeout=600,
        kernel_name=KERNEL,
        resources={"metadata": {"path": str(NOTEBOOK.parent)}},
    )
    # The manager is ours, so nbclient would leave the kernel and its sockets open: ask it.
    client.execute(cleanup_kc=True)
    return notebook


def _html_outputs(notebook: Any) -> list[str]:
    return [
        out["data"]["text/html"]
        for cell in notebook.cells
        if cell.cell_type == "code"
        for out in cell.outputs
        if "text/html" in out.get("data", {})
    ]


def test_the_notebook_runs_and_shows_summaries_a_diff_and_a_compile_log(executed: Any) -> None:
    errors = [
        out
        for cell in executed.cells
        for out in cell.get("outputs", [])
        if out.output_type == "error"
    ]
    assert errors == []
    html = _html_outputs(executed)
    assert len(html) == 4
    summaries, diff, log = html[:2], html[2], html[3]
    assert all('class="jxs"' in s for s in summaries)
    assert "relu → gelu" in diff and "<table" in diff
    # The batch shrinks half-way: two compilations of train_step, one a recompilation.
    assert "2 compilations, 1 recompilations" in log and "train_step" in log


def test_its_html_outputs_render_offline_and_stay_independent(
    executed: Any, tmp_path: Path
) -> None:
    playwright = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (a dev extra; CI installs it)"
    )
    if CHROMIUM is None:
        pytest.skip("no chromium on PATH (CI installs Debian's chromium package)")
    html = _html_outputs(executed)
    uids = [m.group(1) for s in html if (m := re.search(r'class="jxs" id="([\w-]+)"', s))]
    assert len(uids) == 2 and uids[0] != uids[1]
    path = write_page(html, tmp_path / "notebook.html")
    with opened(playwright, path, 1000, 1400) as page:
        for uid in uids:
            check_summary(page, uid)
        first, second = uids
        # docs/notebook-summary.png (docs/notebooks.md) is this screenshot, copied.
        ARTIFACTS.mkdir(exist_ok=True)
        page.locator(f"#{first}").screenshot(path=str(ARTIFACTS / "notebook-summary.png"))
        page.fill(f"#{first}-graph-search", "fusion")
        assert "match" in page.inner_text(f"#{first}-graph-hits")
        assert page.inner_text(f"#{second}-graph-hits") == ""
        assert page.locator(".jaxinspect-diff table").first.is_visible()
        assert page.locator(".jaxinspect-compile-log table").first.is_visible()
        page_is_untouched(page)
        assert page.problems == []
        assert page.requests == [path.as_uri()]
