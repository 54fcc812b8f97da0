"""pytest plugin: the ``jaxinspect_snapshot`` fixture, its flags and its session summary.

Registered through the ``pytest11`` entry point, so installing jaxinspect enables it. The
module imports no jax; the fixture does, when a test calls it. Snapshots live in
``__jaxinspect__/`` next to each test file (syrupy, often installed beside us, owns
``__snapshots__/`` and deletes what it does not know there). At the end of a session one line
counts them, and snapshot folders no test uses any more fail the session, or are deleted with
``--jaxinspect-update``: judged only from a complete record (``jaxinspect.snapshot.pytest_record``),
once, in pytest-xdist's controller when it distributes the tests.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Generator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from jaxinspect.inputs.target import function_target
from jaxinspect.snapshot.foldernames import snapshot_folder_name
from jaxinspect.snapshot.hygiene import Judgement, Removal, module_folder
from jaxinspect.snapshot.pytest_record import WORKER_KEY, SessionRecord
from jaxinspect.snapshot.pytest_snapshot import (
    UPDATE_FLAG,
    SnapshotAssertion,
    spec_of,
)

__all__ = ["snapshot_folder_name"]

_WARN_UNUSED_FLAG = "--jaxinspect-warn-unused"
_PLUGIN_NAME = "jaxinspect-snapshot-session"
#: Options under which no test body runs: nothing is judged.
_NO_RUN: tuple[tuple[str, str], ...] = (
    ("collectonly", "--collect-only"),
    ("setupplan", "--setup-plan"),  # before --setup-only, which it sets too
    ("setuponly", "--setup-only"),
)
#: Options that pick tests from the last run's results (some filter while collecting, without
#: pytest_deselected): nothing is judged.
_PICKING: tuple[tuple[str, str], ...] = (
    ("lf", "--lf"),
    ("failedfirst", "--ff"),
    ("stepwise_skip", "--sw-skip"),  # before --sw, which it sets too
    ("stepwise", "--sw"),
)


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--jaxinspect-update`` and ``--jaxinspect-warn-unused``."""
    group = parser.getgroup("jaxinspect", "jaxinspect HLO snapshots")
    group.addoption(
        UPDATE_FLAG,
        action="store_true",
        default=False,
        help="Write new and changed jaxinspect snapshots, and delete unused ones.",
    )
    group.addoption(
        _WARN_UNUSED_FLAG,
        action="store_true",
        default=False,
        help="Only warn about unused jaxinspect snapshots instead of failing the session.",
    )


def pytest_configure(config: pytest.Config) -> None:
    """One ``_SnapshotSession`` per session holds its record and judges it at the end."""
    config.pluginmanager.register(_SnapshotSession(config), _PLUGIN_NAME)


class _SnapshotSession:
    """The hooks that record what ran and, at the end, judge and report unused snapshots."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.record = SessionRecord()
        self.claimed: dict[str, tuple[str, str, str]] = {}
        self.worker = hasattr(config, "workerinput")  # a pytest-xdist worker
        self.unfiltered: dict[str, tuple[Path, set[str]]] = {}  # collector -> its children
        self.before_modify: dict[str, Path] = {}
        self.lost: list[str] = []  # xdist workers that went down without their record
        self.not_judged: str | None = None
        self.judgement = Judgement((), ())
        self.removals: list[Removal] = []

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        from jaxinspect.pipeline.jaxconfig import record_baseline

        record_baseline()  # JAX's configuration before any test module ran (see pipeline/jaxconfig)

    def pytest_unconfigure(self) -> None:
        from jaxinspect.pipeline.jaxconfig import forget_import_hook

        forget_import_hook()

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_make_collect_report(
        self, collector: pytest.Collector
    ) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
        # Innermost: sees a module's tests before another plugin's wrapper drops some (--lf).
        report = yield
        if isinstance(collector, pytest.File | pytest.Class):
            children = {node.nodeid for node in report.result}
            self.unfiltered[report.nodeid] = (Path(str(collector.path)), children)
        return report

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        path, before = self.unfiltered.pop(report.nodeid, (None, set()))
        if path is not None and before - {node.nodeid for node in report.result}:
            self.record.partial.add(module_folder(path))

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> Generator[None]:
        self.before_modify = {item.nodeid: Path(str(item.path)) for item in items}
        return (yield)

    def pytest_deselected(self, items: Sequence[pytest.Item]) -> None:
        """A module with a deselected test (``-k``, ``-m``, ``--deselect``) is not judged."""
        self.record.partial.update(module_folder(Path(str(item.path))) for item in items)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Note each test's module and folder name; a module missing a test is partial."""
        picked = {_arg_file(arg) for arg in session.config.args if "::" in arg}
        for item in session.items:
            path = Path(str(item.path))
            module = module_folder(path)
            self.record.tests[item.nodeid] = (module, test_part(item))
            if path.resolve() in picked:
                self.record.partial.add(module)
        for nodeid, path in self.before_modify.items():
            if nodeid not in self.record.tests:  # dropped, told through pytest_deselected or not
                self.record.partial.add(module_folder(path))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """A test ran once its call (or a failed or skipped setup) reports; note non-passes."""
        if report.nodeid not in self.record.tests:
            return
        if report.when == "call" or (report.when == "setup" and not report.passed):
            self.record.ran.add(report.nodeid)
        if not report.passed:  # it may not have reached its call: keep its snapshots
            self.record.unsettled.add(report.nodeid)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object | None) -> None:
        """pytest-xdist's controller: take a finished worker's record, or note it lost."""
        data = getattr(node, "workeroutput", {}).get(WORKER_KEY)
        if error is not None or data is None:
            self.lost.append(f"{node.gateway.id} ({error or 'it sent no record'})")
        else:
            self.record.merge(data)

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Judge unused snapshots once, from a complete record; a worker only sends its own."""
        stopped = _stopped(session, exitstatus)
        if self.worker:
            self.record.not_judged = self.record.not_judged or stopped
            self.config.workeroutput[WORKER_KEY] = self.record.to_data()  # type: ignore[attr-defined]
            return
        self.not_judged = self._reason_not_to_judge(stopped)
        if self.not_judged is not None:
            return
        self.judge(session, exitstatus)

    def judge(self, session: pytest.Session, exitstatus: int) -> None:
        from jaxinspect.snapshot.hygiene import delete_unused, judge_unused

        record = self.record
        self.judgement = judge_unused(
            record.complete_modules(), record.collected_modules(), record.used, record.test_dirs()
        )
        if self.config.getoption(UPDATE_FLAG):
            self.removals = delete_unused(self.judgement.unused)
            self.judgement = Judgement((), self.judgement.links)
            return
        warn_only = self.config.getoption(_WARN_UNUSED_FLAG)
        if self.judgement.unused and exitstatus == 0 and not warn_only:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _reason_not_to_judge(self, stopped: str | None) -> str | None:
        for option, flag in (*_NO_RUN, *_PICKING):
            if self.config.getoption(option, None):
                return f"{flag} {'runs no test' if (option, flag) in _NO_RUN else 'picks tests'}"
        if self.lost:
            return f"pytest-xdist worker {', '.join(self.lost)} was lost with its record"
        if self.record.not_judged or stopped:
            return self.record.not_judged or stopped
        if not self.record.ran:
            return "no test ran"
        return None

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """``jaxinspect snapshots: N unchanged, M written, K failed, U unused``, and what to do."""
        from jaxinspect.snapshot.pytest_summary import summary_lines

        if self.worker:
            return
        for line, style in summary_lines(self, self.config.getoption(_WARN_UNUSED_FLAG)):
            terminalreporter.write_line(line, **style)


def _stopped(session: pytest.Session, exitstatus: int) -> str | None:
    if session.shouldfail or session.shouldstop:
        return f"the session stopped early ({session.shouldfail or session.shouldstop})"
    if exitstatus in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR):
        return "the session was interrupted"
    return None


def test_part(node: pytest.Item) -> str:
    """A test's part of its folder name: its classes and name, ``TestA.test_x[p]``."""
    classes = [n.name for n in node.listchain() if isinstance(n, pytest.Class)]
    return ".".join([*classes, node.name])


