"""``renderers/jsonwrite.py`` writes the text of ``json.dumps(indent=2, sort_keys=True)``."""

from __future__ import annotations

import enum
import json
import random
from typing import Any

import pytest

from jaxinspect.renderers.jsondoc import json_text
from jaxinspect.renderers.jsonwrite import dumps_indented


class _Kind(enum.StrEnum):
    A = "a"


class _Level(enum.IntEnum):
    HIGH = 3


def _reference(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True)


@pytest.mark.parametrize(
    "value",
    [
        {},
        [],
        (),
        {"a": []},
        {"b": {}, "a": [1, 2.5, None, True, False]},
        float("nan"),
        float("inf"),
        -float("inf"),
        {1: "x", 2: "y"},
        {2.5: 1, 1.5: 2},
        {True: 1, False: 2},
        {None: 1},
        'é\u2028"\\\n\t',
        _Kind.A,
        _Level.HIGH,
        {_Kind.A: [_Level.HIGH, _Kind.A]},
        1e300,
        1e-7,
        -0.0,
        10**30,
        (1, (2, [3, {}])),
        [[[]]],
        {"k": ({"z": 1, "a": 2},)},
    ],
)
def test_the_text_is_json_dumps_s(value: Any) -> None:
    assert dumps_indented(value) == _reference(value)


def test_random_documents_give_json_dumps_s_text() -> None:
    rnd = random.Random(1)

    def document(depth: int) -> Any:
        kind = rnd.randrange(9)
        if depth > 4 or kind < 4:
            scalars = [None, True, False, rnd.random() * 10 ** rnd.randrange(-5, 20)]
            scalars += [rnd.randrange(-(10**6), 10**6), "s" + chr(rnd.randrange(0x3000)), ""]
            return rnd.choice(scalars)
        if kind < 6:
            return [document(depth + 1) for _ in range(rnd.randrange(4))]
        if kind < 7:
            return tuple(document(depth + 1) for _ in range(rnd.randrange(4)))
        return {f"k{rnd.randrange(20)}": document(depth + 1) for _ in range(rnd.randrange(5))}

    for _ in range(500):
        value = document(0)
        assert dumps_indented(value) == _reference(value)


@pytest.mark.parametrize("value", [{1: 2, "a": 3}, object(), {(1, 2): 3}, {"a": {1, 2}}])
def test_what_json_rejects_fails_as_in_json(value: Any) -> None:
    with pytest.raises(TypeError) as expected:
        _reference(value)
    with pytest.raises(TypeError) as got:
        dumps_indented(value)
    assert str(got.value) == str(expected.value)


def test_a_report_document_ends_with_a_newline() -> None:
    assert json_text({"b": [1], "a": None}) == '{\n  "a": null,\n  "b": [\n    1\n  ]\n}\n'
