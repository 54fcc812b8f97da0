"""pytest plugin: the ``jaxinspect_snapshot`` fixture, its flags and its session summary.

Registered through the ``pytest11`` entry point, so installing jaxinspect enables it. The
module imports no jax; the fixture does, when a test calls it. Snapshots live in
``__jaxinspect__/`` next to each test file (syrupy, often installed beside us, owns
``__snapshots__/`` and deletes what it does not know there). At the end of a session one line
counts them, and snapshot folders no test uses any more fail the session (see
``jaxinspect.snapshot.hygiene`` for when that is judged).
"""

from __future__ import annotations

import hashlib
import inspect
import io
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from jaxinspect.snapshot.hygiene import SNAPSHOT_ROOT, ModuleRun

_UPDATE_FLAG = "--jaxinspect-update"
_WARN_UNUSED_FLAG = "--jaxinspect-warn-unused"
_MAX_FAILURE_LINES = 120
#: Characters a snapshot folder name keeps as they are; any other is escaped as %XX (UTF-8).
_KEPT = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-[]")
#: Joins a test's part and a call's ``name`` (never kept, so the split is unambiguous).
_NAME_SEP = "+"
#: Longer names end with ``~`` and a hash of the whole id instead (``~`` is never kept either).
_MAX_FOLDER_NAME = 200


@dataclass
class _Session:
    """What the fixture did in this session, and what each test module ran."""

    claimed: dict[str, tuple[str, str]] = field(default_factory=dict)  # casefolded folder -> owner
    used: set[Path] = field(default_factory=set)
    counts: dict[str, int] = field(
        default_factory=lambda: {"unchanged": 0, "written": 0, "failed": 0}
    )
    modules: dict[Path, ModuleRun] = field(default_factory=dict)  # by module snapshot folder
    tests: dict[str, tuple[Path, str]] = field(default_factory=dict)  # nodeid -> (module, name)
    test_dirs: set[Path] = field(default_factory=set)
    unused: list[Path] = field(default_factory=list)
    deleted: list[Path] = field(default_factory=list)


_SESSION_KEY = pytest.StashKey[_Session]()


def _session(config: pytest.Config) -> _Session:
    return config.stash.setdefault(_SESSION_KEY, _Session())


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--jaxinspect-update`` and ``--jaxinspect-warn-unused``."""
    group = parser.getgroup("jaxinspect", "jaxinspect HLO snapshots")
    group.addoption(
        _UPDATE_FLAG,
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


def pytest_deselected(items: Sequence[pytest.Item]) -> None:
    """A module with a deselected test (``-k``, ``-m``, ``--lf``) is not judged for unused."""
    for item in items:
        state = _session(item.config)
        folder = _module_folder(Path(str(item.path)))
        state.modules.setdefault(folder, ModuleRun(folder)).complete = False


def pytest_collection_finish(session: pytest.Session) -> None:
    """Note each collected test's module; one named by node id is not complete."""
    state = _session(session.config)
    picked = {_arg_file(arg) for arg in session.config.args if "::" in arg}
    for item in session.items:
        path = Path(str(item.path))
        folder = _module_folder(path)
        module = state.modules.setdefault(folder, ModuleRun(folder))
        if path.resolve() in picked:
            module.complete = False
        state.tests[item.nodeid] = (folder, _escape(item.name))
        state.test_dirs.add(path.parent)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """A test that failed or was skipped may not have claimed its snapshots: protect them."""
    state = _REPORT_STATE.get("state")
    if report.passed or state is None or report.nodeid not in state.tests:
        return
    folder, name = state.tests[report.nodeid]
    state.modules.setdefault(folder, ModuleRun(folder)).unsettled.add(name)


#: ``TestReport`` carries no config; the session's state, set when the session starts.
_REPORT_STATE: dict[str, _Session] = {}


