"""A property-based fuzz of the whole command line, shared by the test and the benchmark.

Each example writes a random target file (functions that return, print at the Python and the
file-descriptor level, ``sys.exit``, raise ``KeyboardInterrupt`` or other ``BaseException``s,
fail to trace...), a random spec (well-formed, malformed, aliased, nested, tagged) and maybe a
manifest, then runs a random argv in this process through ``jaxinspect.cli.entry.run`` — what the
console script runs — with stdout and stderr captured at the file-descriptor level.

The invariants (``violations``): the exit code is 0, 1, 2 or 3; no traceback on stderr; no hang
(``HANG_S``); no terminal escape on stdout; with
``--format json``, whatever is on stdout parses; nothing the target printed is on stdout.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

#: Printed by targets to stdout; must never reach jaxinspect's stdout.
MARKER = "FUZZ-PRINTED"
#: An example running longer than this is a hang (every example's program is tiny).
HANG_S = 60.0

_PRELUDES = {
    "plain": "",
    "prints": f"print('{MARKER} import')\nos.write(1, b'{MARKER} fd import\\n')",
    "exits": "sys.exit(0)",
    "exits_text": "sys.exit('bye')",
    "raises": "raise RuntimeError('at import')",
    "interrupts": "raise KeyboardInterrupt",
    "syntax": "def broken(:",
    "replaces_stdout": "sys.stdout = io.StringIO()",
    # A thread that prints while jaxinspect works (issue #22): never on stdout.
    "thread": "import threading, time\n"
    "def _noise():\n"
    "    for _ in range(100):\n"
    f"        print('{MARKER} thread', flush=True)\n"
    f"        os.write(1, b'{MARKER} thread fd\\n')\n"
    "        time.sleep(0.002)\n"
    "threading.Thread(target=_noise, daemon=True).start()",
}
_BODIES = {
    "double": "return x * 2",
    "prints": f"print('{MARKER}')\n    os.write(1, b'{MARKER} fd\\n')\n    return x + 1",
    "debug_print": "jax.debug.print('debug {}', x)\n    return x",
    "exit0": "sys.exit(0)",
    "exit5": "sys.exit(5)",
    "exit_text": "sys.exit('bye')",
    "interrupt": "raise KeyboardInterrupt",
    "base": "raise Odd('odd')",
    "value_error": "raise ValueError('no')",
    "branch": "return x if x.sum() > 0 else -x",
    "text": "return 'text'",
    "none": "return None",
    "generator_exit": "raise GeneratorExit",
}
_SIGNATURES = ["x", "x, y", "x, n=2", "*args", "x, **kwargs", ""]
_DTYPES = ["f32", "f16", "bf16", "i32", "i64", "u8", "bool", "c64", "key", "f64", "f33", "x", ""]
_DIMS = st.one_of(
    st.integers(min_value=-2, max_value=4),
    st.sampled_from([2**31, 2**63 - 1, 2**63, 10**30]),
    st.sampled_from(["1.5", "inf", "nan", "a", "", "1e3", "-0"]),
)
_TRANSFORMS = ["grad", "vmap", "jvp", "vjp", "hessian", "checkpoint", "vmap(in_axes=(None, 0))"]
_TRANSFORMS += ["vmap(", "grad(argnums=9)", "nope", "jacfwd", "value_and_grad"]
_FAIL_ON = ["any", "text", "flops>+5%", ",,,", "", "flops>", "new-op:*", "peak>1", "new-op:"]
_RAW_YAML = [
    "args: [f32[2], f32[3]]",
    "args: !!python/object/apply:os.system ['true']",
    "a: &a [*a]\nargs: [*a]",
    "args:\n  x: f32[2]\n  x: f32[3]",
    "args: {x: " + "[" * 300 + "'f32[1]'" + "]" * 300 + "}",
    "args: *undefined",
    "args:\n\t- f32[1]",
    "cases: {}",
    "cases:\n  a: {args: {x: 'f32[2]'}}\n  a: {args: {x: 'f32[3]'}}",
    "args: {x: 2001-02-30}",
    "\x00",
    "args: {x: 'f32[" + "9" * 5000 + "]'}",
]


@dataclass(frozen=True)
class Example:
    """One drawn invocation: files to write, then the argv (with ``{dir}`` for the folder)."""

    target_file: str
    spec_text: str | None
    manifest_text: str | None
    argv: tuple[str, ...]
    baseline_text: str | None = None

    @property
    def wants_json(self) -> bool:
        """Whether the argv asks for ``--format json``."""
        pairs = zip(self.argv, self.argv[1:], strict=False)
        return any(a in ("--format", "-f") and b == "json" for a, b in pairs)


@dataclass(frozen=True)
class Outcome:
    """What one run gave."""

    code: int
    stdout: str
    stderr: str
    seconds: float = 0.0


def _leaf(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from(["short", "short", "short", "long", "scalar", "odd"]))
    if kind == "short":
        dims = draw(st.lists(_DIMS, max_size=3))
        return f"{draw(st.sampled_from(_DTYPES))}[{','.join(str(d) for d in dims)}]"
    if kind == "long":
        return {
            "shape": draw(st.lists(_DIMS, max_size=3)),
            "dtype": draw(st.sampled_from(["float32", "int32", "f32", 3, None])),
            **draw(st.sampled_from([{}, {"weak_type": True}, {"weak_type": "yes"}])),
        }
    if kind == "scalar":
        return draw(st.sampled_from([1, 2.5, True, None]))
    return draw(st.sampled_from([[], {}, ["f32[1]", "i32[2]"], {"a": "f32[1]"}, "f32", 7j]))


@st.composite
def _spec_text(draw: st.DrawFn) -> str:
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from(_RAW_YAML))
    if draw(st.integers(0, 9)) == 0:
        return draw(st.text(max_size=40))
    names = draw(st.lists(st.sampled_from(["x", "y", "n", "args", "1x"]), max_size=3, unique=True))
    args: Any = {name: _leaf(draw) for name in names}
    if draw(st.booleans()) and args:
        args = list(args.values())
    spec: dict[str, Any] = {"args": args}
    if draw(st.integers(0, 4)) == 0:
        spec["static"] = {"n": draw(st.sampled_from([2, [1, 2], {"a": 1}, "s"]))}
    if draw(st.integers(0, 6)) == 0:
        spec["donate"] = draw(st.sampled_from([["x"], "x", ["nope"], 3]))
    if draw(st.integers(0, 6)) == 0:
        spec[draw(st.sampled_from(["mesh", "arg", "shardings"]))] = 1
    if draw(st.integers(0, 4)) == 0:
        spec = {"cases": {"small": spec, "other": {"args": {"x": "f32[2]"}}}}
    try:
        return yaml.safe_dump(spec, sort_keys=False)
    except yaml.YAMLError:
        return "args: {}"


@st.composite
def _target_file(draw: st.DrawFn) -> str:
    prelude = _PRELUDES[draw(st.sampled_from(sorted(_PRELUDES)))]
    if draw(st.integers(0, 2)):  # most files import cleanly
        prelude = ""
    functions = []
    for name, body in _BODIES.items():
        signature = draw(st.sampled_from(_SIGNATURES[:3])) if name == "double" else "x"
        functions.append(f"def {name}({signature}):\n    {body}\n")
    functions.append("VALUE = 3\n")
    head = (
        "import io\nimport os\nimport sys\n\nimport jax\n\n\nclass Odd(BaseException):\n    pass\n"
    )
    return head + prelude + "\n\n" + "\n\n".join(functions)


@st.composite
def _target(draw: st.DrawFn) -> str:
    choice = draw(st.integers(0, 9))
    if choice >= 3:
        return "{dir}/target.py:" + draw(st.sampled_from([*_BODIES, "VALUE", "nope", "Odd"]))
    return draw(
        st.sampled_from(
            [
                "{dir}/missing.py:f",
                "{dir}:f",
                "{dir}/target.py",
                "{dir}/target.py:double.real",
                ".relative:f",
                "os:getcwd",
                "json:dumps",
                "no_such_module_x:f",
                "a..b:f",
                ":f",
                "{dir}/target.py:1bad",
            ]
        )
    )


def _arg_options(draw: st.DrawFn) -> list[str]:
    out: list[str] = []
    for _ in range(draw(st.integers(0, 2))):
        name = draw(st.sampled_from(["x", "y", "n", "x", "1x", ""]))
        leaf = draw(st.sampled_from(["f32[3]", "i32[2,2]", "f32[]", "f33[1]", "f32[-1]", "junk"]))
        out += ["--arg", f"{name}={leaf}"]
    return out


@st.composite
def _sound_spec(draw: st.DrawFn, cases: bool) -> str:
    """A spec that binds ``x`` of every target function (their behaviour is the test)."""
    dims = draw(st.lists(st.integers(1, 4), max_size=2))
    leaf = f"{draw(st.sampled_from(['f32', 'i32', 'f16']))}[{','.join(map(str, dims))}]"
    if not cases or draw(st.booleans()):
        return f"args:\n  x: '{leaf}'\n"
    return f"cases:\n  small: {{args: {{x: '{leaf}'}}}}\n  other: {{args: {{x: 'f32[2]'}}}}\n"


@st.composite
def examples(draw: st.DrawFn) -> Example:
    """One random invocation of a random command: mostly sound, with sound odds of mistakes."""
    command = draw(
        st.sampled_from(
            ["stages", "stages", "jaxpr", "stablehlo", "hlo", "cost", "recompile", "check"]
            + ["snapshot", "diff", "--version", "stages", "cost", "check"]
            + ["memory", "memory", "passes", "passes", "report", "bench"]
        )
    )
    sound = draw(st.integers(0, 9)) < 7  # a valid target and spec: the user's code runs
    if sound:
        good = draw(st.booleans())  # half the time a function that works (and prints)
        names = ["double", "prints", "debug_print"] if good else sorted(_BODIES)
        target = "{dir}/target.py:" + draw(st.sampled_from(names))
        multi = command in ("stages", "recompile")
        spec = draw(_sound_spec(multi)) if draw(st.booleans()) or command == "recompile" else None
    else:
        target = draw(_target())
        spec = draw(_spec_text()) if draw(st.booleans()) else None
    manifest = None
    argv: list[str] = [command]
    if spec is not None:
        shapes = ["--shapes", "{dir}/spec.yaml"]
    else:
        shapes = ["--arg", "x=f32[3]"] if sound else _arg_options(draw)
    fmts = ["json", "json", "table"] if sound else ["json", "table", "markdown", "xml"]
    fmt = draw(st.sampled_from(fmts))

    def pick(good: list[list[str]], bad: list[list[str]]) -> list[str]:
        return draw(st.sampled_from(good if sound else good + bad))

    if command in _RUNS_TARGET:
        argv += [target, *shapes]
    if command == "stages":
        argv += ["-f", fmt]
        argv += pick([["--no-execute"], ["--runs", "1"], ["--runs", "2"]], [["--runs", "0"]])
        argv += pick([[], ["--stage", "jaxpr,cost"], ["--full"]], [["--stage", ",,"]])
        argv += pick([[], ["--seed", "1"], ["--seed", str(2**70)]], [["--seed", "-1"]])
        argv += pick([[]], [["--max-input-bytes", "0"], ["--max-input-bytes", "-5"]])
    if command in ("cost", "recompile", "memory", "passes"):
        argv += ["-f", fmt]
    if command == "memory" and draw(st.booleans()):
        argv += draw(st.sampled_from([["--device", "h100"], ["--top", "0"], ["--device", "nope"]]))
    if command == "passes" and draw(st.integers(0, 3)) == 0:
        argv += ["--diff", draw(st.sampled_from(["1", "algsimp", "999", "\x1b[2J", ""]))]
    if command == "report":
        argv += ["-o", draw(st.sampled_from(["{dir}/r.html", "{dir}", "{dir}/no/such/r.html"]))]
    if command == "bench":
        argv += ["--baseline", "{dir}/baseline.json", "--cold-runs", "1", "--runs", "1"]
        argv += ["--warmup", "0", "-f", fmt]
    if command in _PLACES and draw(st.integers(0, 4)) == 0:
        argv += draw(_placement())
    if command in ("stages", "jaxpr", "recompile") and draw(st.integers(0, 3)) == 0:
        argv += ["--transform", draw(st.sampled_from(_TRANSFORMS))]
    if spec is not None and "cases:" in spec and command not in ("stages", "recompile"):
        argv += ["--case", "small"]
    elif command in ("stages", "cost", "jaxpr") and not sound and draw(st.integers(0, 4)) == 0:
        argv += ["--case", draw(st.sampled_from(["small", "other", "nope"]))]
    if command in ("stages", "jaxpr", "cost") and draw(st.integers(0, 6)) == 0:
        argv += ["--backend", draw(st.sampled_from(["cpu", "tpu", "nope"]))]
    if command == "snapshot":
        argv += ["--out", draw(st.sampled_from(["{dir}/snap", "{dir}/target.py", "{dir}"]))]
    if command == "check":
        entry: dict[str, Any] = {"target": target.replace("{dir}/", "")}
        if spec is not None:
            entry["shapes"] = "spec.yaml"
        manifest = yaml.safe_dump(
            {"snapshot_dir": "snaps", "targets": [entry, "target.py:double"]}, sort_keys=False
        )
        argv += ["--manifest", "{dir}/jaxinspect.yaml", "--format", fmt]
        argv += draw(st.sampled_from([[], ["--update"], ["--text"]]))
    if command in ("check", "diff") and draw(st.booleans()):
        argv += ["--fail-on", draw(st.sampled_from(_FAIL_ON))]
    if command == "diff":  # two stored texts (the manifest's name, for a second file)
        argv += ["{dir}/spec.yaml", "{dir}/jaxinspect.yaml", "--format", fmt]
        spec = spec or "a: 1\n"
        manifest = draw(_spec_text())
    baseline = draw(_baseline_text()) if command == "bench" else None
    return Example(draw(_target_file()), spec, manifest, tuple(argv), baseline)


#: Commands that take TARGET and a spec; those that take --mesh and --devices.
_RUNS_TARGET = ("stages", "jaxpr", "stablehlo", "hlo", "cost", "recompile", "snapshot")
_RUNS_TARGET += ("memory", "passes", "report", "bench")
_PLACES = ("stages", "cost", "memory", "passes", "report", "jaxpr")
_MESHES = ["data=1", "data=2", "a=1,b=1", "data=" + "9" * 30, "a=300,b=300", "données=2"]
_MESHES += ["data=0", "data=-1", "a=2,a=2", "=2", "data", "data=2.5", "d=\u0663", "data=5000"]


@st.composite
def _placement(draw: st.DrawFn) -> list[str]:
    kind = draw(st.sampled_from(["mesh", "mesh", "devices", "topology"]))
    if kind == "mesh":
        return ["--mesh", draw(st.sampled_from(_MESHES))]
    if kind == "devices":
        return ["--devices", draw(st.sampled_from(["1", "2", "0", "5000", "100000", "9" * 25]))]
    return ["--topology", draw(st.sampled_from(["; rm -rf /", "v5e:2x2x2x2", "v99:1x1", ""]))]


def _valid_baseline(draw: st.DrawFn) -> dict[str, Any]:
    samples = draw(st.lists(st.floats(1e-6, 1.0), min_size=1, max_size=4))
    return {
        "schema_version": 1,
        "kind": "jaxinspect-bench-baseline",
        "target": draw(st.sampled_from(["other.py:f", "{dir}/target.py:double"])),
        "spec": draw(st.sampled_from(["x=f32[3]", "spec.yaml", "{dir}/spec.yaml"])),
        "environment": {
            "backend": draw(st.sampled_from(["cpu", "tpu"])),
            "device_kind": "cpu",
            "jax_version": "0",
            "jaxlib_version": "0",
            "python_version": "3",
            "platform": "linux",
            "cpu_count": 2,
            "x64": False,
        },
        "gate": {
            "calls_per_round": 1,
            "target_min_s": samples,
            "target_median_s": samples,
            "reference_min_s": samples,
        },
        "cold": {"compile": samples},
    }


_BAD_BASELINES = [
    "",
    "{",
    "[" * 50_000 + "]" * 50_000,
    "9" * 5000,
    '{"kind": "jaxinspect-bench-baseline", "schema_version": ' + "9" * 5000 + "}",
    "NaN",
    "null",
    '"text"',
    "\x00\xff",
]


@st.composite
def _baseline_text(draw: st.DrawFn) -> str:
    """A ``--baseline`` file: well-formed (for this target or another), broken or hostile."""
    choice = draw(st.integers(0, 9))
    if choice < 2:
        return draw(st.sampled_from(_BAD_BASELINES))
    document = _valid_baseline(draw)
    if choice < 7:  # one field made wrong
        section = draw(st.sampled_from(["top", "gate", "environment", "cold"]))
        key = draw(st.sampled_from(["target", "calls_per_round", "backend", "compile", "x"]))
        value = draw(
            st.sampled_from([None, True, -1, 0, "s", [], {}, 10**30, 1e308, [1e-3] * 1001])
        )
        where = document if section == "top" else document[section]
        where[key] = value
    text = json.dumps(document, allow_nan=True)
    if choice == 9:
        text = text.replace("1,", "Infinity,", 1)
    return text


class _Capture:
    """What was written to one stream; ``getvalue`` once the capture has ended."""

    def __init__(self) -> None:
        self.text = ""

    def getvalue(self) -> str:
        return self.text


@contextlib.contextmanager
def _captured() -> Iterator[tuple[_Capture, _Capture]]:
    """stdout and stderr into two temporary files, for Python objects and file descriptors."""
    captures = _Capture(), _Capture()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        saved_fds = os.dup(1), os.dup(2)
        saved = sys.stdout, sys.stderr, sys.stdin
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        sys.stdout = open(1, "w", encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
        sys.stdin = io.StringIO("")
        try:
            yield captures
        finally:
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()
            os.dup2(saved_fds[0], 1)
            os.dup2(saved_fds[1], 2)
            for fd in saved_fds:
                os.close(fd)
            sys.stdout, sys.stderr, sys.stdin = saved
            for capture, file in zip(captures, (out, err), strict=True):
                file.seek(0)
                capture.text = file.read().decode("utf-8", "replace")


def run_example(example: Example) -> Outcome:
    """Write the example's files to a fresh folder and run its argv in this process."""
    from jaxinspect.cli.capture import report_only_stdout
    from jaxinspect.cli.entry import run

    folder = Path(tempfile.mkdtemp(prefix="jaxinspect-fuzz-"))
    try:
        (folder / "target.py").write_text(example.target_file)
        if example.spec_text is not None:
            (folder / "spec.yaml").write_text(example.spec_text, errors="surrogateescape")
        if example.manifest_text is not None:
            (folder / "jaxinspect.yaml").write_text(example.manifest_text)
        if example.baseline_text is not None:
            text = example.baseline_text.replace("{dir}", str(folder))
            (folder / "baseline.json").write_text(text, errors="surrogateescape")
        argv = [a.replace("{dir}", str(folder)) for a in example.argv]
        start = time.monotonic()
        before = set(threading.enumerate())
        # The capture is held around the run and the wait, as the console script holds it
        # until the process ends (run's own capture, nested, changes nothing).
        with _captured() as (out, err), report_only_stdout():
            code = run(argv)
            seconds = time.monotonic() - start
            _join_new_threads(before)
        stdout, stderr = out.getvalue(), err.getvalue()
    finally:
        _forget(folder)
        shutil.rmtree(folder, ignore_errors=True)
    status = code if isinstance(code, int) else (0 if code is None else 1)
    return Outcome(status, stdout, stderr, seconds)


