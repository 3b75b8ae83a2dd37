"""The compression figure: accuracy against time and against the megabits received, a panel per scheme, a colour
per compressor; drawn only where a trained run compared compressors; run.json names each variant's compressor."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from gcbench.cli import app
from gcbench.plot.compression import MEGABIT, compression_curves, variant_compressors
from gcbench.results.metadata import run_metadata
from gcbench.results.store import write_results
from gcbench.scenario.loading import load_scenario

COMPRESSORS = {"uncoded": "none", "uncoded topk": "topk", "FR": "none", "FR topk": "topk(ratio=0.1)"}
PAYLOAD = {"none": 4000.0, "topk": 80.0, "topk(ratio=0.1)": 800.0}


def trained_rows(points: int = 1) -> pd.DataFrame:
    """Hand-made iterations of four trained variants (two schemes, two compressors each) at each sweep point."""
    frames = []
    for point in range(points):
        for label, compressor in COMPRESSORS.items():
            scheme, s = ("uncoded", 0) if label.startswith("uncoded") else ("fr", 1)
            used = 4 if scheme == "uncoded" else 3
            duration = np.full(10, 0.1 * (point + 1))
            accuracy = np.where(np.arange(10) % 5 == 4, np.linspace(0.2, 0.9, 10), np.nan)
            frames.append(pd.DataFrame({
                "variant": label, "scheme": scheme, "s": s, "m": 1, "policy": "decodable", "point": point,
                "network.bandwidth": 1e9 / 10**point, "seed": 0, "iteration": np.arange(10),
                "end": np.cumsum(duration), "messages_used": used, "bytes_received": used * PAYLOAD[compressor],
                "loss": 1.0, "accuracy": accuracy,
            }))  # fmt: skip
    return pd.concat(frames, ignore_index=True)


def test_a_panel_per_scheme_a_row_per_sweep_point_and_one_against_the_megabits_received():
    fig = compression_curves(trained_rows(points=2), COMPRESSORS, "sim", target=0.5)
    axes = np.array(fig.axes[:6]).reshape(3, 2)
    assert [ax.get_title() for ax in axes[0]] == ["uncoded", "fr, s = 1"]
    assert "network.bandwidth = 1e+08" in axes[1, 0].get_ylabel() and axes[2, 0].get_xscale() == "log"
    lines = {line.get_label(): line for line in axes[2, 1].get_lines() if not line.get_label().startswith("_")}
    assert set(lines) == {"none", "topk(ratio=0.1)"}
    x, y = lines["topk(ratio=0.1)"].get_data()
    np.testing.assert_allclose(x, 3 * 800.0 * np.array([5, 10]) / MEGABIT)  # cumulative, where it evaluated
    np.testing.assert_allclose(y, np.linspace(0.2, 0.9, 10)[[4, 9]])
    # one colour per compressor, the same in every panel
    colours = {line.get_label(): line.get_color() for ax in axes.ravel() for line in ax.get_lines()}
    assert len({colours["none"], colours["topk"], colours["topk(ratio=0.1)"]}) == 3
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["none", "topk", "topk(ratio=0.1)", "target 50%"]


@pytest.mark.parametrize("change", ["one compressor", "no accuracy", "no bytes", "an earlier run"])
def test_it_is_not_drawn_without_two_compressors_accuracy_and_bytes(change):
    rows, compressors = trained_rows(), dict(COMPRESSORS)
    if change == "one compressor":
        compressors = dict.fromkeys(COMPRESSORS, "fp16")
    elif change == "no accuracy":
        rows["accuracy"] = np.nan
    elif change == "no bytes":
        rows["bytes_received"] = np.nan
    else:
        compressors = variant_compressors({"mode": "sim"})  # run.json without the map: every variant "none"
    assert compression_curves(rows, compressors) is None


def test_run_json_names_each_variant_s_compressor(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(
        "name: c\nworkers: 4\niterations: 5\ncompute: {per_partition: {distribution: exponential, rate: 10}}\n"
        "compression: {name: topk, ratio: 0.05}\nvariants:\n"
        "  - {scheme: fr, s: 1}\n  - {label: plain, scheme: uncoded, policy: wait_all, compression: none}\n"
    )
    meta = run_metadata("sim", path, load_scenario(path), {})
    assert meta["compression"] == {"fr(s=1)/decodable/topk(ratio=0.05)": "topk(ratio=0.05)", "plain": "none"}
    assert variant_compressors(json.loads(json.dumps(meta))) == meta["compression"]


def test_gcbench_plot_draws_it_and_refuses_a_damaged_map_in_one_sentence(tmp_path):
    run = tmp_path / "c-sim"
    meta = {"mode": "sim", "scenario": {"name": "c"}, "compression": COMPRESSORS}
    rows = trained_rows().drop(columns="network.bandwidth")
    rows["start"], rows["duration"], rows["stop"] = rows["end"] - 0.1, 0.1, "decodable"
    rows["exact"], rows["residual"], rows["staleness"] = True, 0.0, 0.0
    write_results(run, rows, None, meta)
    done = CliRunner().invoke(app, ["plot", str(run), "--out", str(tmp_path / "figures")])
    assert done.exit_code == 0, done.output
    assert (tmp_path / "figures" / "c-sim-compression.png").is_file()
    (run / "run.json").write_text(json.dumps({**meta, "compression": ["topk"]}))
    done = CliRunner().invoke(app, ["plot", str(run), "--out", str(tmp_path / "figures")])
    assert done.exit_code == 2
    assert "'compression' must be an object naming each variant's compressor" in done.output
