"""What one pytest process saw of the snapshot fixture, mergeable across pytest-xdist workers.

A session judges unused snapshots only from a complete record: every test of a module ran (a
``call``, or a setup that failed or skipped), none was left out by a filter, and no process
that ran tests was lost. Under pytest-xdist each worker keeps its own record and sends it to
the controller as plain data (``to_data``); the controller merges them (``merge``) and judges
once, so no worker judges another's tests.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The key of a worker's record in xdist's ``workeroutput``.
WORKER_KEY = "jaxinspect"


@dataclass
class SessionRecord:
    """The fixture's use and the tests' outcomes in one process (or merged)."""

    tests: dict[str, tuple[Path, str]] = field(default_factory=dict)  # nodeid -> module, part
    partial: set[Path] = field(default_factory=set)  # modules a filter left a test out of
    ran: set[str] = field(default_factory=set)  # node ids whose outcome is known
    unsettled: set[str] = field(default_factory=set)  # node ids that did not pass
    used: set[Path] = field(default_factory=set)  # snapshot folders a call claimed
    counts: dict[str, int] = field(
        default_factory=lambda: {"unchanged": 0, "written": 0, "failed": 0}
    )
    #: Why nothing may be judged this session (e.g. ``--collect-only``), or ``None``.
    not_judged: str | None = None

    def complete_modules(self) -> dict[Path, set[str]]:
        """Modules every test of which ran, each with the parts of its tests that did not pass."""
        modules: dict[Path, set[str]] = {}
        left_out: set[Path] = set(self.partial)
        for nodeid, (module, part) in self.tests.items():
            unsettled = modules.setdefault(module, set())
            if nodeid not in self.ran:
                left_out.add(module)
            elif nodeid in self.unsettled:
                unsettled.add(part)
        return {m: parts for m, parts in modules.items() if m not in left_out}

    def collected_modules(self) -> set[Path]:
        return {module for module, _ in self.tests.values()}

    def test_dirs(self) -> set[Path]:
        return {module.parent.parent for module in self.collected_modules()}

    def to_data(self) -> dict[str, Any]:
        """Plain lists and strings, which execnet carries from a worker to the controller."""
        return {
            "tests": [[n, str(m), p] for n, (m, p) in self.tests.items()],
            "partial": sorted(map(str, self.partial)),
            "ran": sorted(self.ran),
            "unsettled": sorted(self.unsettled),
            "used": sorted(map(str, self.used)),
            "counts": dict(self.counts),
            "not_judged": self.not_judged,
        }

    def merge(self, data: dict[str, Any]) -> None:
        """Add a worker's record (from ``to_data``)."""
        self.tests.update({n: (Path(m), p) for n, m, p in data["tests"]})
        self.partial |= set(map(Path, data["partial"]))
        self.ran |= set(data["ran"])
        self.unsettled |= set(data["unsettled"])
        self.used |= set(map(Path, data["used"]))
        for key, value in data["counts"].items():
            self.counts[key] = self.counts.get(key, 0) + int(value)
        self.not_judged = self.not_judged or data["not_judged"]


def first_reason(reasons: Iterable[str | None]) -> str | None:
    """The first of several reasons not to judge, or ``None``."""
    return next((r for r in reasons if r), None)
