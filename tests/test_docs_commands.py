"""Every `jaxinspect` command shown in README.md and docs/*.md runs as written, with its files.

The rules, which docs follow so that their examples are tested (docs/index.md says so too):

- **Commands** are the lines of fenced blocks with no language or ``sh``/``bash``/``console``/
  ``shell`` whose first word is ``jaxinspect`` (or a path ending in ``/jaxinspect``); in a
  block with ``$ `` prompts, only the prompted lines, and it may hold no others: output is
  shown in a ``text`` block (below), where it is compared. Blocks marked ``text`` never run.
- **Exit code**: 0, unless the line's comment starts with ``exit N`` (``# exit 1: they differ``).
- **Placeholders**: a command with an argument holding a word of two or more capitals
  (``TARGET``, ``SPEC``, ``FILE.py:NAME``) or an ellipsis (``...``, ``…``) is not run; its
  subcommand and options are still checked against the CLI.
- **Files**: a fenced block whose first line is a comment naming a file (``# model.py``,
  ``# per_example.yaml: 8 examples``) is written under that name before the doc's commands
  run. Each doc runs in its own folder holding a copy of ``sample_programs/`` and its files,
  its commands in order (one may read what an earlier one wrote).
- **Shell**: ``> FILE`` writes stdout to FILE; ``| jq ...`` checks that stdout is JSON and, where
  jq is installed, that jq accepts it with that filter (an output block after it shows jq's
  output, compared only where jq is installed). Nothing else is supported.
- **Output blocks**: a block shown as a command's output is marked ``text``, and the line
  before its fence is an HTML comment saying what it is. ``<!-- output -->``: the standard
  output of the doc's last command before it, exactly (rendered at 120 columns, no colour),
  but for the masks below; the test fails when it is stale, and ``JAXINSPECT_UPDATE_GOLDEN=1``
  rewrites it in the doc. ``<!-- output: stderr -->``: the standard error of the commands of
  the last command block before it, one after the other (the messages of failing commands),
  compared the same way. ``<!-- output: excerpt -->``: lines of the last command's standard
  output, cut but not changed: each run of lines between lines holding only ``…`` is
  consecutive lines of the output, in order (for an output too long for a page).
  ``<!-- output: abridged (WHY) -->``: not compared; WHY says why it cannot be (what it
  depends on). ``<!-- not output -->``: a ``text`` block that is no command's output.
- **Masks**, the only differences a compared block may have: a timing (a number with a unit
  of time, ``8.21 ms``) matches any timing; the folder the doc ran in is shown as ``/…``
  (``/…/layers.py``); runs of blanks and of rule characters count as one, as a timing's width
  moves columns. Nothing else varies: sizes, counts and versions are compared as printed.

Commands run in-process through the typer app (one jax import for all of them).
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import subprocess
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import jax
import pytest
import typer
from typer.testing import CliRunner, Result

from conftest import ROOT
from jaxinspect.cli.app import app
from jaxinspect.topologies import gpu as gputarget

DOCS = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
COMMAND_LANGUAGES = frozenset({"", "sh", "bash", "console", "shell", "shell-session"})
_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>```+|~~~+)\s*(?P<info>[^`\s]*)")
_FILE_TAG = re.compile(r"^#\s*(?P<name>[\w.][\w./-]*\.(?:py|ya?ml|toml|json|txt|cfg|ini))(?::.*)?$")
_PLACEHOLDER = re.compile(r"(?<![A-Za-z])[A-Z][A-Z0-9_]+(?![a-z])|\.\.\.|…")
_EXPECTED_EXIT = re.compile(r"^exit (\d+)\b")
_SUPPORTED_OPERATORS = frozenset({"|", ">"})
_OTHER_REDIRECTS = re.compile(r"\d>|>>|&>|>&")
_MARKER = re.compile(
    r"^<!--\s*(?P<kind>output|output: stderr|output: excerpt|output: abridged|not output)"
    r"\s*(?:\((?P<why>[^()]*(?:\([^()]*\)[^()]*)*)\))?\s*-->$"
)
#: The markers of the blocks a run is compared with.
_COMPARED = frozenset({"output", "output: stderr", "output: excerpt"})
#: A line of an excerpt that stands for lines left out.
_GAP = "…"
#: Where the doc's run folder is shown in a compared block: ``/…/layers.py``.
_FOLDER_SHOWN_AS = "/…"
#: What a regenerated output block may differ in: timings, and the widths they change.
_TIMING = re.compile(r"\b\d[\d,.]*\s?(?:ns|µs|us|ms|s|min)\b")
_RULES = re.compile(r"[─━═┄]+")
_BLANKS = re.compile(r"[ \u00a0]+")


@dataclass(frozen=True)
class DocCommand:
    """One command line of a doc, parsed."""

    doc: str
    line: int
    text: str
    argv: tuple[str, ...]
    #: ``> FILE`` target, relative to the doc's folder.
    stdout_to: str | None = None
    #: Arguments of ``| jq ...``.
    jq: tuple[str, ...] | None = None
    expected_exit: int = 0
    #: Why the command is not run: the placeholder found, or ``None``.
    placeholder: str | None = None

    @property
    def where(self) -> str:
        """``docs/cli.md:24``."""
        return f"{self.doc}:{self.line}"


@dataclass(frozen=True)
class DocFile:
    """A file a doc shows in a fenced block tagged with its name."""

    doc: str
    line: int
    name: str
    text: str


@dataclass(frozen=True)
class DocOutput:
    """A ``text`` block of a doc and the marker before its fence (see the rules above)."""

    doc: str
    #: Line number of the block's first content line (the fence is the line before).
    line: int
    #: ``output``, ``output: stderr``, ``output: excerpt``, ``output: abridged``, ``not output``,
    #: or ``None`` when unmarked.
    marker: str | None
    text: str
    #: How many of the doc's commands come before it: ``output`` and ``output: excerpt`` show
    #: the last of them.
    after: int
    #: Position of the first command of the last command block before it: ``output: stderr``
    #: shows the commands from there to ``after``.
    block_start: int = 0
    #: The reason in ``<!-- output: abridged (WHY) -->``, or ``None``.
    why: str | None = None

    @property
    def where(self) -> str:
        """``docs/memory.md:22``."""
        return f"{self.doc}:{self.line}"


@dataclass(frozen=True)
class DocExamples:
    """What one doc holds: the files it defines, its commands and output blocks, in order."""

    doc: str
    files: tuple[DocFile, ...]
    commands: tuple[DocCommand, ...]
    outputs: tuple[DocOutput, ...] = ()
    #: ``doc:line`` of each line shown after a ``$ `` prompt as output: never compared, so
    #: refused (output goes in a marked ``text`` block).
    prompted_output: tuple[str, ...] = ()


class UnsupportedCommand(ValueError):
    """A command line uses shell syntax the harness does not run; the doc should not."""


def fenced_blocks(text: str) -> Iterator[tuple[str, int, list[str]]]:
    """``(info string, line number of the first content line, lines)`` of each fenced block.

    A fence may be indented (in a list item); its lines lose that indentation.
    """
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if match is None:
            i += 1
            continue
        fence, indent, start, body = match["fence"], len(match["indent"]), i + 2, []
        i += 1
        while i < len(lines) and not lines[i].lstrip().startswith(fence):
            line = lines[i]
            body.append(line[indent:] if line[:indent].strip() == "" else line.lstrip())
            i += 1
        i += 1
        yield match["info"].lower(), start, body


def _unquoted(code: str) -> str:
    """``code`` with the inside of its quotes blanked out."""
    out, quote = [], None
    for char in code:
        if quote:
            quote = None if char == quote else quote
            out.append(char if quote is None else " ")
        else:
            quote = char if char in "'\"" else None
            out.append(char)
    return "".join(out)


def split_comment(line: str) -> tuple[str, str]:
    """``(code, comment)``: the comment is what follows an unquoted ``#`` after a blank."""
    quote = None
    for i, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i + 1 :].strip()
    return line.rstrip(), ""


