"""FitTable: tokens stay whole, paths are cut in the middle, prose wraps, columns go by rank."""

from __future__ import annotations

import io

import pytest
from narrow import assert_readable
from rich.console import Console

from jaxinspect.renderers.fit import Col, FitTable, cut_middle


def render(table: FitTable, width: int) -> str:
    console = Console(width=width, file=io.StringIO(), color_system=None)
    console.print(table)
    return console.file.getvalue()


def ops_table() -> FitTable:
    table = FitTable(
        [
            Col("op"),
            Col("kind", drop=2),
            Col("shape"),
            Col("flops", justify="right"),
            Col("source", kind="prose", drop=1),
        ],
        title="ops by flops (a title long enough to wrap at forty columns)",
    )
    table.add_row(
        "multiply_bitcast_fusion", "kLoop", "f32[1024,1024]", "1.05 M", "model.py:12 block"
    )
    table.add_row("ynn_fusion.19", "kCustom", "f32[128,512]", "16.8 M", "model.py:40 attention")
    return table


@pytest.mark.parametrize("width", [30, 40, 60, 80, 120])
def test_no_line_is_wider_than_the_console_and_no_token_is_split(width):
    out = render(ops_table(), width)
    assert_readable(out, width, ["multiply_bitcast_fusion", "ynn_fusion.19", "f32[1024,1024]"])
    for token in ("multiply_bitcast_fusion", "ynn_fusion.19", "f32[1024,1024]", "16.8 M"):
        assert token in out


def test_columns_go_by_rank_and_are_named_under_the_table():
    wide = render(ops_table(), 120)
    assert "kCustom" in wide and "attention" in wide and "not shown" not in wide
    # At 70 columns the source (rank 1) stays longer than the kind (rank 2).
    mid = render(ops_table(), 70)
    assert "kCustom" not in mid and "model.py:40" in mid
    assert "not shown at 70 columns: kind " in mid
    narrow = render(ops_table(), 55)
    assert "model.py" not in narrow and "not shown at 55 columns: kind, source" in narrow


def test_too_narrow_for_any_table_each_row_becomes_a_block():
    out = render(ops_table(), 30)
    assert_readable(out, 30, ["multiply_bitcast_fusion", "f32[1024,1024]"])
    lines = [line.rstrip() for line in out.splitlines()]
    first = lines.index("multiply_bitcast_fusion")
    assert lines[first + 1 : first + 5] == [
        " kind   kLoop",
        " shape  f32[1024,1024]",
        " flops  1.05 M",
        " source model.py:12 block",
    ]


def test_prose_wraps_at_spaces_only():
    table = FitTable([Col("case"), Col("why", kind="prose")])
    table.add_row("seq128", "x: shape 2×64×128 → 2×128×128 because the sequence grew")
    out = render(table, 30)
    assert_readable(out, 30, ["2×64×128", "2×128×128", "sequence"])
    assert "2×128×128" in out


def test_paths_are_cut_in_the_middle_so_their_ends_still_differ():
    table = FitTable([Col("argument", kind="path"), Col("shape")])
    for leaf in ("bias", "scale"):
        for layer in (0, 1):
            table.add_row(f"params['LayerNorm_{layer}']['{leaf}']", "[128]")
    out = render(table, 30)
    shown = [line.split()[0] for line in out.splitlines()[2:] if line.strip()]
    assert len(set(shown)) == 4  # four leaves, four different cells
    assert all("…" in s and s.startswith("params[") and s.endswith("']") for s in shown)


