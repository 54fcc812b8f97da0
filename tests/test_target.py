"""Target resolution: files, modules, dotted attributes, wrapped callables, helpful errors."""

from __future__ import annotations

import textwrap

import pytest

from jaxinspect.errors import ExitCode, StageError, TargetError
from jaxinspect.inputs.target import load_target, parse_target


@pytest.fixture
def project(tmp_path):
    (tmp_path / "helpers.py").write_text("def double(x):\n    return 2 * x\n")
    (tmp_path / "model_file.py").write_text(
        textwrap.dedent(
            """
            import functools
            import jax
            from helpers import double   # a neighbour module, importable from the file's folder

            def loss(w, x):
                return (double(x) @ w).sum()

            class Model:
                def apply(self, x):
                    return x + 1

                @staticmethod
                def scale(x):
                    return x * 3

            model = Model()
            grad_loss = jax.grad(loss)
            loss_at_two = functools.partial(loss, x=2.0)
            not_callable = 42
            """
        )
    )
    (tmp_path / "broken.py").write_text(
        "def f(x):\n    return x\n\nraise ValueError('boom at import')\n"
    )
    return tmp_path


@pytest.mark.parametrize(
    ("attr", "name"),
    [
        ("loss", "loss"),
        ("model.apply", "apply"),
        ("Model.scale", "scale"),
        ("grad_loss", None),
        ("loss_at_two", None),
    ],
)
def test_file_targets_resolve(project, attr, name):
    loaded = load_target(f"{project / 'model_file.py'}:{attr}")
    assert callable(loaded.function)
    if name is not None:
        assert loaded.function.__name__ == name
    assert loaded.source_file == str(project / "model_file.py")
    assert loaded.ref.display_name == attr


def test_module_target():
    loaded = load_target("jaxinspect.suggest:did_you_mean")
    assert loaded.function("x", ["y"]) == ""
    assert not loaded.ref.is_file


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("model_file.py", "expected FILE.py:NAME or package.module:NAME"),
        ("model_file.py:", "expected FILE.py:NAME"),
        ("model_file.py:a-b", "'a-b' is not a dotted attribute path"),
        (
            "model_file.py:los",
            "module {dir}/model_file.py has no attribute 'los' (did you mean loss",
        ),
        ("model_file.py:model.aply", "model has no attribute 'aply' (did you mean apply?)"),
        ("model_file.py:not_callable", "not_callable is a int, not a callable"),
        ("model_fil.py:loss", "file '{dir}/model_fil.py' not found (did you mean model_file.py"),
    ],
)
def test_target_errors_name_what_is_missing(project, target, message):
    with pytest.raises(TargetError) as info:
        load_target(f"{project}/{target}" if "/" not in target else target)
    assert message.format(dir=project) in info.value.message
    assert info.value.exit_code is ExitCode.USAGE_ERROR


def test_missing_module():
    with pytest.raises(TargetError, match="module 'no_such_pkg_xyz' not found"):
        load_target("no_such_pkg_xyz.mod:f")


def test_import_failure_is_the_users_code_failing(project):
    with pytest.raises(StageError) as info:
        load_target(f"{project / 'broken.py'}:f")
    assert info.value.exit_code is ExitCode.TARGET_FAILED
    assert "import failed: ValueError: boom at import" in info.value.message
    assert f"{project / 'broken.py'}:4 in <module>" in info.value.message


def test_parse_target_recognises_files_and_modules():
    assert parse_target("a/b.py:f.g").attribute == ("f", "g")
    assert parse_target("a/b.py:f").is_file
    assert not parse_target("pkg.mod:f").is_file
