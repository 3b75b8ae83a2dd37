"""A scheme owns its parameters: scenarios, `gcbench schemes` and the conformance suite read them from the class.

A toy scheme registered here (and only here) proves that adding a scheme needs its
module and the registry, nothing in the schema, the CLI or the test tables.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from gcbench.cli import app
from gcbench.coding import Layout, _registry, make_scheme
from gcbench.coding.fractional_repetition import FractionalRepetition, divisors
from gcbench.scenario.build import scheme_for
from gcbench.scenario.loading import ScenarioError, validate
from gcbench.testing import check_decode_exact, partition_gradients, valid_parameter_sets

runner = CliRunner()


class ScaledRepetition(FractionalRepetition):
    """Fractional repetition whose messages are scaled by ``gain`` (a parameter no built-in scheme has).

    - tolerates: any s stragglers (needs (s+1) | n)
    - load: s + 1 partitions per worker
    - upload: 1 gradient per worker
    - decoding: one message per group, divided by the gain
    - reference: a test double for tests/test_scheme_declared_params.py
    """

    name = "scaled_fr"
    reference = "test double"
    defaults = {"gain": 1.0}
    hypothesis_max_n = 6

    @classmethod
    def valid_parameter_sets(cls, n: int) -> list[tuple[int, dict[str, Any]]]:
        return [(g - 1, {"gain": 2.5}) for g in divisors(n)]

    def _layout(self) -> Layout:
        plain = super()._layout()
        scaled = tuple(tuple(c * self.params["gain"] for c in per) for per in plain.coefficients)
        return Layout(plain.partitions, scaled)


@pytest.fixture
def toy_scheme(monkeypatch):
    monkeypatch.setitem(_registry._SCHEMES, ScaledRepetition.name, ScaledRepetition)
    return ScaledRepetition


def scenario(variant: dict) -> dict:
    return {
        "name": "toy",
        "workers": 4,
        "iterations": 2,
        "compute": {"per_partition": {"distribution": "exponential", "rate": 10}},
        "variants": [variant],
    }


def refusal(variant: dict) -> str:
    with pytest.raises(ScenarioError) as raised:
        validate(scenario(variant), "toy.yaml")
    return str(raised.value)


def test_a_variant_passes_any_parameter_its_scheme_declares(toy_scheme):
    sc = validate(scenario({"scheme": "scaled_fr", "s": 1, "gain": 3.0}), "toy.yaml")
    scheme = scheme_for(sc, sc.variants[0])
    assert scheme.params == {"gain": 3.0}
    assert np.abs(scheme.coefficients).max() == 3.0
    assert sc.variants[0].display_label() == "scaled_fr(s=1,gain=3.0)/decodable"


def test_a_parameter_the_scheme_does_not_declare_names_variant_parameter_and_what_it_takes(toy_scheme):
    assert refusal({"scheme": "scaled_fr", "s": 1, "m": 2}) == (
        "toy.yaml: variants[0].m: neither a variant field (label, scheme, s, policy, compression) nor a parameter of "
        "scaled_fr, which takes gain (default 1.0)."
    )
    assert (
        "variants[0].seed: neither a variant field (label, scheme, s, policy, compression) nor a parameter of fr, "
        "which " in (refusal({"scheme": "fr", "s": 1, "seed": 2}))
    )
    assert refusal({"scheme": "fr", "s": 1, "seed": 2}).endswith("which takes no parameters besides s.")


def test_a_declared_parameter_of_the_wrong_type_is_refused_in_one_sentence(toy_scheme):
    assert refusal({"scheme": "scaled_fr", "s": 1, "gain": "loud"}) == (
        "toy.yaml: variants[0]: The 'gain' parameter of scaled_fr must be a finite number. Got 'loud' instead."
    )


def test_built_in_parameters_still_come_through_the_variant():
    sc = validate(scenario({"scheme": "cr", "s": 1, "seed": 4}), "toy.yaml")
    assert scheme_for(sc, sc.variants[0]).params == {"seed": 4}
    assert refusal({"scheme": "cce_fr", "s": 1, "m": 0}) == (
        "toy.yaml: variants[0]: The 'm' parameter of cce_fr must be an int in [1, 4]. Got 0 instead."
    )


def test_gcbench_schemes_takes_a_new_schemes_parameter_from_the_registry(toy_scheme):
    result = runner.invoke(app, ["schemes", "scaled_fr", "--n", "4", "--s", "1", "--gain", "2"])
    assert result.exit_code == 0, result.output
    assert "make_scheme('scaled_fr', n=4, s=1, gain=2)" in result.output
    result = runner.invoke(app, ["schemes", "--help"])
    assert "--gain: scaled_fr (default 1.0)" in " ".join(result.output.split())


def test_the_conformance_suite_reads_test_parameters_from_the_scheme(toy_scheme):
    assert valid_parameter_sets("scaled_fr", 4) == [(0, {"gain": 2.5}), (1, {"gain": 2.5}), (3, {"gain": 2.5})]
    for s, params in valid_parameter_sets("scaled_fr", 4):
        scheme = make_scheme("scaled_fr", n=4, s=s, **params)
        check_decode_exact(scheme, range(s), partition_gradients(4, 3, np.random.default_rng(0)))


def test_a_null_parameter_is_the_schemes_default_as_older_run_files_write_it():
    sc = validate(scenario({"scheme": "fr", "s": 1, "m": None, "seed": None}), "toy.yaml")
    assert sc.variants[0].scheme_params() == {}
    assert scheme_for(sc, sc.variants[0]).params == {}
    assert sc.variants[0].display_label() == "fr(s=1)/decodable"