def parse_command(doc: str, line: int, text: str) -> DocCommand | None:
    """The command on ``text``, or ``None`` when it is not a ``jaxinspect`` command.

    Raises:
        UnsupportedCommand: It pipes or redirects other than ``> FILE`` and ``| jq ...``.
    """
    code, comment = split_comment(text)
    lexer = shlex.shlex(code, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        tokens = list(lexer)
    except ValueError as exc:  # an unclosed quote
        if code.split(maxsplit=1)[:1] != ["jaxinspect"]:
            return None
        raise UnsupportedCommand(f"{doc}:{line}: `{text}`: {exc}") from exc
    if not tokens or not (tokens[0] == "jaxinspect" or tokens[0].endswith("/jaxinspect")):
        return None
    if _OTHER_REDIRECTS.search(_unquoted(code)):
        raise UnsupportedCommand(f"{doc}:{line}: `{text}`: only `> FILE` and `| jq` are run")
    argv: list[str] = []
    stdout_to = jq = None
    rest = tokens[1:]
    while rest and rest[0] not in _SUPPORTED_OPERATORS and not _is_operator(rest[0]):
        argv.append(rest.pop(0))
    if rest[:1] == [">"] and len(rest) == 2 and not _is_operator(rest[1]):
        stdout_to = rest[1]
    elif rest[:2] == ["|", "jq"] and not any(_is_operator(t) for t in rest[2:]):
        jq = tuple(rest[2:])
    elif rest:
        raise UnsupportedCommand(f"{doc}:{line}: `{text}`: only `> FILE` and `| jq` are run")
    expected = _EXPECTED_EXIT.match(comment)
    placeholder = next((m[0] for a in argv if (m := _PLACEHOLDER.search(a))), None)
    return DocCommand(
        doc=doc,
        line=line,
        text=code,
        argv=tuple(argv),
        stdout_to=stdout_to,
        jq=jq,
        expected_exit=int(expected[1]) if expected else 0,
        placeholder=placeholder,
    )


def _is_operator(token: str) -> bool:
    return bool(token) and all(c in "|&;<>()" for c in token)


def read_examples(path: Path, root: Path = ROOT) -> DocExamples:
    """The files and commands of one markdown file, following the rules above."""
    doc = str(path.relative_to(root))
    files: list[DocFile] = []
    commands: list[DocCommand] = []
    outputs: list[DocOutput] = []
    prompted_output: list[str] = []
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    block_start = 0
    for info, start, body in fenced_blocks(text):
        tag = _FILE_TAG.match(body[0].strip()) if body else None
        if tag is not None:
            files.append(DocFile(doc, start, tag["name"], "\n".join(body) + "\n"))
            continue
        if info == "text":
            before = [line.strip() for line in lines[: start - 2] if line.strip()]
            marker = _MARKER.match(before[-1]) if before else None
            kind, why = (None, None) if marker is None else (marker["kind"], marker["why"])
            shown = "\n".join(body)
            outputs.append(DocOutput(doc, start, kind, shown, len(commands), block_start, why))
            continue
        if info not in COMMAND_LANGUAGES:
            continue
        first_of_block = len(commands)
        prompted = any(line.startswith("$ ") for line in body)
        for number, line in _joined_lines(body, start):
            if prompted and not line.startswith("$ "):
                prompted_output.append(f"{doc}:{number}")
                continue  # output shown after a prompt
            command = parse_command(doc, number, line.removeprefix("$ ").strip())
            if command is not None:
                commands.append(command)
        if len(commands) > first_of_block:
            block_start = first_of_block
    return DocExamples(doc, tuple(files), tuple(commands), tuple(outputs), tuple(prompted_output))


def _joined_lines(body: list[str], start: int) -> Iterator[tuple[int, str]]:
    """Lines with ``\\``-continuations joined, each with the number of its first line."""
    pending, first = "", start
    for offset, line in enumerate(body):
        if not pending:
            first = start + offset
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        yield first, pending + line
        pending = ""


# ---------------------------------------------------------------------------- the extractor


SAMPLE_DOC = """
```yaml
# spec.yaml: a file the commands use
args: {x: f32[3]}
```

```
jaxinspect stages f.py:f --shapes spec.yaml       # everything
jaxinspect diff a b                               # exit 1: they differ
jaxinspect stages TARGET --shapes SPEC --by line
jaxinspect jaxpr f.py:f --arg x=f32[8] ...        # no spec file needed
jaxinspect hlo f.py:f -s spec.yaml > f.hlo
make demo
```

```
$ jaxinspect stages f.py:f -s 'a b.yaml' -f json | jq -r '.cases[] | .name'
jaxinspect stages output.py:shown --as output
```

```text
jaxinspect snapshot …/test changed:
```

```bash
jaxinspect recompile f.py:f \\
  -s spec.yaml
```
"""


def test_extractor_follows_the_rules(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    path = tmp_path / "docs" / "sample.md"
    path.write_text(SAMPLE_DOC)
    examples = read_examples(path, root=tmp_path)
    [spec] = examples.files
    assert (spec.name, spec.line) == ("spec.yaml", 3)
    assert spec.text.startswith("# spec.yaml: a file")
    got = [(c.line, c.argv, c.expected_exit, c.placeholder) for c in examples.commands]
    assert got == [
        (8, ("stages", "f.py:f", "--shapes", "spec.yaml"), 0, None),
        (9, ("diff", "a", "b"), 1, None),
        (10, ("stages", "TARGET", "--shapes", "SPEC", "--by", "line"), 0, "TARGET"),
        (11, ("jaxpr", "f.py:f", "--arg", "x=f32[8]", "..."), 0, "..."),
        (12, ("hlo", "f.py:f", "-s", "spec.yaml"), 0, None),
        (17, ("stages", "f.py:f", "-s", "a b.yaml", "-f", "json"), 0, None),
        (26, ("recompile", "f.py:f", "-s", "spec.yaml"), 0, None),
    ]
    assert examples.commands[4].stdout_to == "f.hlo"
    assert examples.commands[5].jq == ("-r", ".cases[] | .name")
    assert examples.prompted_output == ("docs/sample.md:18",)


@pytest.mark.parametrize(
    "line", ["jaxinspect check && echo ok", "jaxinspect hlo f.py:f | head", "jaxinspect x 2> e"]
)
def test_other_shell_syntax_is_refused(line: str) -> None:
    with pytest.raises(UnsupportedCommand, match="only `> FILE` and `| jq` are run"):
        parse_command("d.md", 1, line)
    with pytest.raises(UnsupportedCommand, match="No closing quotation"):
        parse_command("d.md", 1, "jaxinspect check --fail-on 'flops>+5%")
    assert parse_command("d.md", 1, "it's prose") is None


def test_a_command_that_does_not_do_what_the_doc_says_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    line = "jaxinspect jaxpr nowhere.py:f --arg x=f32[2]"
    command = parse_command("d.md", 3, line)
    assert command is not None
    message, printed = _run(command, tmp_path)
    assert message is not None and printed.stdout == ""
    assert message.startswith(f"d.md:3: `{line}`: exit 2, the doc implies 0\n--- stderr (end)")
    assert "nowhere.py" in message
    expected = parse_command("d.md", 4, line + "   # exit 2: there is no such file")
    assert expected is not None and _run(expected, tmp_path)[0] is None
    [problem], _ = _through_jq((".x",), "plain text")
    assert problem.startswith("stdout piped to jq is not JSON")
    if shutil.which("jq"):
        assert _through_jq((".x",), '{"x": [1]}') == ([], "[\n  1\n]\n")


# ------------------------------------------------------------------------------ the docs


EXAMPLES = {str(p.relative_to(ROOT)): read_examples(p) for p in DOCS}
RUNNABLE = {doc: ex for doc, ex in EXAMPLES.items() if ex.commands or ex.files}


def test_the_docs_show_commands_that_run() -> None:
    run = [c for ex in EXAMPLES.values() for c in ex.commands if c.placeholder is None]
    assert len(run) >= 20, [c.where for c in run]  # the rules still find the docs' examples
    assert any(c.argv[0] == "check" for c in run)  # a manifest from a doc's file block


@pytest.mark.parametrize(
    "command",
    [c for ex in EXAMPLES.values() for c in ex.commands if c.placeholder is not None],
    ids=lambda c: c.where,
)
def test_placeholder_commands_name_real_options(command: DocCommand) -> None:
    group = typer.main.get_command(app)
    subcommand = getattr(group, "commands", {}).get(command.argv[0])
    assert subcommand is not None, f"{command.where}: no command `{command.argv[0]}`"
    known = {opt for param in subcommand.params for opt in (*param.opts, *param.secondary_opts)}
    used = {arg.split("=", 1)[0] for arg in command.argv[1:] if arg.startswith("-")}
    assert used <= known, f"{command.where}: unknown options {sorted(used - known)}"


#: Docs whose commands need an optional extra that is not installed, with what is missing:
#: docs/gpu.md needs the cuda extra (CI installs it; without it the GPU tests skip too).
_MISSING_EXTRA = {
    doc: missing
    for doc, missing in {"docs/gpu.md": gputarget.missing_pieces()}.items()
    if missing is not None
}


@pytest.mark.parametrize("doc", sorted(RUNNABLE))
def test_doc_commands_run_as_written(
    doc: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    examples = RUNNABLE[doc]
    missing = _MISSING_EXTRA.get(doc)
    if missing is not None:
        pytest.skip(missing)
    _prepare_folder(examples, tmp_path)
    monkeypatch.chdir(tmp_path)
    failures: list[str] = []
    printed: dict[int, Printed] = {}  # by the command's position in the doc
    # Likewise the other way: a test before this one in the process compiled the originals,
    # whose cached lowerings carry their own files' frames (docs/passes.md's stablehlo-to-hlo
    # diff then counted the frame tables' lines).
    jax.clear_caches()
    try:
        for index, command in enumerate(examples.commands):
            if command.placeholder is None:
                failure, printed[index] = _run(command, tmp_path)
                failures += [failure] if failure else []
        failures += _check_outputs(examples, printed, folder=tmp_path)
    finally:
        # The copies of sample_programs/ are code-identical to the originals, and JAX's
        # in-process caches match them: a later test compiling an original in this process
        # would get the copy's file in its source lines (test_cost's by_line files).
        jax.clear_caches()
    assert not failures, "\n\n".join(failures)


def test_every_text_block_says_whether_it_is_output() -> None:
    outputs = [o for ex in EXAMPLES.values() for o in ex.outputs]
    unmarked = [o.where for o in outputs if o.marker is None]
    assert not unmarked, (
        "a ```text block needs <!-- output -->, <!-- output: stderr -->, "
        f"<!-- output: abridged (WHY) --> or <!-- not output --> before its fence: {unmarked}"
    )
    prompted = [where for ex in EXAMPLES.values() for where in ex.prompted_output]
    assert not prompted, f"output after a `$ ` prompt is not compared; use a text block: {prompted}"
    unexplained = [o.where for o in outputs if o.marker == "output: abridged" and not o.why]
    assert not unexplained, f"an abridged block says why it cannot be exact: {unexplained}"
    exact = [o for o in outputs if o.marker in _COMPARED]
    assert exact, "no doc shows a regenerated output block: the check would test nothing"
    assert all(o.after > 0 for o in exact), [o.where for o in exact if o.after == 0]


def test_a_stale_output_block_is_reported_and_the_masks_are_narrow(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    path = tmp_path / "docs" / "d.md"
    path.write_text(
        "```\njaxinspect topologies\n```\n\n<!-- output -->\n```text\ncompile  8.21 ms\n"
        "──────\nfile /…/f.py\n```\n\n<!-- output: stderr -->\n```text\nError: one\n```\n\n"
        "```\njaxinspect a\njaxinspect b\n```\n\n<!-- output: stderr -->\n```text\nError: a\n"
        "Error: b\n```\n\n<!-- output: abridged (a 40 s call) -->\n```text\n…\n```\n"
    )
    examples = read_examples(path, root=tmp_path)
    assert [(o.marker, o.after, o.block_start, o.why) for o in examples.outputs] == [
        ("output", 1, 0, None),
        ("output: stderr", 1, 0, None),
        ("output: stderr", 3, 1, None),
        ("output: abridged", 3, 1, "a 40 s call"),
    ]
    run = tmp_path / "run"
    printed = {
        0: Printed(f"compile  12.3 ms\n───────────\nfile {run}/f.py\n", "Error: one\n"),
        1: Printed("", "Error: a\n"),
        2: Printed("", "Error: b\n"),
    }
    assert _check_outputs(examples, printed, folder=run, root=tmp_path) == []
    printed[0] = Printed("compile 12.3 ms\nflops 3\nfile /elsewhere/f.py\n", "Error: 2\n")
    printed[2] = Printed("", "Error: c\n")
    stale = _check_outputs(examples, printed, folder=run, root=tmp_path)
    assert [s.split(":")[1] for s in stale] == ["7", "14", "24"]
    assert "stale" in stale[0] and "+flops 3" in stale[0] and "+file /elsewhere/f.py" in stale[0]
    assert "-Error: one" in stale[1] and "+Error: 2" in stale[1]  # digits are not masked
    assert "+Error: c" in stale[2] and "JAXINSPECT_UPDATE_GOLDEN=1" in stale[2]


def test_an_excerpt_is_lines_of_the_output_in_order() -> None:
    got = "head\n a   1.5 ms\n b   2\n c   3\n d   4\ntail\n"
    assert _not_in_order("head\n a 9.1 s\n…\n c  3\n d 4\n…", got) is None
    assert _not_in_order(" b 2\n d 4", got) == " b 2\n d 4"  # a cut needs its …
    assert _not_in_order(" c 3\n…\n b 2", got) == " b 2"  # out of order
    assert _not_in_order(" c 33", got) == " c 33"


@dataclass(frozen=True)
class Printed:
    """What one command printed: ``stdout`` is jq's where the doc pipes it to jq (``None``
    where jq is not installed)."""

    stdout: str | None
    stderr: str


def _masked(text: str) -> str:
    lines = (
        _BLANKS.sub(" ", _RULES.sub("─", _TIMING.sub("<t>", line))).strip()
        for line in text.splitlines()
    )
    return "\n".join(line for line in lines if line)


def _shown(output: DocOutput, printed: dict[int, Printed], folder: Path) -> str | None:
    """What ``output`` should show, as printed, with the run folder masked; ``None`` if the
    commands it shows did not run."""
    if output.marker != "output: stderr":
        stdout = printed[output.after - 1].stdout if output.after - 1 in printed else None
        texts = [] if stdout is None else [stdout]
    else:
        positions = range(output.block_start, output.after)
        texts = [printed[i].stderr for i in positions if i in printed]
        texts = texts if len(texts) == len(positions) else []
    if not texts:
        return None
    text = "".join(t if t.endswith("\n") or not t else t + "\n" for t in texts).rstrip("\n")
    for spelling in {str(folder), str(folder.resolve())}:
        text = text.replace(spelling, _FOLDER_SHOWN_AS)
    return text


def _not_in_order(excerpt: str, got: str) -> str | None:
    """The first run of the excerpt's lines (between ``…`` lines) that is not consecutive lines
    of ``got`` after the runs before it, masked alike; ``None`` when every run is."""
    runs: list[list[str]] = [[]]
    for line in excerpt.splitlines():
        if line.strip() == _GAP:
            runs.append([])
        else:
            runs[-1].append(line)
    lines, start = _masked(got).split("\n"), 0
    for run in runs:
        wanted = _masked("\n".join(run)).split("\n")
        if wanted == [""]:
            continue
        found = next(
            (i for i in range(start, len(lines)) if lines[i : i + len(wanted)] == wanted), None
        )
        if found is None:
            return "\n".join(run)
        start = found + len(wanted)
    return None


def _check_outputs(
    examples: DocExamples, printed: dict[int, Printed], folder: Path, root: Path = ROOT
) -> list[str]:
    """Each compared block (``output``, ``output: stderr``, ``output: excerpt``) against what
    the commands before it printed.

    With ``JAXINSPECT_UPDATE_GOLDEN=1`` a stale block is rewritten in the doc instead.
    """
    import difflib

    stale: list[tuple[DocOutput, str]] = []
    failures = []
    for output in examples.outputs:
        if output.marker not in _COMPARED:
            continue
        got = _shown(output, printed, folder)
        shows_jq = output.marker != "output: stderr" and examples.commands[output.after - 1].jq
        if got is None and shows_jq and shutil.which("jq") is None:
            warnings.warn(f"{output.where}: not compared: jq is not installed", stacklevel=2)
            continue
        if got is None:
            failures.append(f"{output.where}: the commands before the output block did not run")
            continue
        if output.marker == "output: excerpt":
            missing = _not_in_order(output.text, got)
            if missing is not None:
                failures.append(
                    f"{output.where}: the excerpt is stale: these lines are not in the output, "
                    f"in this order (fix them by hand):\n{missing}"
                )
            continue
        if _masked(got) == _masked(output.text):
            continue
        stale.append((output, got))
        diff = difflib.unified_diff(
            output.text.splitlines(), got.splitlines(), "doc", "command", lineterm="", n=1
        )
        failures.append(
            f"{output.where}: the output block is stale (rerun with JAXINSPECT_UPDATE_GOLDEN=1 "
            "to rewrite it):\n" + "\n".join(list(diff)[:40])
        )
    if stale and os.environ.get("JAXINSPECT_UPDATE_GOLDEN"):
        _rewrite_blocks(root / examples.doc, stale)
        return []
    return failures


def _rewrite_blocks(path: Path, blocks: list[tuple[DocOutput, str]]) -> None:
    """Replace each block's lines in the doc, from the last so line numbers hold."""
    lines = path.read_text(encoding="utf-8").split("\n")
    for output, text in sorted(blocks, key=lambda b: -b[0].line):
        first = output.line - 1
        end = first + len(output.text.split("\n")) if output.text else first
        lines[first:end] = [line.rstrip() for line in text.split("\n")]
    path.write_text("\n".join(lines), encoding="utf-8")


def _prepare_folder(examples: DocExamples, folder: Path) -> None:
    shutil.copytree(
        ROOT / "sample_programs",
        folder / "sample_programs",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    seen: dict[str, DocFile] = {}
    for file in examples.files:
        other = seen.setdefault(file.name, file)
        assert other is file, f"{file.doc}:{file.line}: {file.name} also at line {other.line}"
        target = folder / file.name
        assert folder in target.resolve().parents, f"{file.doc}:{file.line}: outside the folder"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(file.text, encoding="utf-8")


#: Results of commands that only read, by argv and the files they could read (the files the
#: argv names and every Python file): the docs repeat a few slow ones (``bench`` starts
#: three processes), which then run once.
_READ_ONLY = frozenset(
    {"stages", "jaxpr", "stablehlo", "hlo", "cost", "bench", "recompile", "passes", "memory"}
    | {"topologies", "spec"}
)
#: Options that make any command write a file: such a command always runs.
_WRITES = frozenset({"-o", "--output", "--out", "--save", "--compilation-cache"})
_RESULTS: dict[tuple[object, ...], Result] = {}


def _invoke(command: DocCommand, folder: Path) -> Result:
    key = None
    writes = any(arg.split("=", 1)[0] in _WRITES for arg in command.argv)
    if command.argv[0] in _READ_ONLY and not writes:
        key = (command.argv, _inputs_digest(command.argv, folder))
        if key in _RESULTS:
            return _RESULTS[key]
    result = CliRunner().invoke(
        app, list(command.argv), env={"COLUMNS": "120", "NO_COLOR": "1"}, catch_exceptions=True
    )
    if key is not None:
        _RESULTS[key] = result
    return result


def _inputs_digest(argv: tuple[str, ...], folder: Path) -> str:
    named = {folder / part for arg in argv for part in (arg, arg.rsplit(":", 1)[0])}
    inputs = {p for p in named if p.is_file()} | set(folder.rglob("*.py"))
    digest = hashlib.sha256()
    for path in sorted(inputs):
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _run(command: DocCommand, folder: Path) -> tuple[str | None, Printed]:
    """Run one command: ``None`` if it did what the doc says, else why not; and what it
    printed (through ``jq`` when the doc pipes it there)."""
    result = _invoke(command, folder)
    problems = []
    if result.exit_code != command.expected_exit:
        problems.append(f"exit {result.exit_code}, the doc implies {command.expected_exit}")
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        problems.append(f"raised {result.exception!r}")
    if command.stdout_to is not None:
        (folder / command.stdout_to).write_text(result.stdout, encoding="utf-8")
    stdout: str | None = result.stdout
    if command.jq is not None:
        jq_problems, stdout = _through_jq(command.jq, result.stdout)
        problems += jq_problems
    printed = Printed(stdout, result.stderr)
    if not problems:
        return None, printed
    return (
        f"{command.where}: `{command.text}`: {'; '.join(problems)}\n"
        f"--- stderr (end)\n{_tail(result.stderr)}\n--- stdout (end)\n{_tail(result.stdout)}"
    ), printed


def _through_jq(args: tuple[str, ...], stdout: str) -> tuple[list[str], str | None]:
    """What is wrong with piping ``stdout`` to ``jq ARGS``, and what jq printed (``None``
    where jq is not installed: then only that stdout is JSON is checked)."""
    import json

    try:
        json.loads(stdout)
    except ValueError as exc:
        return [f"stdout piped to jq is not JSON: {exc}"], None
    jq = shutil.which("jq")
    if jq is None:
        return [], None
    done = subprocess.run([jq, *args], input=stdout, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return [f"jq {shlex.join(args)} failed: {done.stderr.strip()}"], None
    return [], done.stdout


def _tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.splitlines()[-lines:])