def _arg_file(arg: str) -> Path:
    return Path(arg.split("::", 1)[0]).resolve()


def _session(config: pytest.Config) -> _SnapshotSession:
    plugin = config.pluginmanager.get_plugin(_PLUGIN_NAME)
    assert isinstance(plugin, _SnapshotSession)  # registered in pytest_configure
    return plugin


@pytest.fixture
def jaxinspect_snapshot(request: pytest.FixtureRequest) -> SnapshotAssertion:
    """Assert a function's compiled form against ``__jaxinspect__/<module>/<test>``."""
    state = _session(request.config)
    return SnapshotAssertion(
        module_folder(Path(str(request.node.path))),
        test_part(request.node),
        request.node.nodeid,
        bool(request.config.getoption(UPDATE_FLAG)),
        state.record,
        state.claimed,
    )


@pytest.fixture
def jaxinspect_bench(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """Assert a function's steady-state latency against its stored baseline (see docs)."""
    directory = module_folder(Path(str(request.node.path)))
    update = bool(request.config.getoption(UPDATE_FLAG))
    part = test_part(request.node)
    counter = {"calls": 0}

    def assert_latency(
        function: Callable[..., Any],
        spec: Any = None,
        *,
        args: Sequence[Any] | Mapping[str, Any] | None = None,
        name: str | None = None,
        fail_on: str | None = None,
        backend: str | None = None,
        budget_s: float = 1.0,
    ) -> Any:
        from jaxinspect.bench.fixture import check_latency
        from jaxinspect.errors import JaxInspectError

        counter["calls"] += 1
        calls = counter["calls"]
        suffix = name if name is not None else (str(calls) if calls > 1 else "")
        path = directory / (snapshot_folder_name(part, suffix) + ".bench.json")
        try:
            outcome, verdict = check_latency(
                path,
                function_target(function),
                spec_of(spec, args),
                update=update,
                fail_on=fail_on,
                backend=backend,
                budget_s=budget_s,
            )
        except FileNotFoundError:
            pytest.fail(f"no stored latency baseline at {path}; run pytest {UPDATE_FLAG}", False)
        except JaxInspectError as exc:
            pytest.fail(f"jaxinspect_bench: {exc.message}", False)
        if verdict is not None and verdict.failed:
            pytest.fail(f"latency regression against {path}:\n{_describe_gate(verdict)}", False)
        return verdict

    return assert_latency


def _describe_gate(verdict: Any) -> str:
    from rich.console import Console

    from jaxinspect.bench.gateconsole import render_gate

    buffer = io.StringIO()
    Console(file=buffer, width=100, color_system=None).print(render_gate(verdict))
    return buffer.getvalue() + f"Accept it as the new baseline with: pytest {UPDATE_FLAG}"
