"""The `topologies` report rendered: an 80-column table and JSON that follows its schema."""

from __future__ import annotations

import io
import json

import jsonschema
import pytest
from narrow import assert_readable
from rich.console import Console

from conftest import ROOT
from jaxinspect.topologies.console import render_topologies
from jaxinspect.topologies.jsondoc import render_topologies_json
from jaxinspect.topologies.report import SliceInfo, TopologiesReport

V5E = "Google Cloud TPU v5e documentation (https://cloud.google.com/tpu/docs/v5e): 16 GB"
REPORT = TopologiesReport(
    libtpu_version="0.0.42.1",
    slices=(
        SliceInfo("v4:2x2x1", 8, 4, "TPU v4", 32 * 1024**3, "tpu-v4", "TPU v4 docs"),
        SliceInfo("v5e:16x16", 256, 256, "TPU v5 lite", 16 * 10**9, "tpu-v5e", V5E),
        SliceInfo("v9:2x2", 4, 4, "TPU v9", None, None, "no built-in figure for 'TPU v9'"),
    ),
    refused=("v7:2x2x1",),
    sources=("https://cloud.google.com/tpu/docs/v4", "https://cloud.google.com/tpu/docs/v5e"),
)


def render(width: int) -> str:
    console = Console(width=width, file=io.StringIO(), color_system=None)
    console.print(render_topologies(REPORT))
    return console.file.getvalue()


@pytest.mark.parametrize("width", [60, 80, 120])
def test_the_table_fits_and_keeps_names_and_kinds_whole(width: int) -> None:
    out = render(width)
    assert_readable(out, width, ["v4:2x2x1", "v5e:16x16", "v7:2x2x1", "tpu-v5e"])
    assert "https://cloud.google.com/tpu/docs/v5e" in out.replace("\n", "")


def test_a_row_reads_devices_chips_and_hbm_per_chip_and_in_all() -> None:
    rows = {line.split()[0]: line.split() for line in render(80).splitlines() if line.strip()}
    assert rows["v5e:16x16"] == [
        "v5e:16x16", "256", "256", "TPU", "v5", "lite", "14.9", "GiB", "3.73", "TiB", "tpu-v5e"
    ]  # fmt: skip
    assert rows["v9:2x2"][-2:] == ["?", "?"]  # no figure for an unknown chip, said so
    assert "refused by this libtpu: v7:2x2x1" in render(80)


def test_json_follows_the_schema_and_carries_each_source() -> None:
    doc = json.loads(render_topologies_json(REPORT))
    schema = json.loads((ROOT / "jaxinspect/schemas/topologies.schema.json").read_text())
    jsonschema.validate(doc, schema)
    by_name = {t["name"]: t for t in doc["topologies"]}
    assert by_name["v5e:16x16"]["hbm_source"] == V5E
    assert by_name["v9:2x2"]["hbm_bytes_per_chip"] is None
    assert doc["sources"][1] == "https://cloud.google.com/tpu/docs/v5e"
