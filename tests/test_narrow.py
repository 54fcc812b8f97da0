"""The narrow-output checker (tests/narrow.py) fails on the layouts it exists to catch."""

from __future__ import annotations

import io

import pytest
from narrow import assert_fits_json, assert_readable, json_identifiers, json_paths
from rich.console import Console
from rich.table import Table

# `jaxinspect cost` on the transformer sample at 80 columns before tables were fitted (#13).
BEFORE = """\
 op        kind      shape     runs    flops      %    bytes   transc.   source
────────────────────────────────────────────────────────────────────────────────
 ynn_fus   kCustom   f32[12…      1   16.8 M   30.2      576         0   transf
 ion.11                                                  KiB             ormer.
                                                                         py:22
"""
NAMES = ["ynn_fusion.11", "f32[128,128]", "transformer.py:22"]


def test_a_name_folded_across_two_lines_fails():
    with pytest.raises(AssertionError, match=r"'ynn_fusion.11' split across lines: ynn_fus / ion"):
        assert_readable(BEFORE, 80, ["ynn_fusion.11"])


def test_a_name_folded_across_three_lines_fails():
    with pytest.raises(AssertionError, match=r"transf / ormer. / py:22"):
        assert_readable(BEFORE, 80, ["transformer.py:22"])


def test_a_shape_cut_at_its_end_fails():
    with pytest.raises(AssertionError, match=r"'f32\[128,128\]' cut at an end: 'f32\[12…'"):
        assert_readable(BEFORE, 80, ["f32[128,128]"])


def test_a_line_over_the_width_fails():
    with pytest.raises(AssertionError, match="5 lines over 60 columns"):
        assert_readable(BEFORE, 60, [])


@pytest.mark.parametrize(
    ("overflow", "error"), [("fold", "split across lines"), ("ellipsis", "cut at an end")]
)
def test_rich_shrinking_a_plain_table_fails(overflow, error):
    # What every table looked like before: rich shrinks each column to share out the width.
    table = Table("op", "kind", "shape", "flops", "source")
    for column in table.columns:
        column.overflow = overflow
    table.add_row("multiply_bitcast_fusion", "kLoop", "f32[1024,1024]", "1.05 M", "model.py:12")
    console = Console(width=40, file=io.StringIO(), color_system=None)
    console.print(table)
    with pytest.raises(AssertionError, match=error):
        assert_readable(console.file.getvalue(), 40, ["multiply_bitcast_fusion"])


def test_paths_may_be_cut_in_the_middle_but_names_and_shapes_may_not():
    path = "params['LayerNorm_0']['scale']"
    middle = " params['Lay…_0']['scale']   f32[128]\n"
    assert_readable(middle, 80, [path, "f32[128]"], cuttable=[path])
    with pytest.raises(AssertionError, match="may not be cut"):
        assert_readable(middle, 80, [path], cuttable=[])
    with pytest.raises(AssertionError, match="cut at an end"):
        assert_readable(" params['Lay…   f32[128]\n", 80, [path], cuttable=[path])
    with pytest.raises(AssertionError, match="may not be cut"):
        assert_readable(" multiply_b…_fusion\n", 80, ["multiply_bitcast_fusion"])


def test_whole_names_and_markers_pass():
    text = " ynn_fusion.11   f32[128,128]\n … 20 more rows\n { a … 3 more … b }\n"
    assert_readable(text, 40, NAMES)


def test_identifiers_come_from_the_json_document():
    doc = {
        "args": [{"path": "params['w1']", "shape": [128, 512]}],
        "ops": [{"name": "ynn_fusion.11", "shape": "f32[128,128]{1,0}", "note": "x y"}],
    }
    assert json_identifiers(doc) == {"params['w1']", "[128,512]", "ynn_fusion.11", "f32[128,128]"}
    assert json_paths(doc) == {"params['w1']"}
    assert_fits_json(" params['w1']  ynn_fusion.11  f32[128,128]\n", 80, doc)
    with pytest.raises(AssertionError, match="split across lines"):
        assert_fits_json(" ynn_fusion\n .11\n", 80, doc)
