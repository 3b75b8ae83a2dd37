"""`gcbench compressors` lists every registered compressor from the registry; a scenario's compression field is
refused in one sentence with exit 2 when it is wrong, and a simulated run names its compression."""

from __future__ import annotations

import pandas as pd
import pytest
from test_cli_policies import row
from test_scenario_inputs import BASE, refused
from typer.testing import CliRunner

from gcbench.cli import app
from gcbench.compression import COMPRESSORS

runner = CliRunner()


def table() -> str:
    result = runner.invoke(app, ["compressors"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("name", COMPRESSORS.names())
def test_every_registered_compressor_is_listed_with_its_claims(name):
    compressor = COMPRESSORS.get(name)()
    listed = row(table(), name)
    yes = lambda flag: "yes" if flag else "no"  # noqa: E731
    bits = f"{compressor.bits_per_parameter(1_000_000):.3g}"
    assert listed.split()[1:2] != [] and bits in listed.split()
    claims = listed.split()[listed.split().index(bits) + 1 : listed.split().index(bits) + 4]
    assert claims == [yes(compressor.unbiased), yes(compressor.linear), yes(compressor.feedback)]
    assert "compress_cost" not in listed  # said once, below the table


def test_parameters_show_their_types_bounds_and_defaults():
    output = table()
    assert "levels: int >= 1 <= 127 (default 7)" in row(output, "qsgd")
    assert "ratio: float > 0 <= 1 (default 0.01)" in row(output, "topk")
    assert "compress_cost and decompress_cost" in output


@pytest.mark.parametrize(
    ("field", "message"),
    [
        ("compression: zip", "compression: unknown name 'zip'; expected one of 'none', 'fp16'"),
        ("compression: {name: topk, ratio: 0}", "compression.ratio: Input should be greater than 0."),
        ("compression: {name: fp16, levels: 3}", "compression.levels: unknown field (check its spelling and section)."),
        ("compression: {name: qsgd, compress_cost: -1}", "compression.compress_cost: Input should be greater than or"),
    ],
)
def test_a_wrong_compression_field_is_one_sentence(tmp_path, field, message):
    assert message in refused(tmp_path, BASE + field + "\n")


def test_a_variant_s_compression_allreduce_cannot_run_is_one_sentence(tmp_path):
    text = BASE.replace(
        "variants: [{scheme: uncoded}]", "variants: [{scheme: uncoded, policy: allreduce, compression: qsgd}]"
    )
    # (simulate refuses allreduce anyway; the compression's sentence comes first, from the scenario's checks)
    assert "variants[0].compression: allreduce (DistributedDataParallel) has no form of qsgd" in refused(tmp_path, text)


def test_a_simulated_run_labels_each_variant_with_its_compression(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(BASE.replace("variants: [{scheme: uncoded}]", "variants: [{scheme: uncoded}, {scheme: cr, s: 1}]")
                    + "compression: {name: qsgd, levels: 3}\nnetwork: {bandwidth: 1.0e+8}\n")  # fmt: skip
    done = runner.invoke(app, ["simulate", str(path), "--out", str(tmp_path / "o")])
    assert done.exit_code == 0, done.output
    iterations = pd.read_parquet(next((tmp_path / "o").rglob("iterations.parquet")))
    assert sorted(iterations["variant"].unique()) == [
        "cr(s=1)/decodable/qsgd(levels=3)",
        "uncoded/decodable/qsgd(levels=3)",
    ]
