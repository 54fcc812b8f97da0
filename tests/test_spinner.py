"""``cli/spinner.py``: a spinner only where stderr is a terminal."""

from __future__ import annotations

import io
import subprocess
import sys
from contextlib import nullcontext

import pytest
from rich.status import Status

from conftest import ROOT, sample
from jaxinspect.cli.spinner import spinner


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_no_spinner_without_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert isinstance(spinner("working …"), nullcontext)


def test_a_status_spinner_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stderr", _Terminal())
    status = spinner("working …")
    assert isinstance(status, Status)
    with status:
        pass


@pytest.mark.parametrize("command", ["cost", "memory"])
def test_a_piped_json_run_imports_no_rich(command: str) -> None:
    # The JSON report needs no rich, and a piped stderr shows no spinner.
    code = (
        "import sys, runpy\n"
        f"sys.argv = ['jaxinspect', '{command}', '{sample('mlp.py:predict')}', "
        f"'-s', '{sample('mlp.yaml')}', '-f', 'json']\n"
        "import atexit\n"
        "atexit.register(lambda: print('rich' in sys.modules, file=sys.stderr))\n"
        "runpy.run_module('jaxinspect', run_name='__main__')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert '"flops"' in done.stdout or '"peak' in done.stdout
    assert done.stderr.strip().splitlines()[-1] == "False"