def test_a_path_column_widens_before_two_paths_read_the_same():
    # A flax TrainState at 80 columns once showed state.params['Dense_0']['bias'] and
    # state.params['Dense_1']['bias'] both as "state.par…']['bias']": the path column was
    # held at its minimum while the sharding columns stayed.
    table = FitTable(
        [
            Col("argument", kind="path"),
            Col("kind", drop=1),
            Col("dtype"),
            Col("shape"),
            Col("sharding", drop=2),
            Col("per device", drop=3),
        ]
    )
    paths = [f"state.params['Dense_{n}']['{leaf}']" for n in (0, 1) for leaf in ("bias", "kernel")]
    paths += [
        f"state.opt_state[0].{m}['Dense_{n}']['{leaf}']"
        for m in ("mu", "nu")
        for n in (0, 1)
        for leaf in ("bias", "kernel")
    ]
    table.add_row("state.step", "static", "", "0", "", "")
    for i, path in enumerate(paths):
        table.add_row(path, "array", "float32", f"[{i},32]", "P()", f"[{i},32]")
    table.add_row("x", "array", "float32", "[64,16]", "P('data')", "[8,16]")
    out = render(table, 76)  # inside the stages panel at 80 columns
    shown = [line.split()[0] for line in out.splitlines() if "']" in line]
    assert len(shown) == len(paths) and len(set(shown)) == len(paths), out
    assert all(len(line) <= 76 for line in out.splitlines())


def test_cut_middle():
    assert cut_middle("short", 10) == "short"
    cut = cut_middle("params['LayerNorm_0']['scale']", 20)
    assert len(cut) == 20 and cut.startswith("params['L") and cut.endswith("['scale']")
    assert cut_middle("abc", 1) == "…"


def test_cells_are_plain_text_not_markup():
    table = FitTable([Col("spec", kind="path")])
    table.add_row("[bold]not markup[/bold]")
    assert "[bold]not markup[/bold]" in render(table, 80)


def test_a_row_of_the_wrong_length_is_a_bug():
    with pytest.raises(ValueError, match="2 cells for 1 columns"):
        FitTable([Col("a")]).add_row("x", "y")


def runs_table(unwrap_over: int = 0) -> FitTable:
    table = FitTable(
        [
            Col("op"),
            Col("kind", drop=5),
            Col("runs", justify="right", drop=6),
            Col("flops", justify="right"),
            Col("source", kind="prose", drop=1, unwrap_over=unwrap_over),
        ]
    )
    table.add_row("ynn_fusion.11", "kCustom", "1", "4.19 M", "transformer.py:22 attention")
    table.add_row("add_tanh_fusion", "kLoop", "1", "102 k", "rnn.py:16 step")
    return table


def test_a_column_with_one_value_in_every_row_goes_first_and_the_note_gives_the_value():
    assert "runs" in render(runs_table(), 120)  # everything fits: nothing goes
    out = render(runs_table(), 65)
    assert "runs" not in out.splitlines()[0] and "kCustom" in out
    assert "the same in every row shown: runs 1" in out and "not shown" not in out
    one = FitTable([Col("op"), Col("runs", drop=1)], title="a title wider than the table")
    one.add_row("ynn_fusion.11", "1")
    assert "runs" in render(one, 20)  # a single row is not "every row"


def test_a_prose_column_stays_on_one_line_when_ranked_columns_can_go_for_it():
    wraps = render(runs_table(), 60)
    assert "kCustom" in wraps and "transformer.py:22 attention" not in wraps
    whole = render(runs_table(unwrap_over=5), 60)
    assert "kCustom" not in whole and "transformer.py:22 attention" in whole
    assert "not shown at 60 columns: kind" in whole
    # When dropping every column it may drop is not enough, none goes.
    long = FitTable([Col("op"), Col("kind", drop=5), Col("source", kind="prose", unwrap_over=5)])
    long.add_row("ynn_fusion.11", "kCustom", "a_long_module_name.py:22 attention_and_more")
    out = render(long, 60)
    assert "kCustom" in out and "not shown" not in out


def test_a_droppable_column_with_nothing_in_it_is_left_out_silently():
    table = FitTable([Col("op"), Col("target", drop=3), Col("note", kind="prose")])
    table.add_row("copy.6", "", "")
    table.add_row("copy.2", None, "")
    out = render(table, 80)
    assert "target" not in out and "not shown" not in out
    assert "note" in out  # a column that may not go stays, empty or not