def _join_new_threads(before: set[threading.Thread]) -> None:
    """Wait (a little) for the threads the example's code started: a process of its own would
    have ended them; left running, they would print into the next example."""
    for thread in set(threading.enumerate()) - before:
        thread.join(timeout=5)


def _forget(folder: Path) -> None:
    """Drop the folder's modules and its sys.path entry, so examples do not pile up."""
    with contextlib.suppress(ValueError):
        sys.path.remove(str(folder.resolve()))
    for name, module in list(sys.modules.items()):
        if str(getattr(module, "__file__", "") or "").startswith(str(folder.resolve())):
            del sys.modules[name]


def violations(example: Example, outcome: Outcome) -> list[str]:
    """Which invariants the outcome breaks (empty when it is fine)."""
    found = []
    if outcome.code not in (0, 1, 2, 3):
        found.append(f"exit code {outcome.code}")
    if outcome.seconds > HANG_S:
        found.append(f"hang: {outcome.seconds:.0f} s")
    if "\x1b" in outcome.stdout and "\x1b" not in example.target_file:
        found.append("a terminal escape sequence on stdout")
    if "Traceback" in outcome.stderr:
        found.append("traceback on stderr")
    if MARKER in outcome.stdout:
        found.append("the target's print reached stdout")
    if example.wants_json and outcome.stdout.strip():
        try:
            json.loads(outcome.stdout)
        except ValueError:
            found.append("stdout is not JSON")
    return found
