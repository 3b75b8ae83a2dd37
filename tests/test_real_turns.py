"""Variants taking turns on Ray: a synchronous and an asynchronous variant, each block a checkpoint, every
iteration exactly once, each variant's clock stopped while the other runs, and --variants / --seeds for real."""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("ray", reason="ray is part of the [real] extra")

from typer.testing import CliRunner  # noqa: E402

from gcbench.cli import app  # noqa: E402
from gcbench.results import read_results  # noqa: E402

SCENARIO = """\
name: turns
workers: 4
iterations: 6
compute: {per_partition: {distribution: exponential, rate: 20}}
straggling: {model: independent, probability: 0.3, delay: 0.2}
variants:
  - {label: uncoded, scheme: uncoded, policy: wait_all}
  - {label: FR s=1, scheme: fr, s: 1}
  - {label: async, scheme: uncoded, policy: async}
training: {dataset: synthetic, batch_size: 32, device: cpu, eval_every: 3, checkpoint_every: 2}
"""


@pytest.mark.slow
def test_synchronous_and_asynchronous_variants_take_turns_on_ray(tmp_path, local_ray):
    path = tmp_path / "turns.yaml"
    path.write_text(SCENARIO)
    out = tmp_path / "out"
    done = CliRunner().invoke(app, ["run", str(path), "--out", str(out), "--variants", "uncoded,async"])
    assert done.exit_code == 0, done.output
    progress = re.findall(r"^(\w+), seed 0: (\d)/6 iterations, loss", done.output, re.MULTILINE)
    assert progress == [(v, str(k)) for k in (2, 4, 6) for v in ("uncoded", "async")]
    iterations, workers, meta = read_results(out)
    assert meta["status"] == "complete" and meta["iterations_planned"] == 12
    for _, frame in iterations.groupby("variant"):
        assert sorted(frame["iteration"]) == list(range(6))
        assert frame["start"].is_monotonic_increasing and frame["end"].is_monotonic_increasing
    # the clock stops while the other variant runs (its first turn alone starts 4 worker processes: seconds)
    synchronous = iterations[iterations["variant"] == "uncoded"].set_index("iteration")
    gaps = [synchronous.loc[t, "start"] - synchronous.loc[t - 1, "end"] for t in (2, 4)]
    assert max(gaps) < 1.0, gaps
    assert len(workers) == 12 * 4
    assert json.loads((out / "run.json").read_text())["scenario"]["variants"][1]["label"] == "async"
