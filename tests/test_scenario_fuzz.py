"""Fuzz: mutated scenarios end, with no traceback, accepted by both --check and simulate or refused by both.

Refused means exit code 2 and one line, ``error: ...``, the same from both
commands. The one outcome only a run can tell: with crashes for good
(``downtime: null``), whether too many workers die depends on the draws, so
``simulate`` may stop with "can never finish" after ``--check`` passed.
"""

from __future__ import annotations

import signal
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from gcbench.cli import app

runner = CliRunner()
HANG_SECONDS = 60

VALID = {
    "name": "fuzz",
    "workers": 4,
    "iterations": 3,
    "seeds": [0],
    "compute": {"per_partition": {"distribution": "shifted_exponential", "shift": 0.1, "rate": 10}},
    "straggling": {"model": "independent", "probability": 0.2, "slowdown": 3},
    "network": {"latency": 0.001, "bandwidth": 1e9},
    "variants": [{"scheme": "uncoded", "policy": "wait_all"}, {"scheme": "fr", "s": 1}],
}

PATHS = [
    "name", "workers", "iterations", "seeds", "seeds[0]", "description", "stale_work",
    "gradient.length", "gradient.dtype", "compute", "compute.per_partition", "compute.per_partition.rate",
    "compute.per_partition.shift", "compute.load", "compute.speeds", "compute.trace", "compute.trace.path",
    "straggling", "straggling.model", "straggling.probability", "straggling.slowdown", "straggling.delay",
    "straggling.workers", "failures", "failures.model", "failures.probability", "failures.rate", "failures.downtime",
    "network", "network.latency", "network.bandwidth", "network.shared_link", "variants", "variants[0]",
    "variants[1].scheme", "variants[1].s", "variants[1].m", "variants[1].seed", "variants[1].policy",
    "variants[1].policy.k", "variants[0].label", "sweep", "training", "training.learning_rate", "training.device",
]  # fmt: skip

NASTY_NUMBERS = [-1, 2**63, 2**64 + 1, 10**30, 1e-320, 1e-300, 1e308, float("inf"), float("nan")]
NASTY_TEXT = ["", "../up", "/abs/path", "a/b", "cuda:9"]
WORDS = ["none", "independent", "markov", "fixed", "crash", "wait_all", "decodable", "async", "fr", "cr"]
WORDS += ["cyclic_mds", "cce_cr", "cce_fr", "ignore_stragglers", "scale", "sum", "finish", "float16", "cpu", "x"]
plausible = st.integers(0, 6) | st.floats(0, 5) | st.sampled_from(WORDS + [None, True, False])
scalars = plausible | st.sampled_from(NASTY_NUMBERS + NASTY_TEXT)
SECTIONS = [
    {"model": "markov", "enter": 0.1, "leave": 0.5, "delay": 0.2},
    {"model": "fixed", "workers": [0], "slowdown": 2},
    {"model": "crash", "probability": 0.1, "downtime": 0.3},
    {"model": "crash", "rate": 0.5, "downtime": None},
    {"name": "fastest_k", "k": 3},
    {"name": "deadline", "deadline": 0.2, "fallback": "approximate"},
    {"name": "k_batch_async", "k": 6},
    {"scheme": "cce_cr", "s": 1, "m": 2},
    {"distribution": "mixture", "components": [{"weight": 1, "of": {"distribution": "exponential", "rate": 5}}]},
]
distributions = st.fixed_dictionaries(
    {
        "distribution": st.sampled_from(
            ["deterministic", "exponential", "pareto", "lognormal", "weibull", "empirical", "mixture"]
        ),
    },
    optional={"value": scalars, "rate": scalars, "scale": scalars, "shape": scalars, "mu": scalars, "sigma": scalars,
              "samples": st.lists(scalars, max_size=3)},
)  # fmt: skip
KEYS = st.sampled_from(["model", "k", "name", "x"])
values = st.recursive(
    scalars | distributions | st.sampled_from(SECTIONS),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=2),
    max_leaves=6,
)
sweeps = st.dictionaries(st.sampled_from(PATHS), st.lists(values, min_size=0, max_size=3), max_size=2)


@st.composite
def mutated(draw) -> dict:
    data = yaml.safe_load(yaml.safe_dump(VALID))
    for _ in range(draw(st.integers(1, 2))):
        path = draw(st.sampled_from(PATHS))
        value = draw(sweeps if path == "sweep" else plausible if draw(st.booleans()) else values)
        set_in(data, path, value)
    return data


def set_in(data: dict, path: str, value) -> None:
    """Set a dotted path where it can go; a path through a scalar is left alone (the mutation misses)."""
    parts = [int(p) if p.isdigit() else p for p in path.replace("[", ".").replace("]", "").split(".")]
    node = data
    for part in parts[:-1]:
        if isinstance(part, int):
            if not isinstance(node, list) or part >= len(node):
                return
            node = node[part]
        else:
            if not isinstance(node, dict):
                return
            node = node.setdefault(part, {})
    last = parts[-1]
    if isinstance(last, int) and isinstance(node, list) and last < len(node):
        node[last] = value
    elif isinstance(last, str) and isinstance(node, dict):
        node[last] = value


def outcome(args: list[str]) -> tuple[int, str]:
    def hang(signum, frame):
        raise TimeoutError(f"gcbench {' '.join(args)} ran past {HANG_SECONDS} s")

    previous = signal.signal(signal.SIGALRM, hang)
    signal.alarm(HANG_SECONDS)
    try:
        result = runner.invoke(app, args)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception  # a traceback: the test fails with it
    return result.exit_code, result.stderr


@pytest.mark.slow
@settings(max_examples=300)
@given(data=mutated())
@example(data=VALID)
@example(data={**VALID, "failures": {"model": "crash", "probability": 1.0}})
@example(data={**VALID, "seeds": [2**64]})
@example(data={**VALID, "sweep": {"network": [{}]}})
@example(data={**VALID, "sweep": {"straggling.slowdwn": [2]}, "straggling": {"model": "none"}})
@example(data={**VALID, "compute": {"per_partition": {"distribution": "deterministic", "value": 1e308}}})
@example(data={**VALID, "network": {"bandwidth": 1e-300}})
@example(data={**VALID, "name": "../up"})
@example(data={**VALID, "workers": 4096, "variants": [{"scheme": "cyclic_mds", "s": 1}]})
def test_mutated_scenarios_are_accepted_or_refused_alike(data):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "s.yaml"
        path.write_text(yaml.safe_dump(data, allow_unicode=True))
        out = str(Path(folder) / "out")
        checked, check_error = outcome(["simulate", "--check", str(path)])
        ran, run_error = outcome(["simulate", str(path), "--out", out, "--jobs", "1"])
    assert checked in (0, 2) and ran in (0, 2)
    for code, error in ((checked, check_error), (ran, run_error)):
        if code == 2:
            assert error.startswith("error: ") and error.count("\n") == 1, error
    if checked == 0 and ran == 2:
        assert "can never finish" in run_error and data.get("failures", {}).get("downtime") is None, run_error
        return
    assert checked == ran, (check_error, run_error)
    assert check_error == run_error
