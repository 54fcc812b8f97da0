"""``check --jobs N`` (threads, same output and files) and ``check --shard I/N`` (CI matrices)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from jaxinspect.errors import UsageError
from jaxinspect.snapshot.shard import Shard, parse_shard

#: Eight small targets, one of which fails when traced, and one that prints while traced.
PROGRAM = """
import jax.numpy as jnp


def make(k):
    def f(x):
        return jnp.tanh(x @ x.T) * k + jnp.sin(x).sum()
    f.__name__ = f"f{k}"
    return f


f0, f1, f2, f3, f4, f5 = (make(k) for k in range(6))


def noisy(x):
    print("user output while tracing")
    return x + 1


def broken(x):
    raise ValueError("this target is broken")
"""

NAMES = ["f0", "f1", "f2", "f3", "f4", "f5", "noisy", "broken"]


def manifest(names: list[str]) -> str:
    rows = "".join(
        f'  - target: prog.py:{n}\n    args: ["x=f32[{8 + i},16]"]\n' for i, n in enumerate(names)
    )
    return f"snapshot_dir: snaps\ntargets:\n{rows}"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "prog.py").write_text(PROGRAM)
    (tmp_path / "jaxinspect.yaml").write_text(manifest(NAMES))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "lock" not in p.name
    }


def test_jobs_give_the_same_report_and_the_same_files(
    project: Path, run_cli: Callable[..., object]
) -> None:
    one = run_cli("check", "--update", "--jobs", "1", "--format", "json")
    files_one = tree(project / "snaps")
    for folder in (project / "snaps").iterdir():
        if folder.is_dir():
            for f in folder.iterdir():
                f.unlink() if f.is_file() else None
    two = run_cli("check", "--update", "--jobs", "3", "--format", "json")
    assert two.exit_code == one.exit_code == 3  # `broken` is an error row in both
    assert two.stdout == one.stdout
    assert tree(project / "snaps") == files_one
    assert "this target is broken" in two.stderr
    # (In-process, the second run reuses jax's traces, so only the first one printed.)
    assert "user output while tracing" in one.stderr and "user output" not in one.stdout
    again = run_cli("check", "--jobs", "0")  # 0: one per core
    assert again.exit_code == 3
    assert again.stdout.count("unchanged") >= 7


def test_shards_are_disjoint_and_cover_the_manifest(
    project: Path, run_cli: Callable[..., object]
) -> None:
    seen: list[str] = []
    for i in (1, 2, 3):
        result = run_cli("check", "--update", "--shard", f"{i}/3", "--format", "json")

        seen += [r["name"] for r in json.loads(result.stdout)["targets"]]
    assert sorted(seen) == sorted(f"prog_{n}" for n in NAMES)  # a target's default name
    assert sorted(p.name for p in (project / "snaps").iterdir() if p.is_dir()) == sorted(
        f"prog_{n}" for n in NAMES if n != "broken"
    )


def test_stale_folders_are_judged_by_one_shard_only(
    project: Path, run_cli: Callable[..., object]
) -> None:
    assert run_cli("check", "--update").exit_code == 3
    (project / "jaxinspect.yaml").write_text(manifest(NAMES[:4]))  # f4, f5, noisy now stale

    stale = {}
    for i in (1, 2):
        doc = json.loads(run_cli("check", "--shard", f"{i}/2", "--format", "json").stdout)
        stale[i] = {r["name"] for r in doc["targets"] if r["status"] == "stale"}
    assert stale[1] and stale[2]  # both shards own some (by their names' hashes)
    assert stale[1] | stale[2] == {"prog_f4", "prog_f5", "prog_noisy"}
    assert not stale[1] & stale[2]
    # --update in shard 1 removes only shard 1's stale folders.
    run_cli("check", "--update", "--shard", "1/2")
    left = {p.name for p in (project / "snaps").iterdir() if p.is_dir()}
    assert stale[2] <= left and not stale[1] & left


def test_shard_assignment_is_balanced_and_independent_of_order() -> None:
    names = [f"t{i}" for i in range(20)]
    shards = [Shard(i, 3).targets(names) for i in (1, 2, 3)]
    assert sorted(len(s) for s in shards) == [6, 7, 7]
    assert Shard(2, 3).targets(list(reversed(names))) == shards[1]


@pytest.mark.parametrize("text", ["0/2", "3/2", "1/0", "a/b", "1", "-1/2"])
def test_bad_shards_are_usage_errors(text: str, run_cli: Callable[..., object]) -> None:
    with pytest.raises(UsageError, match="--shard"):
        parse_shard(text)


def test_bad_shard_on_the_command_line_exits_2(
    project: Path, run_cli: Callable[..., object]
) -> None:
    result = run_cli("check", "--shard", "5/4")
    assert result.exit_code == 2 and "--shard '5/4'" in result.stderr


def test_threads_share_one_stdout_redirection_and_restore_it_last(tmp_path: Path) -> None:
    """Before, a thread leaving first restored fd 1 while another's user code still ran."""
    import os
    import sys
    import threading

    from jaxinspect.process.streams import stdout_to_stderr

    original = os.fstat(1)
    inside, release = threading.Barrier(3), threading.Event()
    seen: list[bool] = []

    def worker(wait: bool) -> None:
        with stdout_to_stderr():
            inside.wait()
            if wait:
                release.wait()
            seen.append(os.path.sameopenfile(1, 2))

    quick = threading.Thread(target=worker, args=(False,))
    slow = threading.Thread(target=worker, args=(True,))
    quick.start(), slow.start()
    inside.wait()
    quick.join()
    still_redirected = os.path.sameopenfile(1, 2)
    release.set()
    slow.join()
    assert seen == [True, True] and still_redirected
    after = os.fstat(1)
    assert (after.st_ino, after.st_dev) == (original.st_ino, original.st_dev)
    assert sys.stdout is not sys.stderr
