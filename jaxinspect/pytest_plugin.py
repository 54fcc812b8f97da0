"""pytest plugin: the ``jaxinspect_snapshot`` fixture and the ``--jaxinspect-update`` flag.

Registered through the ``pytest11`` entry point, so installing jaxinspect enables it. The
module imports no jax; the fixture does, when a test calls it.
"""

from __future__ import annotations

import hashlib
import inspect
import io
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

#: Folder (next to the test file) that holds the snapshots, one subfolder per test module.
SNAPSHOT_ROOT = "__snapshots__"
_UPDATE_FLAG = "--jaxinspect-update"
_MAX_FAILURE_LINES = 120
#: Characters a snapshot folder name keeps as they are; any other is escaped as %XX (UTF-8).
_KEPT = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-[]")
#: Joins a test's part and a call's ``name`` (never kept, so the split is unambiguous).
_NAME_SEP = "+"
#: Longer names end with ``~`` and a hash of the whole id instead (``~`` is never kept either).
_MAX_FOLDER_NAME = 200
_FOLDERS_KEY = pytest.StashKey[dict[str, tuple[str, str]]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--jaxinspect-update``."""
    group = parser.getgroup("jaxinspect", "jaxinspect HLO snapshots")
    group.addoption(
        _UPDATE_FLAG,
        action="store_true",
        default=False,
        help="Write new and changed jaxinspect snapshots instead of failing on them.",
    )


class SnapshotAssertion:
    """Callable the fixture returns: ``jaxinspect_snapshot(fn, spec)`` asserts fn's snapshot."""

    def __init__(
        self,
        directory: Path,
        test_name: str,
        nodeid: str,
        update: bool,
        claimed: dict[str, tuple[str, str]],
    ) -> None:
        self._directory = directory
        self._test_name = test_name
        self._nodeid = nodeid
        self._update = update
        self._claimed = claimed  # folder (case-folded) -> (test node id, call name), session-wide
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
        try:
            taken = capture_snapshot(_loaded(function), _spec(spec, args), backend)
        except JaxInspectError as exc:
            pytest.fail(f"jaxinspect could not snapshot {function!r}: {exc.message}", False)
        if not is_snapshot(folder):
            if not self._update:
                pytest.fail(f"no stored snapshot at {folder}; run pytest {_UPDATE_FLAG}", False)
            write_snapshot(folder, taken)
            return folder
        self._compare(folder, taken, fail_on)
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

    def _compare(self, folder: Path, taken: Any, fail_on: str | None) -> None:
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
                return
            pytest.fail(f"{exc.message}; run pytest {_UPDATE_FLAG} to rewrite it", False)
        diff = diff_snapshots(stored, taken, "stored", "new")
        if diff.identical and not (self._update and diff.toolchain):
            return
        if self._update:
            write_snapshot(folder, taken)
            return
        verdict = evaluate(parse_rules(fail_on), diff)
        if verdict.failed:
            pytest.fail(f"jaxinspect snapshot {folder} changed:\n{_describe(diff, verdict)}", False)


@pytest.fixture
def jaxinspect_snapshot(request: pytest.FixtureRequest) -> SnapshotAssertion:
    """Assert a function's compiled form against ``__snapshots__/<module>/<test>``."""
    test_file = Path(str(request.node.path))
    directory = test_file.parent / SNAPSHOT_ROOT / snapshot_folder_name(test_file.stem, "")
    update = bool(request.config.getoption(_UPDATE_FLAG))
    claimed = request.config.stash.setdefault(_FOLDERS_KEY, {})
    return SnapshotAssertion(directory, request.node.name, request.node.nodeid, update, claimed)


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
