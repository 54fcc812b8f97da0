"""Memory at the peak from XLA's buffer assignment: the parser, the timeline, the command."""

from __future__ import annotations

import pytest

from jaxinspect.cost.bufferassign import (
    parse_buffer_assignment,
    parse_live_ranges,
    parse_usage_totals,
)

# Excerpts of XLA's dumps of sample_programs/rnn.py:run and linreg.py:update_params (params
# donated), jax 0.10.2 on CPU, as XLA wrote them.
RNN_ASSIGNMENT = """BufferAssignment:
allocation 0: size 102400, parameter 3, shape |f32[100,8,32]| at ShapeIndex {}:
 value: <37 xs.1 @0> (size=102400,offset=0): f32[100,8,32]{2,1,0}
allocation 3: size 2048, output shape is |f32[8,64]|, maybe-live-out:
 value: <20 copy.2 @0> (size=4,offset=0): s32[]
 value: <25 ynn_fusion @0> (size=2048,offset=0): f32[8,64]{1,0}
 value: <45 arg_tuple.3{1} (phi) @0> (size=2048,offset=0): f32[8,64]{1,0}
allocation 6: size 4, constant:
 value: <21 constant.4 @0> (size=4,offset=0): s32[]
allocation 9: size 3140, preallocated-temp:
 value: <22 wrapped_add @0> (size=4,offset=3136): s32[]
 value: <27 tuple.3{} @0> (size=48,offset=0): (s32[], f32[8,64]{1,0}, f32[100,8,32]{2,1,0}, f32[64,64]{1,0}, f32[32,64]{1,0}, /*index=5*/f32[64]{0})
"""  # noqa: E501 (one line of XLA's text)
LINREG_ASSIGNMENT = """BufferAssignment:
allocation 2: size 64, parameter 1, shape |f32[16]| at ShapeIndex {}, maybe-live-out:
 value: <44 params__w__.1 @0> (size=64,offset=0): f32[16]{0}
 value: <52 multiply_subtract_fusion @0> (size=64,offset=0): f32[16]{0}
allocation 6: size 4, thread-local:
 value: <5 reduce_sum.2 @0> (size=4,offset=0): f32[]
"""
MLP_LIVE_RANGE = """HloLiveRange (max 9):
  InstructionSequence:
    0:params__b1__.1
    1:x.1
    2:ynn_fusion.1
  BufferLiveRange:
    x.1{}:0-9
    ynn_fusion.1{}:5-6
    while.5{1}:28-30
  Live ranges at 7 (peak):
    params__w1__.1{}: 802816 bytes (cumulative: 802816 bytes)
    x.1{}: 401408 bytes (cumulative: 1204224 bytes)
  Stack trace breakdown for peak usage: 1 351 720 bytes
    main.1 (100.0%, total: 1 351 720 bytes, current: 0 bytes, remaining: 1 351 720 bytes)
"""


def test_parser_reads_allocations_kinds_and_values_of_real_text():
    allocations = parse_buffer_assignment(RNN_ASSIGNMENT)
    assert [(a.index, a.size, a.kind) for a in allocations] == [
        (0, 102400, "parameter"),
        (3, 2048, "output"),
        (6, 4, "constant"),
        (9, 3140, "temp"),
    ]
    xs, out, _, temp = allocations
    assert (xs.parameter, xs.parameter_index, xs.live_out) == (3, "{}", False)
    assert out.live_out and out.parameter is None
    phi = out.values[2]
    assert (phi.instruction, phi.index, phi.phi, phi.size) == ("arg_tuple.3", "{1}", True, 2048)
    assert out.values[1].key == ("ynn_fusion", "{}") and out.values[1].shape == "f32[8,64]{1,0}"
    assert (temp.values[0].offset, temp.values[1].key) == (3136, ("tuple.3", "{}"))
    assert temp.values[1].shape.startswith("(s32[], f32[8,64]{1,0}")


def test_parser_tells_a_donated_parameter_and_thread_local_scratch():
    donated, scratch = parse_buffer_assignment(LINREG_ASSIGNMENT)
    assert (donated.kind, donated.parameter, donated.live_out) == ("parameter", 1, True)
    assert [v.instruction for v in donated.values] == ["params__w__.1", "multiply_subtract_fusion"]
    assert scratch.kind == "thread-local"


def test_parser_refuses_text_without_allocations():
    with pytest.raises(ValueError, match="no allocation"):
        parse_buffer_assignment("BufferAssignment:\n")
    with pytest.raises(ValueError, match="before any allocation"):
        parse_buffer_assignment(" value: <1 x @0> (size=4,offset=0): f32[]\n")


def test_live_range_parser_reads_schedule_ranges_and_xla_peak():
    live = parse_live_ranges(MLP_LIVE_RANGE)
    assert live.sequence == ("params__b1__.1", "x.1", "ynn_fusion.1")
    assert live.ranges == {
        ("x.1", "{}"): (0, 9),
        ("ynn_fusion.1", "{}"): (5, 6),
        ("while.5", "{1}"): (28, 30),
    }
    assert (live.peak_step, live.peak_bytes) == (7, 1204224)
    assert live.peak_values == (("params__w1__.1", "{}"), ("x.1", "{}"))
    with pytest.raises(ValueError, match="no instruction sequence"):
        parse_live_ranges("HloLiveRange (max 0):\n")


def test_usage_report_totals_per_memory_color():
    text = "Memory Space: default (color=0)\nTotal bytes: 1351720 (1.29MiB)\n  cumulative_size;"
    assert parse_usage_totals(text) == {0: 1351720}
    assert parse_usage_totals("nothing here") == {}
