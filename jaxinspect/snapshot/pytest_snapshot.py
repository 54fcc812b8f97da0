"""The ``jaxinspect_snapshot`` fixture's assertion: snapshot a function, compare, or write it.

Each call claims one folder, ``__jaxinspect__/<module>/<test>[+<name>]`` (names from
``snapshot.foldernames``), and records it in the session's record so that the end of the
session knows which stored snapshots are still used.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from jaxinspect.snapshot.foldernames import snapshot_folder_name
from jaxinspect.snapshot.pytest_record import SessionRecord

UPDATE_FLAG = "--jaxinspect-update"
_MAX_FAILURE_LINES = 120


class SnapshotAssertion:
    """Callable the fixture returns: ``jaxinspect_snapshot(fn, spec)`` asserts fn's snapshot."""

    def __init__(
        self,
        directory: Path,
        test_part: str,
        nodeid: str,
        update: bool,
        record: SessionRecord,
        claimed: dict[str, tuple[str, str, str]],
    ) -> None:
        self._directory = directory
        self._test_part = test_part
        self._nodeid = nodeid
        self._update = update
        self._record = record
        self._claimed = claimed  # folder (case-folded) -> (test node id, call name, folder)
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
        from jaxinspect.pipeline.jaxconfig import session_config
        from jaxinspect.snapshot.capture import capture_snapshot
        from jaxinspect.snapshot.store import is_snapshot, write_snapshot

        self._calls += 1
        suffix = name if name is not None else (str(self._calls) if self._calls > 1 else "")
        folder = self._claim(suffix)
        self._record.used.add(folder)
        counts = self._record.counts
        counts["failed"] += 1  # until it turns out otherwise: pytest.fail leaves by raising
        from jaxinspect.inputs.target import function_target

        loaded, parsed = function_target(function), spec_of(spec, args)
        try:
            with session_config():
                taken = capture_snapshot(loaded, parsed, backend)
        except JaxInspectError as exc:
            pytest.fail(f"jaxinspect could not snapshot {function!r}: {exc.message}", False)
        if not is_snapshot(folder):
            if not self._update:
                pytest.fail(f"no stored snapshot at {folder}; {_missing_hint(folder)}", False)
            write_snapshot(folder, taken)
            outcome = "written"
        else:
            outcome = self._compare(
                folder, taken, fail_on, lambda: _seed_cause(loaded, parsed, backend)
            )
        counts["failed"] -= 1
        counts[outcome] += 1
        return folder

    def _claim(self, suffix: str) -> Path:
        """This call's folder, failing the test if another call or test already uses it."""
        folder = self._directory / snapshot_folder_name(self._test_part, suffix)
        if suffix in self._used:
            shown = f"name={suffix!r}" if suffix else "the unnamed snapshot"
            pytest.fail(f"jaxinspect_snapshot: {shown} is taken twice in this test", False)
        self._used.add(suffix)
        mine = (self._nodeid, suffix, folder.name)
        owner = self._claimed.setdefault(str(folder).casefold(), mine)
        if owner[:2] != mine[:2]:
            why = (
                "both tests get the same folder name"
                if owner[2] == folder.name
                else f"its name differs from {owner[2]} only in letter case, which macOS and "
                "Windows do not tell apart"
            )
            pytest.fail(
                f"jaxinspect_snapshot: {self._nodeid} and {owner[0]} would share the snapshot "
                f"folder {folder}: {why}; rename one or pass name=",
                False,
            )
        return folder

    def _compare(
        self, folder: Path, taken: Any, fail_on: str | None, seed_cause: Callable[[], str | None]
    ) -> str:
        """``unchanged`` or ``written`` (with --jaxinspect-update); fails the test otherwise.

        A failure whose texts changed asks ``seed_cause`` whether the hash seed explains it.
        """
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
            pytest.fail(f"{exc.message}; run pytest {UPDATE_FLAG} to rewrite it", False)
        diff = diff_snapshots(stored, taken, "stored", "new")
        if diff.identical and not (self._update and diff.toolchain):
            return "unchanged"
        if self._update:
            write_snapshot(folder, taken)
            return "written"
        verdict = evaluate(parse_rules(fail_on), diff)
        if verdict.failed:
            cause = seed_cause() if diff.texts else None
            why = "" if cause is None else f"\n{cause}\n"
            pytest.fail(
                f"jaxinspect snapshot {folder} changed:{why}\n{_describe(diff, verdict)}", False
            )
        return "unchanged"  # within the test's fail_on rules


def _seed_cause(loaded: Any, spec: Any, backend: str | None) -> str | None:
    """Whether Python's hash seed changes the function's compiled form (probed in processes)."""
    from jaxinspect.snapshot.seedprobe import seed_dependence

    return seed_dependence(loaded.ref.module, ".".join(loaded.ref.attribute), spec, backend)


def _missing_hint(folder: Path) -> str:
    """What to run; where an older version left this snapshot, how to move it instead."""
    from jaxinspect.snapshot.hygiene import OLD_SNAPSHOT_ROOT, move_command

    module = folder.parent
    old = module.parent.parent / OLD_SNAPSHOT_ROOT / module.name
    if (old / folder.name).is_dir():
        return f"it is in the old place {old}; move it with: {move_command([old])}"
    test, plus, name = folder.name.partition("+")  # the test's part never holds a "+"
    head, bracket, rest = test.partition("[")
    if "." in head:  # an older jaxinspect stored a method's snapshot without its class
        unqualified = module / (head.rsplit(".", 1)[1] + bracket + rest + plus + name)
        if unqualified.is_dir():
            return (
                f"an older jaxinspect stored it without its class, at {unqualified}; "
                f"pytest {UPDATE_FLAG} writes it here and deletes the old folder"
            )
    return f"run pytest {UPDATE_FLAG}"


def spec_of(spec: Any, args: Sequence[Any] | Mapping[str, Any] | None = None) -> Any:
    """The ``Spec`` a fixture call names: a path, a spec document, a ``Spec`` or ``args=``."""
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

    from jaxinspect.snapshot.console import render_diff_summary
    from jaxinspect.snapshot.text import text_diff_lines

    buffer = io.StringIO()
    console = Console(file=buffer, width=100, color_system=None)
    console.print(render_diff_summary(diff, verdict))
    lines = [line for change in diff.texts for line in text_diff_lines(change)]
    if len(lines) > _MAX_FAILURE_LINES:
        more = len(lines) - _MAX_FAILURE_LINES
        lines = [*lines[:_MAX_FAILURE_LINES], f"… {more} more diff lines\n"]
    return buffer.getvalue() + "".join(lines) + f"\nAccept the change with: pytest {UPDATE_FLAG}"