def pytest_sessionstart(session: pytest.Session) -> None:
    """Make this session's state reachable from report hooks."""
    _REPORT_STATE["state"] = _session(session.config)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Find unused snapshots; delete them with --jaxinspect-update, else fail (or warn)."""
    from jaxinspect.snapshot.hygiene import remove_folder, unused_folders

    config = session.config
    state = _session(config)
    _REPORT_STATE.pop("state", None)
    if session.shouldfail or session.shouldstop:
        return  # stopped early (-x, --maxfail, Ctrl-C): what ran is not the whole module
    state.unused = unused_folders(state.modules.values(), state.used, state.test_dirs)
    if not state.unused:
        return
    if config.getoption(_UPDATE_FLAG):
        for folder in state.unused:
            remove_folder(folder, folder.parent.parent)
            state.deleted.append(folder)
        state.unused = []
    elif not config.getoption(_WARN_UNUSED_FLAG) and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """``jaxinspect snapshots: N unchanged, M written, K failed, U unused``, and what to do."""
    from jaxinspect.snapshot.hygiene import move_command, old_location_folders

    state = _session(config)
    old = old_location_folders(state.test_dirs)
    if old:
        terminalreporter.write_line(
            f"jaxinspect: {len(old)} snapshot folder(s) are in the old place, "
            f"{old[0].parent}, which syrupy also uses (its --snapshot-update deletes them). "
            f"Move them with:\n  {move_command(old)}",
            yellow=True,
        )
    counts = state.counts
    if not (sum(counts.values()) or state.unused or state.deleted):
        return
    parts = [f"{counts['unchanged']} unchanged", f"{counts['written']} written"]
    parts += [f"{counts['failed']} failed", f"{len(state.unused)} unused"]
    parts += [f"{len(state.deleted)} deleted"] if state.deleted else []
    terminalreporter.write_line("jaxinspect snapshots: " + ", ".join(parts))
    for folder in state.unused:
        terminalreporter.write_line(f"  unused: {folder}", red=True)
    for folder in state.deleted:
        terminalreporter.write_line(f"  deleted: {folder}")
    if state.unused:
        action = "listed" if config.getoption(_WARN_UNUSED_FLAG) else "failing the session"
        terminalreporter.write_line(
            f"  ({action}; delete them with pytest {_UPDATE_FLAG}, or only warn with "
            f"{_WARN_UNUSED_FLAG})",
            red=not config.getoption(_WARN_UNUSED_FLAG),
        )


def _module_folder(test_file: Path) -> Path:
    return test_file.parent / SNAPSHOT_ROOT / snapshot_folder_name(test_file.stem, "")


def _arg_file(arg: str) -> Path:
    return Path(arg.split("::", 1)[0]).resolve()


class SnapshotAssertion:
    """Callable the fixture returns: ``jaxinspect_snapshot(fn, spec)`` asserts fn's snapshot."""

    def __init__(
        self,
        directory: Path,
        test_name: str,
        nodeid: str,
        update: bool,
        state: _Session,
    ) -> None:
        self._directory = directory
        self._test_name = test_name
        self._nodeid = nodeid
        self._update = update
        self._state = state
        self._claimed = state.claimed  # folder (case-folded) -> (test node id, call name)
        self._calls = 0
        self._used: set[str] = set()

    def __call__(
        self,
        function: Callable[..., Any],
        spec: str | Path | Mapping[str, Any] | Any = None,
        *,
        args: Sequence[Any] | Mapping[str, Any] | None = None,
        name: str | None = None,
        backend: str | None = None,
        fail_on: str | None = None,
    ) -> Path:
        """Snapshot ``function`` for ``spec`` and compare it with the stored one.

        Args:
            function: The function to trace, lower and compile (once).
            spec: A spec file path, a spec document (``{"args": {...}}``) or a ``Spec``.
            args: Instead of ``spec``: the arguments themselves, a tuple (positional) or a
                mapping by parameter name; any pytrees of arrays or ``ShapeDtypeStruct``s
                (a TrainState, a model). Array leaves are traced, other leaves are static.
            name: Distinguishes several snapshots in one test (default: a call counter).
            backend: Platform to compile for; JAX's default when ``None``.
            fail_on: ``--fail-on`` rules; by default any difference fails.

        Returns:
            The snapshot folder.
        """
        from jaxinspect.errors import JaxInspectError
        from jaxinspect.snapshot.capture import capture_snapshot
        from jaxinspect.snapshot.store import is_snapshot, write_snapshot

        self._calls += 1
        suffix = name if name is not None else (str(self._calls) if self._calls > 1 else "")
        folder = self._claim(suffix)
        self._state.used.add(folder)
        counts = self._state.counts
        counts["failed"] += 1  # until it turns out otherwise: pytest.fail leaves by raising
        try:
            taken = capture_snapshot(_loaded(function), _spec(spec, args), backend)
        except JaxInspectError as exc:
            pytest.fail(f"jaxinspect could not snapshot {function!r}: {exc.message}", False)
        if not is_snapshot(folder):
            if not self._update:
                pytest.fail(f"no stored snapshot at {folder}; {_missing_hint(folder)}", False)
            write_snapshot(folder, taken)
            outcome = "written"
        else:
            outcome = self._compare(folder, taken, fail_on)
        counts["failed"] -= 1
        counts[outcome] += 1
        return folder

    def _claim(self, suffix: str) -> Path:
        """This call's folder, failing the test if another call or test already uses it."""
        folder = self._directory / snapshot_folder_name(self._test_name, suffix)
        if suffix in self._used:
            shown = f"name={suffix!r}" if suffix else "the unnamed snapshot"
            pytest.fail(f"jaxinspect_snapshot: {shown} is taken twice in this test", False)
        self._used.add(suffix)
        owner = self._claimed.setdefault(str(folder).casefold(), (self._nodeid, suffix))
        if owner != (self._nodeid, suffix):
            pytest.fail(
                f"jaxinspect_snapshot: {self._nodeid} and {owner[0]} would share the snapshot "
                f"folder {folder} (their names differ only in letter case); rename one",
                False,
            )
        return folder

    def _compare(self, folder: Path, taken: Any, fail_on: str | None) -> str:
        """``unchanged`` or ``written`` (with --jaxinspect-update); fails the test otherwise."""
        from jaxinspect.snapshot.compare import diff_snapshots
        from jaxinspect.snapshot.store import read_snapshot, write_snapshot
        from jaxinspect.snapshot.thresholds import evaluate, parse_rules
        from jaxinspect.snapshot.validate import CorruptSnapshotError

        try:
            stored = read_snapshot(folder)
        except CorruptSnapshotError as exc:
            # As `check --update`: a damaged stored snapshot is replaced, never compared.
            if self._update:
                write_snapshot(folder, taken)
                return "written"
            pytest.fail(f"{exc.message}; run pytest {_UPDATE_FLAG} to rewrite it", False)
        diff = diff_snapshots(stored, taken, "stored", "new")
        if diff.identical and not (self._update and diff.toolchain):
            return "unchanged"
        if self._update:
            write_snapshot(folder, taken)
            return "written"
        verdict = evaluate(parse_rules(fail_on), diff)
        if verdict.failed:
            pytest.fail(f"jaxinspect snapshot {folder} changed:\n{_describe(diff, verdict)}", False)
        return "unchanged"  # within the test's fail_on rules


