"""Native libraries' writes to file descriptor 2 are caught, shown with --debug, kept on errors."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from jaxinspect.errors import UsageError
from jaxinspect.process.errtrace import CALLBACK_LOGGER
from jaxinspect.process.nativelog import native_logs_shown, quiet_native_stderr, show_native_logs


@pytest.fixture
def shown() -> Iterator[None]:
    show_native_logs(True)
    try:
        yield
    finally:
        show_native_logs(False)


def test_writes_to_fd_2_are_caught(capfd: pytest.CaptureFixture[str]) -> None:
    with quiet_native_stderr():
        os.write(2, b"W0000 libtpu chatter\n")  # as C++ writes it: below sys.stderr
    os.write(2, b"after the block\n")
    assert capfd.readouterr().err == "after the block\n"


def test_debug_writes_them_back(capfd: pytest.CaptureFixture[str], shown: None) -> None:
    with quiet_native_stderr():
        os.write(2, b"W0000 libtpu chatter\n")
    assert capfd.readouterr().err == "W0000 libtpu chatter\n"


def test_an_error_in_the_block_carries_what_was_caught(capfd: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(UsageError) as raised, quiet_native_stderr():
        os.write(2, b"E0000 could not open the device\n")
        raise UsageError("--topology v5e:2x2: libtpu could not describe the slice")
    assert raised.value.message == (
        "--topology v5e:2x2: libtpu could not describe the slice\nE0000 could not open the device"
    )
    assert capfd.readouterr().err == ""


def test_fd_2_is_restored_after_an_error(capfd: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(KeyError), quiet_native_stderr():
        raise KeyError("boom")
    os.write(2, b"still the terminal\n")
    assert capfd.readouterr().err == "still the terminal\n"


def test_a_debug_run_in_process_leaves_native_output_caught_after_it(
    run_cli: Callable[..., Any], tmp_path: Path
) -> None:
    # The CLI's --debug switch is process-wide: a test (or an API caller) that runs a command
    # with it in-process must not leave later blocks writing their catch back to stderr.
    old, new = tmp_path / "old.txt", tmp_path / "new.txt"
    old.write_text("HloModule m\n")
    new.write_text("HloModule n\n")
    assert not native_logs_shown()
    assert run_cli("diff", old, new, "--debug").exit_code == 1
    assert not native_logs_shown()
    assert not logging.getLogger(CALLBACK_LOGGER).disabled  # as before the run
