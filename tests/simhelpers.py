"""Build scenarios in tests without YAML files."""

from __future__ import annotations

from typing import Any

import numpy as np

from gcbench.scenario.build import scheme_for
from gcbench.scenario.loading import SweepPoint
from gcbench.scenario.schema import Scenario
from gcbench.sim.synchronous import simulate_synchronous


def scenario(**fields: Any) -> Scenario:
    data = {"name": "test", "workers": 6, "iterations": 100, "variants": [{"scheme": "uncoded"}]}
    data["compute"] = {"per_partition": {"distribution": "exponential", "rate": 1.0}}
    data.update(fields)
    return Scenario.model_validate(data)


def point(**fields: Any) -> SweepPoint:
    return SweepPoint({}, scenario(**fields))


def durations(sc: Scenario, variant: int = 0, seeds: Any = (0,)) -> np.ndarray:
    """Iteration durations of one variant, pooled over seeds."""
    from gcbench.sim.asynchronous import simulate_asynchronous

    v = sc.variants[variant]
    engine = simulate_synchronous if v.policy.synchronous else simulate_asynchronous
    runs = [engine(sc, v, scheme_for(sc, v), seed) for seed in seeds]
    return np.concatenate([r.duration for r in runs])


def assert_mean_matches(samples: np.ndarray, expected: float, z: float = 4.5) -> None:
    """The sample mean lies within z standard errors of the closed form."""
    error = samples.std(ddof=1) / np.sqrt(len(samples))
    assert abs(samples.mean() - expected) <= z * error, (
        f"mean {samples.mean():.6f} vs closed form {expected:.6f} (standard error {error:.2e})"
    )


# a scenario file's smallest body, for tests of what `gcbench simulate --check` refuses in a field added to it
SMALL_SCENARIO = """\
name: t
workers: 4
iterations: 5
compute: {per_partition: {distribution: exponential, rate: 1}}
variants: [{scheme: uncoded}]
"""


def check_refusal(tmp_path, text: str) -> str:
    """The one line `gcbench simulate --check` prints to stderr for this scenario text, after checking it exits
    with code 2."""
    from typer.testing import CliRunner

    from gcbench.cli import app

    path = tmp_path / "s.yaml"
    path.write_text(text)
    done = CliRunner().invoke(app, ["simulate", "--check", str(path)])
    assert done.exit_code == 2 and done.stderr.count("\n") == 1, (done.output, done.stderr)
    return done.stderr