@pytest.fixture
def jaxinspect_snapshot(request: pytest.FixtureRequest) -> SnapshotAssertion:
    """Assert a function's compiled form against ``__jaxinspect__/<module>/<test>``."""
    directory = _module_folder(Path(str(request.node.path)))
    update = bool(request.config.getoption(_UPDATE_FLAG))
    state = _session(request.config)
    return SnapshotAssertion(directory, request.node.name, request.node.nodeid, update, state)


@pytest.fixture
def jaxinspect_bench(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """Assert a function's steady-state latency against its stored baseline (see docs)."""
    directory = _module_folder(Path(str(request.node.path)))
    update = bool(request.config.getoption(_UPDATE_FLAG))
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
        path = directory / (snapshot_folder_name(request.node.name, suffix) + ".bench.json")
        try:
            outcome, verdict = check_latency(
                path,
                _loaded(function),
                _spec(spec, args),
                update=update,
                fail_on=fail_on,
                backend=backend,
                budget_s=budget_s,
            )
        except FileNotFoundError:
            pytest.fail(f"no stored latency baseline at {path}; run pytest {_UPDATE_FLAG}", False)
        except JaxInspectError as exc:
            pytest.fail(f"jaxinspect_bench: {exc.message}", False)
        if verdict is not None and verdict.failed:
            pytest.fail(f"latency regression against {path}:\n{_describe_gate(verdict)}", False)
        return verdict

    return assert_latency


def _describe_gate(verdict: Any) -> str:
    from rich.console import Console

    from jaxinspect.renderers.bench.gate import render_gate

    buffer = io.StringIO()
    Console(file=buffer, width=100, color_system=None).print(render_gate(verdict))
    return buffer.getvalue() + f"Accept it as the new baseline with: pytest {_UPDATE_FLAG}"


def _missing_hint(folder: Path) -> str:
    """What to run; where an older version left this snapshot, how to move it instead."""
    from jaxinspect.snapshot.hygiene import OLD_SNAPSHOT_ROOT, move_command

    module = folder.parent
    old = module.parent.parent / OLD_SNAPSHOT_ROOT / module.name
    if (old / folder.name).is_dir():
        return f"it is in the old place {old}; move it with: {move_command([old])}"
    return f"run pytest {_UPDATE_FLAG}"


def snapshot_folder_name(test_name: str, name: str) -> str:
    """The folder name of a test's snapshot, one-to-one: distinct ids get distinct folders.

    Letters, digits and ``_.-[]`` are kept, any other character is escaped as ``%XX``, and a
    leading dot too, so ``a/b`` (``a%2Fb``) and ``a_b`` never meet and ``../x`` stays inside.
    A call's ``name`` follows after ``+``. A name longer than 200 characters is cut and ends
    with ``~`` and a hash of the whole id.
    """
    folder = _escape(test_name) + (f"{_NAME_SEP}{_escape(name)}" if name else "")
    if len(folder) <= _MAX_FOLDER_NAME:
        return folder
    digest = hashlib.sha256(f"{test_name}\0{name}".encode()).hexdigest()[:16]
    return f"{folder[: _MAX_FOLDER_NAME - 17]}~{digest}"


def _escape(text: str) -> str:
    out = "".join(
        c if c in _KEPT else "".join(f"%{b:02X}" for b in c.encode("utf-8", "surrogatepass"))
        for c in text
    )
    return "%2E" + out[1:] if out.startswith(".") else out


def _loaded(function: Callable[..., Any]) -> Any:
    from jaxinspect.inputs.target import LoadedTarget, TargetRef

    module = getattr(function, "__module__", None) or "__main__"
    qualname = str(getattr(function, "__qualname__", None) or getattr(function, "__name__", "fn"))
    ref = TargetRef(
        spec=f"{module}:{qualname}",
        module=module,
        attribute=tuple(qualname.split(".")),
        is_file=False,
    )
    try:
        source = inspect.getsourcefile(function)
    except TypeError:
        source = None
    return LoadedTarget(ref=ref, function=function, source_file=source)


def _spec(spec: Any, args: Sequence[Any] | Mapping[str, Any] | None = None) -> Any:
    from jaxinspect.inputs.spec import Spec, load_spec, parse_spec_document

    if args is not None:
        if spec is not None:
            raise TypeError("give jaxinspect_snapshot either a spec or args=, not both")
        return _spec_of_values(args)
    if spec is None:
        raise TypeError("jaxinspect_snapshot needs a spec or args=(...)")
    if isinstance(spec, Spec):
        return spec
    if isinstance(spec, str | Path):
        return load_spec(spec)
    if isinstance(spec, Mapping):
        return parse_spec_document(dict(spec), source="(spec given to jaxinspect_snapshot)")
    raise TypeError(f"spec must be a path, a spec document or a Spec, not {type(spec).__name__}")


def _spec_of_values(args: Sequence[Any] | Mapping[str, Any]) -> Any:
    """A spec whose arguments are given Python values (evaluated like ``from:`` results)."""
    from jaxinspect.inputs.fromnode import ValueNode
    from jaxinspect.inputs.spec import Spec

    source = "(args given to jaxinspect_snapshot)"
    if isinstance(args, Mapping):
        named = tuple((str(k), ValueNode(v, f"{source}[{k!r}]")) for k, v in args.items())
        return Spec(source=source, args=named)
    if isinstance(args, str | bytes) or not isinstance(args, Sequence):
        raise TypeError(f"args= must be a tuple or a mapping, not {type(args).__name__}")
    return Spec(
        source=source,
        args=tuple((None, ValueNode(v, f"{source}[{i}]")) for i, v in enumerate(args)),
    )


def _describe(diff: Any, verdict: Any) -> str:
    from rich.console import Console

    from jaxinspect.renderers.snapshot.console import render_diff_summary
    from jaxinspect.renderers.snapshot.text import text_diff_lines

    buffer = io.StringIO()
    console = Console(file=buffer, width=100, color_system=None)
    console.print(render_diff_summary(diff, verdict))
    lines = [line for change in diff.texts for line in text_diff_lines(change)]
    if len(lines) > _MAX_FAILURE_LINES:
        more = len(lines) - _MAX_FAILURE_LINES
        lines = [*lines[:_MAX_FAILURE_LINES], f"… {more} more diff lines\n"]
    return buffer.getvalue() + "".join(lines) + f"\nAccept the change with: pytest {_UPDATE_FLAG}"
