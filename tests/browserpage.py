"""Open a report in headless Chromium (Debian's `chromium`, driven by playwright) with every
request other than the file itself (and the blob:/data: URLs the page makes) refused and
recorded, and console errors collected: for the browser tests of the HTML report."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
LOCAL = ("file:", "data:", "blob:")


@contextmanager
def opened(playwright: Any, report: Path, width: int, height: int) -> Iterator[Any]:
    """A page showing ``report``; ``page.problems`` and ``page.requests`` record the run."""
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": width, "height": height})
        page.problems = []  # console errors and page errors
        page.requests = []  # every URL the page asked for

        def route(r: Any) -> None:
            url = r.request.url
            page.requests.append(url)
            if url.startswith(LOCAL):
                r.continue_()
            else:
                r.abort()

        page.on("console", lambda m: page.problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: page.problems.append(str(e)))
        page.route("**/*", route)
        page.goto(report.as_uri())
        try:
            yield page
        finally:
            browser.close()
